"""Run encoded rows through an engine in planned device batches, isolating failures.

A batch that fails (out of memory, a runtime error) is split in half and retried, down to
single rows; a row that still fails gets an error message instead of killing the task. An
EngineCallError (the runtime refused the engine's own call) fails every batch alike, so it is
raised at once instead. An engine that refused its artifact on this worker (udfs/runtime.py's
RefusedEngine) runs nothing: every row gets its reason.
"""
from __future__ import annotations

import collections
import dataclasses
import time

import numpy as np

from engines.base import Done
from engines.errors import EngineCallError
from udfs.batching import DeviceBatch, pad, padded_length, plan_batches
from udfs.tokenize import Encoded


@dataclasses.dataclass
class RunStats:
    real_tokens: int = 0
    padded_tokens: int = 0
    engine_seconds: float = 0.0
    tokenize_seconds: float = 0.0
    batches: int = 0
    retries: int = 0
    sequences: int = 0  # encoded rows sent to the engine
    run_seconds: float = 0.0  # all of run_encoded: the engine's time plus batching and padding


@dataclasses.dataclass
class RunResult:
    outputs: np.ndarray  # [rows, width] float64; NaN where the row failed
    errors: list  # None, or why the row failed
    stats: RunStats


def run_encoded(engine, enc: Encoded, token_budget: int, on_rows=None) -> RunResult:
    """`on_rows(rows)`, when given, hears the encoded rows each finished device batch settled."""
    lengths = enc.lengths
    refused = getattr(engine, "refused", None)
    if refused:
        if on_rows is not None:
            on_rows(np.arange(len(lengths)))
        return RunResult(np.full((len(lengths), 1), np.nan), [refused] * len(lengths), RunStats())
    started = time.perf_counter()
    spec = engine.spec
    stats = RunStats(real_tokens=int(lengths.sum()), sequences=len(lengths))
    outputs: np.ndarray | None = None
    errors: list = [None] * len(lengths)
    plan = plan_batches(lengths, token_budget, max_seq_len=spec.max_seq_len, pad_multiple=spec.pad_multiple,
                        buckets=spec.buckets, static=spec.static_shapes)
    pending = list(plan)
    # Engines that overlap copies with compute (TensorRT: pipeline_depth 2) get the next batch
    # submitted before the current one is collected; engine_seconds is time spent blocked in them.
    depth = max(1, int(getattr(engine, "pipeline_depth", 1)))
    inflight: collections.deque = collections.deque()

    def failed(batch: DeviceBatch, e: Exception) -> None:
        if len(batch.rows) > 1:
            stats.retries += 1
            pending.extend(_halves(batch, lengths, spec))
        else:
            errors[int(batch.rows[0])] = f"engine_error: {type(e).__name__}: {str(e)[:300]}"
            if on_rows is not None:
                on_rows(batch.rows)

    while pending or inflight:
        while pending and len(inflight) < depth:
            batch = pending.pop()
            feed = pad(enc.ids, enc.type_ids, batch)
            t0 = time.perf_counter()
            try:
                handle = engine.submit(feed) if depth > 1 else Done(engine.infer(feed))
            except EngineCallError:
                raise
            except Exception as e:  # noqa: BLE001 - any other engine failure is isolated to its rows
                stats.engine_seconds += time.perf_counter() - t0
                failed(batch, e)
                continue
            stats.engine_seconds += time.perf_counter() - t0
            inflight.append((batch, handle))
        if not inflight:
            continue
        batch, handle = inflight.popleft()
        t0 = time.perf_counter()
        try:
            result = np.asarray(handle.result())[: len(batch.rows)]
        except EngineCallError:
            raise
        except Exception as e:  # noqa: BLE001
            stats.engine_seconds += time.perf_counter() - t0
            failed(batch, e)
            continue
        stats.engine_seconds += time.perf_counter() - t0
        stats.batches += 1
        stats.padded_tokens += batch.padded_tokens
        if outputs is None:
            outputs = np.full((len(lengths), result.shape[1]), np.nan, dtype=np.float64)
        outputs[batch.rows] = result
        if on_rows is not None:
            on_rows(batch.rows)
    if outputs is None:
        outputs = np.full((len(lengths), 1), np.nan, dtype=np.float64)
    stats.run_seconds = time.perf_counter() - started
    return RunResult(outputs, errors, stats)


def _halves(batch: DeviceBatch, lengths: np.ndarray, spec) -> list[DeviceBatch]:
    mid = len(batch.rows) // 2
    parts = []
    for rows in (batch.rows[:mid], batch.rows[mid:]):
        if spec.static_shapes:
            parts.append(DeviceBatch(rows, batch.seq_len, batch.batch_size))
        else:
            seq = int(padded_length(int(lengths[rows].max()), spec.pad_multiple, spec.max_seq_len))
            parts.append(DeviceBatch(rows, seq, len(rows)))
    return parts
