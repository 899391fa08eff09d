"""The GPU device check (bench/device_check.sh + bench/device_check.py), exercised on the CPU:
its shell syntax, its preflight line, its figures, and its whole Python flow with --backend
onnx. What it measures on a GPU is not tested here (no GPU in these runs)."""
import json
import subprocess
import sys
from pathlib import Path

from bench import device_check as dc

ROOT = Path(__file__).resolve().parent.parent


def test_script_is_valid_bash_and_executable():
    script = ROOT / "bench" / "device_check.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert script.stat().st_mode & 0o111


def test_the_check_uses_the_production_parity_gate():
    """A gate of its own would let the first GPU run pass a plan that production refuses."""
    assert not [name for name in vars(dc) if name.startswith("GATE_")]
    assert "parity.score_check(" in (ROOT / "bench" / "device_check.py").read_text()


def test_preflight_says_in_one_line_what_is_missing_and_how_to_install_it(monkeypatch, capsys):
    import torch

    monkeypatch.setitem(sys.modules, "tensorrt", None)  # import tensorrt -> ImportError
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert dc.main(["--preflight"]) == 2
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("device check cannot run: tensorrt is not importable")
    assert "pip install 'tensorrt-cu12>=10.4,<12'" in out and "NVIDIA's own package index, not PyPI" in out
    assert "torch.cuda.is_available() is False" in out and "CUDA build of torch" in out


def test_figures_summarise_a_model():
    stages = {"engine_first_load": {"load_seconds": 50.0, "plan_source": "built", "gpu_memory_used_mib": 300.5},
              "engine_second_load": {"load_seconds": 2.5, "plan_source": "cache"},
              "parity_vs_transformers": {"passed": True, "label_agreement": 1.0, "p99_score_diff": 0.002},
              "throughput_seq128": {"engine": [{"batch": 32, "rows_per_second": 900.0}]},
              "job_seq128": {"rows_per_second": 400.0}}
    assert dc.figures(stages) == {
        "build_seconds": 47.5, "parity_passed": True, "label_agreement": 1.0, "p99_score_diff": 0.002,
        "engine_rows_per_second_seq128": {"32": 900.0}, "job_rows_per_second_seq128": 400.0,
        "gpu_memory_mib_per_engine": 300.5}
    assert dc.figures({})["build_seconds"] is None


def test_model_shapes_and_generated_pairs():
    config = dc.bert_config(dc.BERT_BASE)
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads, config.intermediate_size) == \
        (768, 12, 12, 3072)
    left, right = dc.make_pairs(50, seed=1)
    assert (left, right) == dc.make_pairs(50, seed=1) and len(left) == len(right) == 50
    long_left, _ = dc.make_pairs(5, seed=1, min_words=150, max_words=200)
    assert min(len(t.split()) for t in long_left) >= 150  # every row exceeds 128 tokens


def test_stage_records_errors_and_budget(tmp_path):
    results = dc.Results(tmp_path / "r.json")
    results.stage("m", "boom", lambda: 1 / 0, deadline=float("inf"))
    results.stage("m", "late", lambda: {"x": 1}, deadline=0)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["models"]["m"]["boom"]["error"].startswith("ZeroDivisionError")
    assert doc["models"]["m"]["late"] == {"skipped": "time budget used up"}
    assert doc["errors"] == ["m/boom: ZeroDivisionError: division by zero"]


def test_whole_flow_on_the_cpu_with_onnx_runtime(compile_artifact, tiny_models, tmp_path):
    artifact = compile_artifact("pair-classification", "tensorrt")
    rc = dc.main(["--out", str(tmp_path), "--backend", "onnx", "--tiny", "--models", "tiny",
                  "--artifact", str(artifact), "--hf-dir", str(tiny_models["pair-classification"]),
                  "--rows", "200", "--batches", "2", "--seconds", "0.2", "--job-rows", "0"])
    doc = json.loads((tmp_path / "device_check.json").read_text())
    assert rc == 0 and doc["passed"] is True and doc["errors"] == []
    tiny = doc["models"]["tiny"]
    assert tiny["parity_vs_transformers"]["score_rows"] == 200
    assert tiny["parity_vs_transformers"]["label_agreement"] == 1.0
    figures = doc["figures"]["tiny"]
    assert figures["parity_passed"] is True and figures["engine_rows_per_second_seq128"]["2"] > 0


def test_the_check_compiles_two_profiles_at_builder_level_2(tiny_models, tmp_path):
    """Two plan builds (MiniLM and BERT-base) must fit the 8 minutes with the rest of the check."""
    from engines import trt_build

    made = dc.compile_artifact(tiny_models["pair-classification"], "pair-classification", tmp_path / "a", "tiny")
    spec = trt_build.BuildSpec.read(tmp_path / "a")
    assert made["buckets"] == [list(b) for b in dc.CHECK_BUCKETS] and len(spec.profiles) == 2
    assert spec.optimization_level == dc.CHECK_OPTIMIZATION_LEVEL == 2 and spec.precision == "fp16"


def test_trtexec_parses_the_graph_strongly_typed_when_it_exists(compile_artifact, tmp_path, monkeypatch):
    artifact = compile_artifact("pair-classification", "tensorrt")
    monkeypatch.setattr(dc, "TRTEXEC", (str(tmp_path / "trtexec"),))
    assert dc.trtexec_parse(artifact)["skipped"].startswith("no trtexec")
    (tmp_path / "trtexec").write_text("#!/bin/sh\necho \"&&&& PASSED TensorRT.trtexec $*\"\n")
    (tmp_path / "trtexec").chmod(0o755)
    record = dc.trtexec_parse(artifact)
    assert record["passed"] is True and "--stronglyTyped" in record["command"]
    assert "--onnx=" + str(artifact / "tensorrt" / "model.fp16.onnx") in record["command"]
    assert "--maxShapes=input_ids:8x128,attention_mask:8x128,token_type_ids:8x128" in record["command"]
