import json

import numpy as np
import pytest

from compiler import compile as compile_cli
from engines import parity
from engines.registry import engine_class
from engines.store import open_artifact


@pytest.mark.parametrize("task, backend", [("pair-classification", "onnx"), ("pair-classification", "torch"),
                                           ("embedding", "onnx"), ("text-classification", "onnx")])
def test_compiled_artifact_records_parity_and_verifies(compile_artifact, task, backend):
    folder = compile_artifact(task, backend)
    m = open_artifact(folder)
    assert (m.task, m.backend, m.name, m.version, m.max_seq_len) == (task, backend, f"tiny-{task}", "7", 256)
    assert m.parity["passed"] is True and m.parity["probe_rows"] > 10
    if task == "embedding":
        assert m.parity["min_cosine"] >= 0.9999 and m.output == "sentence_embedding" and m.pooling == "mean"
    else:
        assert m.parity["max_abs_diff"] <= 1e-4 and m.output == "logits"
    assert "tokenizer/tokenizer.json" in m.files and m.untrained_head == ()
    assert m.buckets[-1][1] == 256 and all(b * s <= 4096 for b, s in m.buckets)


def test_pair_artifact_labels_and_positive_label(compile_artifact):
    m = open_artifact(compile_artifact("pair-classification"))
    assert m.labels == ("different", "duplicate") and m.positive_label == 1


def test_engine_agrees_with_transformers_through_our_tokenizer(compile_artifact, tiny_models):
    import torch
    from transformers import AutoModelForSequenceClassification

    from engines.base import Device
    from engines.tasks import task
    from udfs.model_outputs import run_units, tokenize_units
    from udfs.unit_values import from_outputs
    from udfs.runtime import ScorerSpec, load_runtime

    folder = compile_artifact("pair-classification")
    m = open_artifact(folder)
    runtime = load_runtime(ScorerSpec(str(folder), m.digest, "onnx", 512, 64), Device(), 1)
    left = ["usb-c charger 65w", "Apple iPhone 15 Pro 256GB " * 10, "中文"]
    right = ["65 watt usb c charger", "iphone 15 pro", "🌟"]
    scored = run_units(runtime, tokenize_units(runtime, [[left, right]]), token_budget=512)
    got = from_outputs(task(m.task), scored.outputs[0], np.ones(3, dtype=bool), m, {})["score"]
    model = AutoModelForSequenceClassification.from_pretrained(tiny_models["pair-classification"]).eval()
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(tiny_models["pair-classification"])
    with torch.no_grad():
        ref = torch.softmax(model(**tok(left, right, truncation=True, max_length=64, padding=True, return_tensors="pt")).logits, -1)[:, 1]
    assert np.abs(got - ref.numpy()).max() < 1e-5


def test_failed_parity_writes_nothing_and_exits_1(tiny_models, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(parity.LOGITS_ATOL, "fp32", -1.0)
    out = tmp_path / "never"
    rc = compile_cli.main(["--model", str(tiny_models["pair-classification"]), "--task", "pair-classification",
                           "--out", str(out)])
    assert rc == 1 and not out.exists()
    assert "failed parity against transformers" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # the work folder is cleaned up too


@pytest.mark.parametrize("task", ["pair-classification", "text-classification"])
def test_encoder_without_a_head_is_refused_as_a_classifier(tiny_models, tmp_path, capsys, task):
    """A bare BertModel would get a random head and pass parity against it: refused, exit 1."""
    out = tmp_path / "never"
    assert compile_cli.main(["--model", str(tiny_models["embedding"]), "--task", task, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"has no trained {task} head" in err and "classifier.bias, classifier.weight" in err
    assert "--allow-untrained-head" in err
    assert list(tmp_path.iterdir()) == []


def test_allow_untrained_head_records_it_and_the_job_warns_once(tiny_models, tmp_path, capsys):
    from jobs import runner
    from jobs.cli import common_parser, config_from
    from udfs.workloads import Duplicates

    out = tmp_path / "smoke"
    assert compile_cli.main(["--model", str(tiny_models["embedding"]), "--task", "pair-classification",
                             "--out", str(out), "--allow-untrained-head"]) == 0
    assert "randomly initialised head (classifier.bias, classifier.weight)" in capsys.readouterr().err
    assert json.loads((out / "manifest.json").read_text())["untrained_head"] == ["classifier.bias", "classifier.weight"]
    m = open_artifact(out)
    assert m.untrained_head == ("classifier.bias", "classifier.weight") and m.parity["passed"] is True
    args = common_parser("duplicates.py", "").parse_args(
        ["--input", str(tmp_path / "in.parquet"), "--output", str(tmp_path / "o"), "--model", str(out)])
    runner.open_model(config_from(args, {}), Duplicates())
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "--allow-untrained-head" in err and "classifier.weight" in err


def test_bad_arguments_exit_2(tiny_models, tmp_path, capsys):
    assert compile_cli.main(["--model", str(tmp_path), "--task", "embedding", "--out", str(tmp_path / "x")]) == 2
    assert "not a Hugging Face model folder" in capsys.readouterr().err
    labels = tmp_path / "labels.txt"
    labels.write_text("a\nb\nc\n")
    assert compile_cli.main(["--model", str(tiny_models["pair-classification"]), "--task", "pair-classification",
                             "--labels-file", str(labels), "--out", str(tmp_path / "y")]) == 2
    assert "has 3 labels, the model outputs 2" in capsys.readouterr().err


def test_parse_buckets():
    assert compile_cli.parse_buckets("32x128, 64x64") == [(64, 64), (32, 128)]
    with pytest.raises(Exception, match="must look like"):
        compile_cli.parse_buckets("64by64")
    assert compile_cli.default_buckets(100) == [(128, 32), (64, 64), (40, 100)]


def test_torch_artifact_runs_on_torch_engine_only(compile_artifact):
    from engines.errors import ArtifactError
    from engines.registry import resolve_backend

    folder = compile_artifact("pair-classification", "torch")
    m = open_artifact(folder)
    assert m.backend == "torch" and resolve_backend("auto", m) == "torch"
    with pytest.raises(ArtifactError, match="compiled for backend 'torch'"):
        resolve_backend("onnx", m)
    engine = engine_class("torch")(folder, m).load()
    ids = np.array([[101, 2000, 102, 0]])
    out = engine.infer({"input_ids": ids, "attention_mask": (ids > 0).astype(int), "token_type_ids": ids * 0})
    assert out.shape == (1, 2)
    assert json.loads((folder / "manifest.json").read_text())["target"]["runtime"] == "torch"


def test_manifests_from_before_the_rename_say_torchscript_and_still_run(compile_artifact, artifact_copy):
    from engines.registry import resolve_backend

    folder = artifact_copy(compile_artifact("pair-classification", "torch"))
    raw = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**raw, "backend": "torchscript"}))
    m = open_artifact(folder)
    assert m.backend == "torch" and resolve_backend("auto", m) == "torch"


def test_out_that_is_not_an_artifact_is_never_replaced(tiny_models, compile_artifact, artifact_copy, tmp_path, capsys):
    """The artifact replaces --out whole: a folder of other files (a mistyped path, the data) must survive."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "pairs.parquet").write_bytes(b"not to be lost")
    (tmp_path / "a-file").write_text("kept")
    base = ["--model", str(tiny_models["embedding"]), "--task", "embedding"]
    for out, says in ((data, "holds files but no manifest.json"), (tmp_path / "a-file", "is a file")):
        assert compile_cli.main(base + ["--out", str(out)]) == 2
        assert says in capsys.readouterr().err
    assert (data / "pairs.parquet").read_bytes() == b"not to be lost" and (tmp_path / "a-file").read_text() == "kept"
    earlier = artifact_copy(compile_artifact("embedding"))
    (tmp_path / "empty").mkdir()
    for out in (earlier, tmp_path / "empty"):  # an earlier artifact, or an empty folder: replaced
        assert compile_cli.main(base + ["--out", str(out)]) == 0
        assert (out / "manifest.json").is_file()


@pytest.mark.parametrize("command", ["compiler", "engines.compile"])
def test_the_compile_command_under_its_name_and_its_old_one(tmp_path, command):
    """`python -m engines.compile` (the name before the toolchain left engines/) still compiles:
    it reaches a refusal of compile's own, with compile's exit code."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", command, "--model", str(tmp_path), "--task", "embedding",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "is not a Hugging Face model folder (no config.json)" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()
