"""The GPU device check (bench/device_check.sh, bench/device_check.py, bench/device_kit.py),
exercised on the CPU: the shell script's syntax and refusals, its offline install, the kit, and
the whole Python flow on tiny models with --device cpu (every stage; the numbers mean nothing
here). What it measures on a GPU is not tested here: no GPU in these runs."""
import json
import os
import subprocess
from pathlib import Path

from bench import device_check as dc
from bench import device_kit

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "device_check.sh"


def test_script_is_valid_bash_executable_and_installs_nothing_from_an_index():
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    assert SCRIPT.stat().st_mode & 0o111
    installs = [l for l in SCRIPT.read_text().splitlines() if "pip" in l and not l.lstrip().startswith("#")]
    assert installs and all("--no-index" in l for l in installs if " install" in l)
    assert "download" not in SCRIPT.read_text()


def test_without_the_kit_the_script_says_how_to_make_it_and_exits_2(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path / "out"), "KIT": str(tmp_path / "no-kit")}
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "no device kit at" in done.stderr and "make device-kit" in done.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["log.txt", "nvidia-smi.txt"]


def test_the_check_uses_the_production_parity_gate():
    """A gate of its own would let the first GPU run pass an artifact that production refuses."""
    source = (ROOT / "bench" / "device_check.py").read_text()
    assert "parity.score_rows(" in source and ".judge(" in source
    assert not [name for name in vars(dc) if name.startswith("GATE_")]


def test_stage_records_errors_and_the_budget(tmp_path):
    results = dc.Results(tmp_path / "r.json")
    results.stage("boom", lambda: 1 / 0, deadline=float("inf"))
    results.stage("late", lambda: {"x": 1}, deadline=0)
    results.skip("tensorrt", "not importable")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["stages"]["boom"]["error"].startswith("ZeroDivisionError")
    assert doc["skipped"] == {"late": "time budget used up", "tensorrt": "not importable"}
    assert doc["errors"] == ["boom: ZeroDivisionError: division by zero"]


def test_kit_weights_are_fp16_and_the_sizes_are_counted(tiny_models, tmp_path):
    import torch
    from safetensors.torch import load_file

    out = device_kit.fp16_copy(tiny_models["embedding"], tmp_path / "kit-model")
    weights = load_file(out / "model.safetensors")
    assert {t.dtype for t in weights.values()} == {torch.float16}
    assert (out / "tokenizer.json").is_file() and (out / "config.json").is_file()
    assert 0 < device_kit.checkout_bytes() < device_kit.TRAVEL_LIMIT
    assert "device-kit:" in (ROOT / "Makefile").read_text()


def test_whole_flow_on_the_cpu_with_tiny_models(spark, tmp_path):
    """Every stage, the Spark job's included (on the shared session: not marked `spark`, so the
    Spark 4 run of make test does not repeat it)."""
    out = tmp_path / "out"
    rc = dc.main(["--out", str(out), "--device", "cpu", "--tiny", "--quick", "--work", str(tmp_path / "work")])
    doc = json.loads((out / "device_check.json").read_text())
    assert rc == 0 and doc["passed"] is True and doc["errors"] == [], doc["errors"]
    stages = doc["stages"]
    names = ("tiny-minilm", "tiny-base")
    assert {"environment", "ceilings", "models", "compile_intent_fp16", "worker_duplicates", "worker_intent",
            "spark_job"} <= set(stages)
    for name in names:
        for precision in ("fp16", "bf16"):
            assert stages[f"compile_{name}_{precision}"]["implementation_fp32_max_abs_diff"] <= 1e-4
            assert stages[f"parity_{name}"][precision]["passed"] and \
                stages[f"parity_{name}"][precision]["score_rows"] == 200
            assert stages[f"engine_{name}_{precision}"]["seq128"][0]["rows_per_second"] > 0
    worker = stages["worker_duplicates"]
    assert [r["processes"] for r in worker["runs"]] == [2] and worker["runs"][0]["rows"] > 0
    assert worker["usd_per_gpu_hour"] == 6.88 and worker["cores_per_gpu"] >= 1
    assert stages["spark_job"]["exit_code"] == 0 and stages["spark_job"]["backend"] == "torch-cuda"
    assert "tensorrt" in doc["skipped"]
    assert files_in(out) == ["device_check.json"]
    text = dc.render(doc)
    assert "## Worker path (no Spark)" in text and "| duplicates | 2 |" in text and "parity_gates_passed" in text


def files_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())
