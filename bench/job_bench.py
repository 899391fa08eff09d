"""The jobs end to end on local Spark, in steady state.

One SparkSession (local[N]) for the whole benchmark: its start (the JVM) is timed and reported
on its own. Each measured job run follows a warm-up run of the same job on a few rows, so the
Python workers exist and hold the engine; the measured figure is the run summary's
`scoring_seconds` (read, shuffle, tokenize, engine, write). A pass-through job with the same
plan and no model gives the cost of read + shuffle + Arrow transfer + write on its own.
"""
from __future__ import annotations

import time
from pathlib import Path

from bench.harness import RUN_DATE, run_job


def measured(main, *, frame, work: Path, name: str, model: Path, partitions: int, extra: list[str] = (),
             warmup_rows: int = 64) -> dict:
    """Warm-up on a few rows, then the measured run; returns the run summary."""
    data = work / f"{name}.parquet"
    frame.to_parquet(data, index=False)
    warm = work / f"{name}-warmup.parquet"
    frame.head(warmup_rows).to_parquet(warm, index=False)
    run_job(main, input=warm, output=work / f"{name}-warmup-out", model=model, partitions=partitions, extra=extra)
    summary = run_job(main, input=data, output=work / f"{name}-out", model=model, partitions=partitions, extra=extra)
    summary["output_path"] = str(work / f"{name}-out" / f"run_date={RUN_DATE}")
    return summary


def passthrough_seconds(spark, *, input: Path, output: Path | None, workload, partitions: int) -> float:
    """The job's plan (read, id counts, repartition, mapInArrow with the scorer's conversion to
    pandas and back, partitioned write) with no model; with no `output`, Spark's `noop` sink
    instead of the write: read + Arrow alone."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import functions as F

    from jobs import spark_io as job_io
    from udfs.scorer import to_frame

    def identity(batches):
        for batch in batches:
            frame = to_frame(batch)
            yield pa.RecordBatch.from_arrays([pa.Array.from_pandas(frame[workload.id_column], type=pa.string()),
                                              pa.array(np.zeros(len(frame)))], names=[workload.id_column, "score"])

    raw = job_io.read_input(spark, str(input), "parquet")
    df, _ = job_io.scoring_input(raw, workload)
    out = (df.repartition(partitions).mapInArrow(identity, f"{workload.id_column} string, score double")
           .withColumn("run_date", F.lit(RUN_DATE)))
    t0 = time.perf_counter()
    if output is None:
        out.write.format("noop").mode("overwrite").save()
    else:
        job_io.write_scores(out, str(output))
    return time.perf_counter() - t0


def time_split(summary: dict, passthrough: float, cores: int) -> dict:
    """Wall seconds of the scoring phase split into read+shuffle+write, tokenize, engine, other.

    Worker-side seconds are summed over tasks, so they are divided by the cores that ran them
    in parallel; `other` is the rest of the Python UDF (joining fields, checks, output columns).
    """
    wall = summary["scoring_seconds"]
    tokenize = summary.get("tokenize_seconds", 0.0) / cores
    engine = summary["engine_seconds"] / cores
    udf = summary.get("udf_seconds", 0.0) / cores
    split = {"read_shuffle_write": passthrough, "tokenize": tokenize, "engine": engine,
             "other_python": max(udf - tokenize - engine, 0.0)}
    split["unaccounted"] = max(wall - sum(split.values()), 0.0)
    return {k: round(v, 3) for k, v in split.items()} | {
        "fractions": {k: round(v / wall, 4) for k, v in split.items()}}
