"""The function Spark runs per partition (`DataFrame.mapInPandas`): glue, not logic.

It binds this task's device, takes the worker's cached runtime (loading it on first use),
scores each Arrow batch with the job's workload, and appends a few metric columns that the
job aggregates into the run summary and then drops. `_m_batch` times each batch, for the
run report's per-task durations and rows over time (jobs/timeline.py).
"""
from __future__ import annotations

import json
import os
import socket
import time
from typing import Iterator

import pandas as pd

from udfs import faults, imds
from udfs.cache import WORKER_CACHE
from udfs.device import bind_device, task_cpus, task_resources
from udfs.progress import ProgressReporter
from udfs.runtime import ScorerSpec, load_runtime
from udfs.tasks import SINGLE_TEXT_TASKS

METRIC_DDL = ("_m_real_tokens long, _m_padded_tokens long, _m_engine_loads int, "
              "_m_engine_seconds double, _m_retries int, _m_worker string, _m_tokenize_seconds double, "
              "_m_udf_seconds double, _m_batch string")
METRIC_COLUMNS = [c.split()[0] for c in METRIC_DDL.split(", ")]


def ahead(items: Iterator, fn) -> Iterator:
    """`map(fn, items)`, with fn of the next item running in a thread while the caller works on
    this one: the next Arrow batch is read and tokenized while the engine runs the current one.
    Tokenizers and ONNX Runtime release the GIL; at most two batches are in memory at once."""
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="accel-prepare") as pool:
        pending = None
        for item in items:
            future = pool.submit(fn, item)
            if pending is not None:
                yield pending.result()
            pending = future
        if pending is not None:
            yield pending.result()


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
        started = time.time()  # wall clock, comparable across executors, unlike perf_counter
        resources = task_resources()
        device = bind_device(spec.backend, spec.device, resources)
        threads = task_cpus()
        runtime, loaded = WORKER_CACHE.get_or_load(
            (spec.digest, spec.fallback_digest, spec.backend, str(device)), lambda: load_runtime(spec, device, threads))
        runtime = faults.limit_capacity(runtime)
        ctx = TaskContext.get()
        partition, attempt = (ctx.partitionId(), ctx.attemptNumber()) if ctx else (None, None)
        worker = json.dumps({
            "host": socket.gethostname(), "pid": os.getpid(), "device": str(device),
            "resources": resources, "partition": partition, "attempt": attempt,
            "loaded": loaded,  # whether this task loaded the engine (once per worker and device)
            "instance_type": imds.this_host(),
            # how this worker tokenizes single texts (udfs/flash_route.py); pairs always go to tokenizers
            **({"single_texts": runtime.encoder.single_route} if runtime.manifest.task in SINGLE_TEXT_TASKS else {}),
        }, sort_keys=True)
        workload = self.workload

        def prepare(frame: pd.DataFrame):
            t0 = time.perf_counter()
            return workload.prepare(runtime, frame), time.perf_counter() - t0

        progress = ProgressReporter(spec.progress, partition, attempt)
        prepared = ahead(frames, prepare) if spec.overlap else map(prepare, frames)
        try:
            for batch, prepare_seconds in prepared:
                t0 = time.perf_counter()
                out, scored = workload.finish(runtime, batch, spec.batch_tokens, progress.partial)
                udf_seconds = prepare_seconds + time.perf_counter() - t0
                metrics = {c: pd.Series([None] * len(out), dtype=object) for c in METRIC_COLUMNS}
                if len(out):
                    stats = scored.stats
                    for col, value in zip(METRIC_COLUMNS, (stats.real_tokens, stats.padded_tokens, int(loaded),
                                                           stats.engine_seconds, stats.retries, worker,
                                                           stats.tokenize_seconds, udf_seconds,
                                                           json.dumps([partition, attempt, started, time.time(), len(out)]))):
                        metrics[col].iloc[0] = value
                    loaded = False
                progress.add(len(out))
                yield out.assign(**metrics)
                faults.maybe_inject(ctx)  # test-only; here, a task has handed Spark some output rows
        finally:
            progress.close()
