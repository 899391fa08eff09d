"""The function Spark runs per partition (`DataFrame.mapInArrow`): glue, not logic.

It binds this task's device, takes the worker's cached runtime (loading it on first use),
scores each Arrow batch with the job's workload, and appends a few metric columns that the
job aggregates into the run summary and then drops. `_m_batch` times each batch, for the
run report's per-task durations and rows over time (jobs/timeline.py).

The workloads work on pandas frames, but the Arrow batches in and out are the scorer's own
(`to_frame`, `to_record_batch`): mapInPandas would convert an array column such as top_k one
element at a time in Python (pyspark 3.5's `_create_converter_from_pandas`), while a column the
workload hands over as Arrow (a pandas ArrowDtype column) goes into the batch as it is.
"""
from __future__ import annotations

import json
import os
import socket
import time
from typing import Iterator

import pandas as pd
import pyarrow as pa

from engines import imds
from engines.errors import EngineUnavailableError, TargetMismatchError
from engines.store import s3_retries
from engines.tasks import task as task_of
from udfs import faults, metrics
from udfs.engine_cache import WORKER_CACHE
from udfs.device import bind_device, task_cpus, task_resources
from udfs.progress import ProgressReporter, relayed
from udfs.runtime import ScorerSpec, load_runtime



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
    return f"{workload.output_ddl()}, {metrics.DDL}"


def arrow_schema(ddl: str) -> pa.Schema:
    """The Arrow schema Spark reads a mapInArrow function's batches with: pyspark's own mapping of
    the DDL, whose parser needs the driver's Spark (the functions are built there)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import _parse_datatype_string

    return to_arrow_schema(_parse_datatype_string(ddl))


def to_frame(batch: pa.RecordBatch) -> pd.DataFrame:
    """An input Arrow batch as the workloads read it (what mapInPandas hands its function)."""
    return batch.to_pandas()


def frame_columns(frame: pd.DataFrame, schema: pa.Schema) -> list[pa.Array]:
    """The frame's columns that `schema` names, as Arrow arrays of its types. NaN becomes null, as in
    mapInPandas's own conversion; a pandas ArrowDtype column goes in as it is."""
    return [pa.Array.from_pandas(frame[f.name], type=f.type) for f in schema if f.name in frame]


def to_record_batch(frame: pd.DataFrame, batch_metrics: metrics.BatchMetrics | None,
                    schema: pa.Schema) -> pa.RecordBatch:
    """The workload's output frame and this batch's metrics (on the first row; the other rows
    null) in `schema`."""
    n = len(frame)
    columns = frame_columns(frame, schema)
    values = batch_metrics.values() if batch_metrics else (None,) * len(metrics.COLUMNS)
    for c, v in zip(metrics.COLUMNS, values):
        t = schema.field(c).type
        columns.append(pa.nulls(n, t) if v is None else pa.concat_arrays([pa.array([v], t), pa.nulls(n - 1, t)]))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


class Scorer:
    """The per-partition function for `df.mapInArrow(scorer, output_ddl(workload))`.

    A plain top-level class, so Spark pickles it by reference with only the small spec,
    workload and output schema as state; the worker-wide cache is reached through its module,
    never pickled.
    """

    def __init__(self, spec: ScorerSpec, workload):
        self.spec = spec
        self.workload = workload
        self.schema = arrow_schema(output_ddl(workload))

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        spec = self.spec
        started = time.time()  # wall clock, comparable across executors, unlike perf_counter
        resources = task_resources()
        device = bind_device(spec.backend, spec.device, resources)
        threads = task_cpus()
        ctx = TaskContext.get()
        partition, attempt = (ctx.partitionId(), ctx.attemptNumber()) if ctx else (None, None)
        progress = ProgressReporter(spec.progress, partition, attempt)
        retries_before = s3_retries()
        try:
            with relayed(progress):  # what loading says goes above a local driver's progress bar
                runtime, loaded = WORKER_CACHE.get_or_load(
                    (spec.digest, spec.fallback_digest, spec.backend, str(device)),
                    lambda: load_runtime(spec, device, threads))
        except (EngineUnavailableError, TargetMismatchError) as e:
            # Every retry on a worker like this one would fail alike: the driver cancels the run.
            progress.fatal(f"executor {socket.gethostname()}: {e}")
            progress.close()
            raise
        runtime = faults.limit_capacity(runtime)
        worker = json.dumps({
            "host": socket.gethostname(), "pid": os.getpid(), "device": str(device),
            "resources": resources, "partition": partition, "attempt": attempt,
            "loaded": loaded,  # whether this task loaded the engine (once per worker and device)
            "s3_retries": s3_retries() - retries_before,  # boto3's, reading an s3:// artifact (engines/store.py)
            "instance_type": imds.this_host(),
            # how this worker tokenizes single texts (udfs/flash_route.py); pairs always go to tokenizers
            **({"single_texts": runtime.encoder.single_route} if not task_of(runtime.manifest.task).pair_input else {}),
        }, sort_keys=True)
        workload = self.workload

        def prepare(batch: pa.RecordBatch):
            frame = to_frame(batch)  # outside udf_seconds, like the conversions after `finish`
            t0 = time.perf_counter()
            return workload.prepare(runtime, frame), time.perf_counter() - t0

        prepared = ahead(batches, prepare) if spec.overlap else map(prepare, batches)
        try:
            for batch, prepare_seconds in prepared:
                t0 = time.perf_counter()
                out, scored = workload.finish(runtime, batch, spec.batch_tokens, progress.partial)
                udf_seconds = prepare_seconds + time.perf_counter() - t0
                measured = None
                if len(out):
                    stats = scored.stats
                    measured = metrics.BatchMetrics(
                        real_tokens=stats.real_tokens, padded_tokens=stats.padded_tokens, engine_loads=int(loaded),
                        engine_seconds=stats.engine_seconds, batch_retries=stats.retries, task=worker,
                        tokenize_seconds=stats.tokenize_seconds, udf_seconds=udf_seconds,
                        batch=json.dumps([partition, attempt, started, time.time(), len(out)]))
                    loaded = False
                progress.add(len(out))
                yield to_record_batch(out, measured, self.schema)
                faults.maybe_inject(ctx)  # test-only; here, a task has handed Spark some output rows
        finally:
            progress.close()
