"""The same jobs on Spark 3.5 (EMR 7) and Spark 4.0 (EMR 8) write the same rows.

Runs under Spark 4.0 (`make test-spark4`), with SPARK35_PYTHON naming a Spark 3.5 venv's Python:
that venv runs each job in a subprocess, and this process runs it again on the test session.
Spark 4.0 turns ANSI SQL on by default and 3.5 does not, and the two lines convert Arrow batches
and pandas frames with different code, so this holds the lines to one output: the same rows,
statuses, errors, truncation flags and labels, scores within 1e-6. A result cache written on
Spark 3.5 serves a Spark 4.0 run (an EMR 7 -> EMR 8 move keeps its cache).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pyspark
import pytest

from jobs.duplicates import main as duplicates
from jobs.query_intent import main as query_intent
from tests.jobhelpers import pairs_frame, read_partition, run_job
from tests.test_duplicates_job import BAD_ROWS

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]
SPARK35_PYTHON = os.environ.get("SPARK35_PYTHON")
RUN_DATE = "2026-04-01"
SCORE_COLUMNS = {"score", "confidence"}
# Runs each (job module, argv) of argv[1] on one local SparkSession configured like tests/conftest.py's.
RUN_JOBS = """
import importlib, json, sys
from pyspark.sql import SparkSession
(SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
 .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
for job, argv in json.loads(sys.argv[1]):
    rc = importlib.import_module(job).main(argv)
    if rc != 0:
        sys.exit(f"{job} {argv} exited {rc}")
"""

if not pyspark.__version__.startswith("4."):
    pytest.skip(f"compares Spark 3.5 with 4.0 and runs on 4.0 (make test-spark4); this is {pyspark.__version__}",
                allow_module_level=True)
if not SPARK35_PYTHON:
    pytest.skip("SPARK35_PYTHON (a Spark 3.5 venv's python) is not set; make test-spark4 sets it",
                allow_module_level=True)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("lines-in")
    pairs = pd.concat([pairs_frame(200, seed=5), pd.DataFrame(BAD_ROWS)], ignore_index=True)
    pairs.to_parquet(root / "pairs.parquet")
    queries = pd.DataFrame({"query_id": [f"q{i}" for i in range(120)] + ["blank", "null", "q3"],
                            "query": [f"query {w} {i % 7}" for i, w in enumerate(["order", "shoes", "return"] * 40)]
                            + ["  \u200b", None, "repeated id"]})
    queries.to_parquet(root / "queries.parquet")
    return {"pairs": root / "pairs.parquet", "queries": root / "queries.parquet"}


@pytest.fixture(scope="module")
def runs(inputs, compile_artifact, tmp_path_factory):
    """Each run as (job, flags): the duplicates job with a cross-encoder (per-batch plan) and with
    a bi-encoder (run-level plan, the cosine in Spark SQL, the result cache), the intent job."""
    models = {task: compile_artifact(task) for task in ("pair-classification", "embedding", "text-classification")}
    root = tmp_path_factory.mktemp("lines-out")
    common = {"run_date": RUN_DATE, "max_invalid_fraction": 0.1, "num_partitions": 3}
    return root, {
        "cross": (duplicates, {**common, "input": inputs["pairs"], "model": models["pair-classification"]}),
        "bi": (duplicates, {**common, "input": inputs["pairs"], "model": models["embedding"], "cache": root / "cache"}),
        "intent": (query_intent, {**common, "input": inputs["queries"], "model": models["text-classification"],
                                  "top_k": 2}),
    }


def argv(flags: dict) -> list[str]:
    return [str(a) for flag, value in flags.items() for a in (f"--{flag.replace('_', '-')}", value)]


@pytest.fixture(scope="module")
def spark35_outputs(runs):
    """Every run on Spark 3.5, in one subprocess (one JVM start)."""
    root, by_name = runs
    version = subprocess.run([SPARK35_PYTHON, "-c", "import pyspark; print(pyspark.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert version.startswith("3.5."), f"SPARK35_PYTHON={SPARK35_PYTHON} runs Spark {version}"
    jobs = [(main.__module__, argv({**flags, "output": root / f"{name}-3.5", "progress_seconds": 3600}))
            for name, (main, flags) in by_name.items()]
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": SPARK35_PYTHON,
           "PYSPARK_DRIVER_PYTHON": SPARK35_PYTHON}
    proc = subprocess.run([SPARK35_PYTHON, "-c", RUN_JOBS, json.dumps(jobs)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {name: read_partition(root / f"{name}-3.5", RUN_DATE) for name in by_name}


def same_rows(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Asserts that a and b hold the same rows, in any order: scores within 1e-6, the rest equal."""
    assert list(a.columns) == list(b.columns)
    exact = [c for c in a.columns if c not in SCORE_COLUMNS and c != "top_k"]
    a, b = (f.assign(_order=f[exact].astype(str).agg("|".join, axis=1))
            .sort_values("_order", ignore_index=True, kind="stable").drop(columns="_order") for f in (a, b))
    pd.testing.assert_frame_equal(a[exact], b[exact])
    for column in sorted(SCORE_COLUMNS & set(a.columns)):
        np.testing.assert_allclose(a[column].to_numpy(dtype=float), b[column].to_numpy(dtype=float),
                                   atol=1e-6, rtol=0, equal_nan=True)
    if "top_k" in a.columns:
        for p, q in zip(a.top_k, b.top_k):
            assert (p is None) == (q is None)
            if p is not None:
                assert [t["label"] for t in p] == [t["label"] for t in q]
                np.testing.assert_allclose([t["score"] for t in p], [t["score"] for t in q], atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", ["cross", "bi", "intent"])
def test_spark_4_writes_what_spark_3_5_writes(name, runs, spark35_outputs, spark, capsys):
    root, by_name = runs
    main, flags = by_name[name]
    flags = {k: v for k, v in flags.items() if k != "cache"}  # without the cache: everything scored on 4.0
    rc, summary, err = run_job(main, capsys, **flags, output=root / f"{name}-4.0")
    assert rc == 0, err[-3000:]
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"  # 4.0's default, unlike 3.5's
    expected = spark35_outputs[name]
    assert set(expected.status) == {"ok", "invalid_input"} and summary["rows_out"] == len(expected)
    same_rows(expected, read_partition(root / f"{name}-4.0", RUN_DATE))


def test_a_cache_written_on_spark_3_5_serves_spark_4(runs, spark35_outputs, spark, capsys):
    root, by_name = runs
    main, flags = by_name["bi"]
    rc, summary, err = run_job(main, capsys, **flags, output=root / "bi-4.0-cached")
    assert rc == 0, err[-3000:]
    expected = spark35_outputs["bi"]
    valid = int((expected.status == "ok").sum())
    assert summary["cache"]["hits"] == valid and summary["cache"]["texts_encoded"] == 0
    same_rows(expected, read_partition(root / "bi-4.0-cached", RUN_DATE))
