"""The jobs with --backend neuronx / tensorrt / auto, end to end on local Spark.

The Neuron paths (neuronx and the legacy neuron) run through the real job, in Spark's Python
workers, with the torch_neuronx / torch_neuron TEST DOUBLES (tests/doubles/) on the workers' PYTHONPATH and --device neuron:0 (local mode
assigns no custom resources). The TensorRT path has no GPU here: it proves `auto` falls back to
ONNX Runtime with a warning when no accelerator is requested, picks TensorRT when the Spark conf
requests a gpu per executor, and an explicit `--backend tensorrt` fails with a clear error.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engines.registry import BackendFallbackWarning
from jobs.duplicates import main
from tests.jobhelpers import pairs_parquet, read_partition, run_job
from tests.neuron_doubles import DOUBLES, compile_neuron

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    return pairs_parquet(tmp_path_factory, 60, 4, "in")


@pytest.fixture
def workers_see_the_double(spark, tmp_path):
    """Spark starts Python workers with the SparkContext's environment: add the doubles folder
    to their PYTHONPATH and a log the double appends its import record to."""
    env = spark.sparkContext.environment
    saved = {k: env.get(k) for k in ("PYTHONPATH", "NEURON_DOUBLE_LOG")}
    log = tmp_path / "worker-imports.jsonl"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(DOUBLES), os.environ.get("PYTHONPATH")) if p)
    env["NEURON_DOUBLE_LOG"] = str(log)
    yield log
    for k, v in saved.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v


def _reference_scores(tiny_models, df, max_seq_len=64):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = tiny_models["pair-classification"]
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="eager").eval()
    side = lambda s: [" ".join(x for x in (df.at[i, f"{s}_title"], df.at[i, f"{s}_brand"], df.at[i, f"{s}_description"])
                               if isinstance(x, str) and x) for i in df.index]
    enc = tok(side("left"), side("right"), truncation="longest_first", max_length=max_seq_len, padding=True,
              return_tensors="pt")
    with torch.no_grad():
        return torch.softmax(model(**enc).logits, -1)[:, 1].numpy()


@pytest.mark.parametrize("backend, runtime", [("neuronx", "torch_neuronx"), ("neuron", "torch_neuron")])
def test_neuron_job_end_to_end_on_the_task_core(spark, tiny_models, pairs, workers_see_the_double, tmp_path, capsys,
                                                backend, runtime):
    path, df = pairs
    model = tmp_path / f"pairs-{backend}"
    compile_neuron(tiny_models, model, backend)
    out = tmp_path / "out"
    rc, summary, err = run_job(main, capsys, input=path, output=out, model=model, run_date="2026-02-03",
                               backend=backend, device="neuron:0", num_partitions=2)
    assert rc == 0, err
    assert summary["backend"] == backend and summary["devices"] == ["neuron:0"]
    assert summary["rows_out"] == summary["ok"] == len(df)
    assert summary["padding_efficiency"] <= 1.0 and summary["engine_loads"] >= 1

    imports = [json.loads(l) for l in workers_see_the_double.read_text().splitlines()]
    assert imports, "the double was never imported in a Spark worker"
    assert all(r["module"] == runtime and r["NEURON_RT_VISIBLE_CORES"] == "0" for r in imports)
    assert os.getpid() not in {r["pid"] for r in imports}  # it ran in Spark's Python workers

    res = read_partition(out, "2026-02-03").set_index("pair_id").loc[df.pair_id]
    np.testing.assert_allclose(res.score.to_numpy(), _reference_scores(tiny_models, df), atol=1e-5)


def test_tensorrt_artifact_with_auto_falls_back_to_onnx_on_a_cpu_box(spark, compile_artifact, pairs, tmp_path,
                                                                      capsys):
    from engines.hardware import detect

    if detect().has("cuda"):
        pytest.skip("this machine has a GPU; the fallback needs one without")
    path, df = pairs
    with pytest.warns(BackendFallbackWarning, match="falls back to ONNX Runtime on the CPU"):
        rc, summary, err = run_job(main, capsys, input=path, output=tmp_path / "out", backend="auto",
                                   model=compile_artifact("pair-classification", "tensorrt"), run_date="2026-02-04")
    assert rc == 0, err
    assert summary["backend"] == "onnx" and summary["devices"] == ["cpu"] and summary["ok"] == len(df)


def test_auto_follows_the_executors_gpu_request_on_a_cpu_driver(compile_artifact, pairs, tmp_path):
    """The driver has no GPU but its configuration requests one per executor: `auto` picks TensorRT
    instead of falling back to the CPU; in local mode the executor is this machine, which cannot
    load it, so the job says so before any task."""
    from engines.hardware import detect

    if detect().has("cuda"):
        pytest.skip("this machine has a GPU; the test needs a driver without one")
    path, _ = pairs
    conf = "--conf spark.executor.resource.gpu.amount=1 --conf spark.ui.enabled=false pyspark-shell"
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": conf, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [sys.executable, "jobs/duplicates.py", "--input", str(path), "--output", str(tmp_path / "out"), "--master",
         "local[1]", "--model", str(compile_artifact("pair-classification", "tensorrt")), "--progress-seconds", "3600"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert "falls back to ONNX Runtime" not in done.stderr
    assert done.returncode == 2 and "error: backend tensorrt needs tensorrt" in done.stderr, done.stderr[-3000:]


def _cannot_run_tensorrt() -> None:
    try:
        import tensorrt  # noqa: F401
        import torch

        if torch.cuda.is_available():
            pytest.skip("this machine can run TensorRT")
    except ImportError:
        pass


def test_explicit_tensorrt_without_tensorrt_exits_2_before_any_task(spark, compile_artifact, pairs, tmp_path, capsys):
    """In local mode the driver's machine and Python are the workers': one line naming the
    package and how to install it, instead of failing every scoring task (issue #25: 148 lines,
    64 of them Java stack frames, the useful one 145th)."""
    _cannot_run_tensorrt()
    path, _ = pairs
    model = compile_artifact("pair-classification", "tensorrt")
    capsys.readouterr()
    jobs_before = len(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
    rc, summary, err = run_job(main, capsys, input=path, output=tmp_path / "out", backend="tensorrt", model=model,
                               run_date="2026-02-05")
    assert rc == 2 and summary is None and err.count("\n") == 1, err
    assert err.startswith("error: backend tensorrt needs tensorrt") and "tensorrt-cu12" in err
    assert "pip install -e '.[gpu]'" in err
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup(None)) == jobs_before  # no Spark job ran
    assert not (tmp_path / "out").exists()


def test_an_engine_a_worker_cannot_load_cancels_the_run_at_its_first_attempt(spark, compile_artifact, pairs, tmp_path,
                                                                             capsys, monkeypatch):
    """Where the driver cannot know (a cluster; here the driver is told it may load), the first
    task that fails to load the engine tells the driver, which cancels the run instead of letting
    Spark retry every task (spark.task.maxFailures, 4 on a cluster): one error line naming the
    executor and the package, exit 1."""
    from engines.tensorrt import TensorRTEngine

    _cannot_run_tensorrt()
    monkeypatch.setattr(TensorRTEngine, "unavailable", classmethod(lambda cls, device: None))  # the driver's view only
    path, _ = pairs
    model = compile_artifact("pair-classification", "tensorrt")
    capsys.readouterr()
    rc, summary, err = run_job(main, capsys, input=path, output=tmp_path / "out", backend="tensorrt", model=model,
                               run_date="2026-02-05", num_partitions=2)
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    assert rc == 1 and summary is None, err
    assert errors == [errors[-1]] and errors[-1].startswith("error: executor "), err
    assert "backend tensorrt needs tensorrt, not importable" in errors[-1] and "tensorrt-cu12" in errors[-1]
    assert "Traceback" not in err and not list((tmp_path / "out").glob("run_date=*"))
    assert "on backend tensorrt, device cuda -> " in err  # where the workers bind, not "device cpu"


@pytest.mark.parametrize("task, precision", [("pair-classification", "fp16"), ("embedding", "bf16")])
def test_torch_cuda_job_on_the_cpu_scores_like_the_onnx_artifact(spark, compile_artifact, pairs, tmp_path, capsys,
                                                                  task, precision):
    """The GPU backend's artifact through the whole job, on this machine's CPU (`--device cpu`): the
    cross-encoder per Arrow batch, the bi-encoder through the run-level plan."""
    path, df = pairs
    runs = {}
    for backend, flags in (("onnx", {}), ("torch-cuda", {"device": "cpu", "precision": precision})):
        device = flags.pop("device", None)
        model = compile_artifact(task, backend, **flags)
        rc, summary, err = run_job(main, capsys, input=path, output=tmp_path / backend, model=model,
                                   run_date="2026-02-06", backend=backend, **({"device": device} if device else {}))
        assert rc == 0, err
        runs[backend] = (summary, read_partition(tmp_path / backend, "2026-02-06").set_index("pair_id").loc[df.pair_id])
    summary, got = runs["torch-cuda"]
    assert summary["backend"] == "torch-cuda" and summary["devices"] == ["cpu"] and summary["ok"] == len(df)
    want = runs["onnx"][1]
    assert (got.status == want.status).all()
    np.testing.assert_allclose(got.score.to_numpy(), want.score.to_numpy(), atol=0.01)


def test_torch_cuda_on_a_machine_without_a_gpu_exits_2_in_one_line_before_any_task(spark, compile_artifact, pairs,
                                                                                   tmp_path, capsys):
    from engines.hardware import local_gpus

    if local_gpus():
        pytest.skip("this machine has a GPU")
    path, _ = pairs
    rc, _, err = run_job(main, capsys, input=path, output=tmp_path / "out", backend="torch-cuda",
                         model=compile_artifact("pair-classification", "torch-cuda"), run_date="2026-02-08")
    errors = [l for l in err.splitlines() if l.startswith("error:")]
    assert rc == 2 and len(errors) == 1 and "needs an NVIDIA GPU" in errors[0] and "--device cpu" in errors[0]
    assert not (tmp_path / "out").exists()
