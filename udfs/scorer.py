"""The function Spark runs per partition (`DataFrame.mapInPandas`): glue, not logic.

It binds this task's device, takes the worker's cached runtime (loading it on first use),
scores each Arrow batch with the job's workload, and appends a few metric columns that the
job aggregates into the run summary and then drops.
"""
from __future__ import annotations

import json
import os
import socket
from typing import Iterator

import pandas as pd

from udfs import faults
from udfs.cache import WORKER_CACHE
from udfs.device import bind_device, task_cpus, task_resources
from udfs.runtime import ScorerSpec, load_runtime

METRIC_DDL = ("_m_real_tokens long, _m_padded_tokens long, _m_engine_loads int, "
              "_m_engine_seconds double, _m_retries int, _m_worker string")
METRIC_COLUMNS = [c.split()[0] for c in METRIC_DDL.split(", ")]


def output_ddl(workload) -> str:
    return f"{workload.output_ddl()}, {METRIC_DDL}"


class Scorer:
    """The per-partition function for `df.mapInPandas(scorer, output_ddl(workload))`.

    A plain top-level class, so Spark pickles it by reference with only the small spec and
    workload as state; the worker-wide cache is reached through its module, never pickled.
    """

    def __init__(self, spec: ScorerSpec, workload):
        self.spec = spec
        self.workload = workload

    def __call__(self, frames: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        from pyspark import TaskContext

        spec = self.spec
        resources = task_resources()
        device = bind_device(spec.backend, spec.device, resources)
        threads = task_cpus()
        runtime, loaded = WORKER_CACHE.get_or_load(
            (spec.digest, spec.backend, str(device)), lambda: load_runtime(spec, device, threads))
        runtime = faults.limit_capacity(runtime)
        ctx = TaskContext.get()
        worker = json.dumps({
            "host": socket.gethostname(), "pid": os.getpid(), "device": str(device),
            "resources": resources, "partition": ctx.partitionId() if ctx else None,
            "attempt": ctx.attemptNumber() if ctx else None,
            "loaded": loaded,  # whether this task loaded the engine (once per worker and device)
        }, sort_keys=True)
        for frame in frames:
            out, scored = self.workload.score(runtime, frame, spec.batch_tokens)
            metrics = {c: pd.Series([None] * len(out), dtype=object) for c in METRIC_COLUMNS}
            if len(out):
                stats = scored.stats
                for col, value in zip(METRIC_COLUMNS, (stats.real_tokens, stats.padded_tokens, int(loaded),
                                                       stats.engine_seconds, stats.retries, worker)):
                    metrics[col].iloc[0] = value
                loaded = False
            yield out.assign(**metrics)
            faults.maybe_inject(ctx)  # test-only; here, a task has handed Spark some output rows
