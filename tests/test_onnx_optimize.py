"""BERT fusion and the int8 parity gate (compiler/onnx_optimize.py, engines/parity.py), on tiny BERTs."""
import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest

from compiler import compile as compile_cli
from compiler import onnx_optimize
from engines import parity, probes
from engines.registry import engine_class
from engines.store import open_artifact


def _compile(model: Path, out: Path, task: str, *flags: str) -> int:
    return compile_cli.main(["--model", str(model), "--task", task, "--out", str(out), "--name", "tiny", *flags])


def _ops(folder: Path) -> set[str]:
    return {n.op_type for n in onnx.load(str(folder / "model.onnx")).graph.node}


def _feed(seed: int = 0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 5000, (5, 24))
    mask = np.ones_like(ids)
    mask[2, 10:] = 0
    mask[4, 3:] = 0
    types = np.zeros_like(ids)
    types[:, 12:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types * mask}


def _run(folder: Path, feed) -> np.ndarray:
    with engine_class("onnx")(folder, open_artifact(folder)) as engine:
        return engine.infer(feed)


@pytest.mark.parametrize("task", ["pair-classification", "embedding", "text-classification"])
def test_fusion_fuses_every_layer_and_keeps_parity(compile_artifact, task):
    fused = compile_artifact(task, optimize="fusion")
    plain = compile_artifact(task, optimize="none")
    m = open_artifact(fused)
    assert m.target["graph"] == "fused-bert" and m.parity["passed"] is True
    assert m.target["fused_ops"]["Attention"] == 2 and m.target["fused_ops"]["SkipLayerNormalization"] == 4
    assert {"Attention", "SkipLayerNormalization", "EmbedLayerNormalization"} <= _ops(fused)
    assert open_artifact(plain).target["graph"] == "plain" and "Attention" not in _ops(plain)
    np.testing.assert_allclose(_run(fused, _feed()), _run(plain, _feed()), atol=1e-4)


def test_compile_fuses_by_default(compile_artifact):
    assert open_artifact(compile_artifact("embedding")).target["graph"] == "fused-bert"


def test_classic_forward_is_the_same_model_and_is_undone(tiny_models):
    import torch

    from compiler.export import example_inputs, load_reference

    module, _ = load_reference(tiny_models["pair-classification"], "pair-classification")
    x = example_inputs(3, 12)
    with torch.no_grad():
        ref = module(*x)
        with onnx_optimize.classic_bert(module):
            classic = module(*x)
        after = module(*x)
    assert torch.allclose(ref, classic, atol=1e-5) and torch.equal(ref, after)
    assert "forward" not in vars(onnx_optimize.bert_models(module)[0])


@pytest.fixture(scope="module")
def relu_bert(tmp_path_factory, minilm_dir):
    from transformers import AutoTokenizer, BertConfig, BertModel

    folder = tmp_path_factory.mktemp("relu-bert")
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, hidden_act="relu")
    BertModel(config).eval().save_pretrained(folder)
    AutoTokenizer.from_pretrained(minilm_dir).save_pretrained(folder)
    return folder


def test_a_model_fusion_does_not_cover_is_exported_plain_under_auto_and_refused_under_fusion(relu_bert, tmp_path, capsys):
    assert _compile(relu_bert, tmp_path / "auto", "embedding") == 0
    m = open_artifact(tmp_path / "auto")
    assert m.target["graph"] == "plain" and "hidden_act 'relu'" in m.target["fusion_skipped"]
    assert _compile(relu_bert, tmp_path / "strict", "embedding", "--optimize", "fusion") == 1
    assert "hidden_act 'relu'" in capsys.readouterr().err and not (tmp_path / "strict").exists()


@pytest.mark.parametrize("optimize", ["fusion", "none"])
def test_quantize_int8_keeps_narrowing_projections_in_fp32(compile_artifact, tmp_path, optimize):
    src = compile_artifact("embedding", optimize=optimize) / "model.onnx"
    settings = onnx_optimize.quantize_int8(src, tmp_path / "int8.onnx")
    graph = onnx.load(str(tmp_path / "int8.onnx")).graph
    inits = {t.name: onnx.numpy_helper.to_array(t).shape for t in graph.initializer}
    ops = [n.op_type for n in graph.node]
    float_weights = [inits[n.input[1]] for n in graph.node if n.op_type == "MatMul" and n.input[1] in inits]
    layers = 2  # the tiny BERT's
    # the FFN output projection of each layer (intermediate -> hidden) stays fp32, nothing else
    assert settings["kept_fp32"] == layers and len(float_weights) == layers
    assert all(k > n for k, n in float_weights)
    assert ops.count("MatMulInteger") + ops.count("DynamicQuantizeMatMul") >= 2 * layers
    assert "DynamicQuantizeLinear" in ops or "DynamicQuantizeMatMul" in ops
    assert ("Attention" in ops) == (optimize == "fusion")  # the fused QKV is not quantized


def _gate_rows(tmp_path: Path) -> Path:
    rows = probes.scored_rows("embedding")
    path = tmp_path / "gate.parquet"
    pd.DataFrame({"left": [a for a, _ in rows], "right": [b for _, b in rows]}).to_parquet(path)
    return path


def test_int8_gate_reads_the_jobs_own_input(tiny_models, tmp_path, monkeypatch):
    """--parity-data as the duplicates job reads it: pair_id, left_/right_<field>, --fields, --input-format."""
    monkeypatch.setattr(onnx_optimize, "quantize_int8",
                        lambda src, dst: shutil.copy(src, dst) and {"method": "copy"})
    rows = probes.scored_rows("embedding")
    job_input = tmp_path / "pairs.data"  # no telling suffix: --input-format says what it is
    pd.DataFrame({"pair_id": range(len(rows)), "left_name": [a for a, _ in rows],
                  "right_name": [b for _, b in rows]}).to_json(job_input, orient="records", lines=True)
    out = tmp_path / "ok"
    assert _compile(tiny_models["embedding"], out, "embedding", "--precision", "int8", "--parity-data",
                    str(job_input), "--input-format", "jsonl", "--fields", "name") == 0
    assert open_artifact(out).parity["score_rows"] == len(rows)


def test_int8_gate_passes_a_faithful_artifact(tiny_models, tmp_path, monkeypatch):
    # A stand-in "quantizer" that keeps fp32 weights: the gate must accept it, as int8.
    monkeypatch.setattr(onnx_optimize, "quantize_int8",
                        lambda src, dst: shutil.copy(src, dst) and {"method": "copy"})
    out = tmp_path / "ok"
    assert _compile(tiny_models["embedding"], out, "embedding", "--precision", "int8", "--parity-data",
                    str(_gate_rows(tmp_path))) == 0
    m = open_artifact(out)
    assert m.precision == "int8" and m.parity["passed"] is True and m.parity["label_agreement"] == 1.0
    assert m.parity["score_rows"] == len(probes.scored_rows("embedding"))
    assert m.parity["score_tolerance"] == {"label_agreement": 0.99, "p99_score_diff": 0.02}


def _perturbing_quantizer(scale: float):
    """Writes the fp32 graph with its last weight matrix (the head) scaled: a quantizer gone wrong."""
    def quantize(src, dst):
        model = onnx.load(str(src))
        inits = {t.name: t for t in model.graph.initializer}
        weights = [n.input[1] for n in model.graph.node if n.op_type in ("MatMul", "Gemm") and n.input[1] in inits]
        init = inits[weights[-1]]
        arr = onnx.numpy_helper.to_array(init) * scale
        init.CopyFrom(onnx.numpy_helper.from_array(arr.astype(np.float32), init.name))
        onnx.save(model, str(dst))
        return {"method": "perturbed"}
    return quantize


@pytest.fixture(scope="module")
def sharp_models(tiny_models, tmp_path_factory):
    """The tiny classifiers with a 200x head: random tiny BERTs give near-constant probabilities,
    which no perturbation can move past a tolerance; these have decided labels."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    out = {}
    for task in ("pair-classification", "text-classification"):
        model = AutoModelForSequenceClassification.from_pretrained(tiny_models[task])
        with torch.no_grad():
            model.classifier.weight.mul_(200.0)
        folder = tmp_path_factory.mktemp(f"sharp-{task}")
        model.save_pretrained(folder)
        AutoTokenizer.from_pretrained(tiny_models[task]).save_pretrained(folder)
        out[task] = folder
    return out


@pytest.mark.parametrize("task", ["pair-classification", "text-classification"])
def test_int8_gate_refuses_a_bad_artifact_and_writes_nothing(sharp_models, tmp_path, monkeypatch, capsys, task):
    monkeypatch.setattr(onnx_optimize, "quantize_int8", _perturbing_quantizer(-1.0))
    out = tmp_path / "bad"
    assert _compile(sharp_models[task], out, task, "--precision", "int8") == 1
    err = capsys.readouterr().err
    assert "failed parity against transformers" in err
    record = json.loads(err.split("transformers: ", 1)[1].strip())
    assert record["passed"] is False and record["precision"] == "int8"
    assert record["label_agreement"] < 0.99 or record["p99_score_diff"] > 0.02
    assert not out.exists()


def test_int8_is_opt_in_and_onnx_only(tiny_models, compile_artifact, tmp_path, capsys):
    assert open_artifact(compile_artifact("embedding")).precision == "fp32"
    assert _compile(tiny_models["embedding"], tmp_path / "ts", "embedding", "--backend", "torch",
                    "--precision", "int8") == 2
    assert "--precision int8 is not available for --backend torch" in capsys.readouterr().err


def test_parity_data_needs_the_task_columns(tiny_models, tmp_path, capsys):
    bad = tmp_path / "rows.csv"
    pd.DataFrame({"text": ["a", "b"]}).to_csv(bad, index=False)
    assert _compile(tiny_models["embedding"], tmp_path / "x", "embedding", "--precision", "int8",
                    "--parity-data", str(bad)) == 2
    err = capsys.readouterr().err
    assert "needs the duplicates job's left_<field>/right_<field> columns for --fields title,brand,description" in err


def test_score_check_needs_enough_rows():
    with pytest.raises(ValueError, match="at least 200 rows"):
        parity.score_check(None, None, None, "embedding", "int8", 64, rows=[("a", "b")] * 10)


def test_scored_rows_are_deterministic_and_enough():
    for task in ("embedding", "pair-classification", "text-classification"):
        rows = probes.scored_rows(task)
        assert rows == probes.scored_rows(task) and len(rows) >= parity.MIN_SCORE_ROWS
