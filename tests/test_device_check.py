"""The GPU device check (bench/device_check.sh + bench/device_check.py), exercised on the CPU:
its shell syntax, its metrics and gates, and its whole Python flow with --backend onnx. What it
measures on a GPU is not tested here."""
import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bench import device_check as dc

ROOT = Path(__file__).resolve().parent.parent


def test_script_is_valid_bash_and_executable():
    script = ROOT / "bench" / "device_check.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert script.stat().st_mode & 0o111


def test_parity_summary_and_gate():
    ref = np.array([0.1, 0.6, 0.9, 0.49, 0.2] * 40)
    close = ref + 0.004
    s = dc.parity_summary(ref, close, 0.5)
    assert s["rows"] == 200 and s["label_agreement"] == 1.0  # 0.49 -> 0.494 stays below 0.5
    assert math.isclose(s["p99_score_diff"], 0.004, abs_tol=1e-9)
    flips = ref.copy()
    flips[3::5] = 0.51  # every 0.49 crosses the threshold: 20% disagree
    assert dc.parity_summary(ref, flips, 0.5)["label_agreement"] == pytest.approx(0.8)
    same = dc.parity_summary(ref, ref + 0.001, 0.5)
    assert same["label_agreement"] == 1.0 and dc.parity_gate(same)
    assert not dc.parity_gate(dc.parity_summary(ref, ref + 0.02, 0.5))  # p99 above 0.01
    nan = ref.copy()
    nan[0] = np.nan
    assert not dc.parity_gate(dc.parity_summary(ref, nan, 0.5))  # a NaN score fails the gate


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
                  "--rows", "48", "--batches", "2", "--seconds", "0.2", "--job-rows", "0"])
    doc = json.loads((tmp_path / "device_check.json").read_text())
    assert rc == 0 and doc["passed"] is True and doc["errors"] == []
    tiny = doc["models"]["tiny"]
    assert tiny["parity_vs_pytorch"]["rows"] == 48 and tiny["parity_vs_pytorch"]["label_agreement"] == 1.0
    assert tiny["throughput_seq128"]["engine"][0]["rows_per_second"] > 0
