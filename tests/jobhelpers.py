"""Run jobs in-process on the shared test SparkSession and read what they wrote."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pandas as pd


def run_job(main, capsys, **flags) -> tuple[int, dict | None, str]:
    """main(--flag value ...) -> (exit code, summary, stderr); a flag set to True is passed bare,
    and argparse's exit (a bad flag value) is returned as its code like any other."""
    argv = []
    for flag, value in flags.items():
        argv += [f"--{flag.replace('_', '-')}"] + ([] if value is True else [str(value)])
    argv += ["--progress-seconds", "3600"]
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    captured = capsys.readouterr()
    lines = [l for l in captured.out.splitlines() if l.startswith("{")]
    return rc, (json.loads(lines[-1]) if lines else None), captured.err


def read_partition(output: Path, run_date: str) -> pd.DataFrame:
    return pd.read_parquet(Path(output) / f"run_date={run_date}")


def pairs_frame(n: int, seed: int = 0) -> pd.DataFrame:
    import numpy as np

    rng = np.random.default_rng(seed)
    brands = ["Apple", "Samsung", "Sony", "Lego", "Nike"]
    items = ["phone", "tv", "headphones", "set", "shoes"]
    rows = []
    for i in range(n):
        b, it = rng.integers(0, 5, 2)
        rows.append({
            "pair_id": f"p{i:05d}",
            "left_title": f"{brands[b]} {items[it]} model {rng.integers(100)}",
            "left_brand": brands[b],
            "left_description": " ".join(["great"] * int(rng.integers(0, 80))),
            "right_title": f"{items[it]} by {brands[(b + i % 2) % 5]} {rng.integers(100)}",
            "right_brand": brands[(b + i % 2) % 5],
            "right_description": "" if i % 3 else "refurbished",
        })
    return pd.DataFrame(rows)


def pairs_parquet(tmp_path_factory, n: int, seed: int, folder: str):
    """`pairs_frame(n, seed)` written as a Parquet input for a module's jobs: (path, frame)."""
    df = pairs_frame(n, seed=seed)
    path = tmp_path_factory.mktemp(folder) / "pairs.parquet"
    df.to_parquet(path)
    return path, df


@contextlib.contextmanager
def executor_env(spark, **env):
    """Set environment variables for the Python workers of jobs started inside the block.

    PySpark hands `SparkContext.environment` to every Python function it ships (and keys its
    worker daemons by it), so this reaches local-mode workers without restarting the JVM.
    """
    saved = {k: spark.sparkContext.environment.get(k) for k in env}
    spark.sparkContext.environment.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.sparkContext.environment.pop(k, None)
            else:
                spark.sparkContext.environment[k] = v
