"""Per-task seconds and scored counts from the batch records the scorer emits, and what was
scored over the scoring stage, from the driver's live progress samples (jobs/progress.py), or
from those records when no progress datagram arrived.

What is counted is the summary's `scored_unit`: input rows in the per-batch plan, the distinct
texts, pairs or queries in the run-level one (jobs/distinct_plan.py), which may be far fewer.

A record is `[partition, attempt, task_started, batch_ended, scored]`, times in epoch seconds on
the executor (udfs/scorer.py, `_m_batch`). A 10^8-row run at 4096 rows per Arrow batch sends
about 25,000 of them (about 1.5 MB) to the driver; the summary keeps only per-task totals and a
timeline of at most MAX_BUCKETS buckets, so it stays small however long the run.
"""
from __future__ import annotations

import json

MAX_BUCKETS = 60


def parse(text: str | None) -> list[list]:
    return [json.loads(line) for line in (text or "").splitlines()]


def per_task(batches: list[list]) -> dict[tuple, dict]:
    """(partition, attempt) -> seconds from the task's start to its last batch, and its count."""
    spans: dict[tuple, list] = {}
    for partition, attempt, started, ended, scored in batches:
        span = spans.setdefault((partition, attempt), [started, ended, 0])
        span[1], span[2] = max(span[1], ended), span[2] + scored
    return {key: {"seconds": round(ended - started, 3), "scored": scored}
            for key, (started, ended, scored) in spans.items()}


def _slices(start: float, end: float) -> tuple[int, float]:
    """Equal slices of [start, end], at least a second each (a short run is not drawn as noise)."""
    count = max(1, min(MAX_BUCKETS, int(end - start)))
    return count, max(end - start, 1e-6) / count


def buckets(batches: list[list], start: float, end: float) -> dict:
    """Counts finished in each equal slice of the scoring stage [start, end] (epoch seconds),
    as each Arrow batch is done."""
    if not batches:
        return {"start": None, "bucket_seconds": None, "scored": [], "counted": None}
    count, width = _slices(start, end)
    scored = [0] * count
    for *_, ended, n in batches:
        scored[min(max(int((ended - start) / width), 0), count - 1)] += n
    return {"start": round(start, 3), "bucket_seconds": round(width, 6), "scored": scored,
            "counted": "when each Arrow batch is done"}


def from_samples(samples: list[tuple[float, int]], start: float, end: float) -> dict | None:
    """Counts scored in each equal slice of the scoring stage [start, end], from the driver's
    (time, count so far) samples, which see rows inside an Arrow batch as its device batches
    finish; None when no worker's count ever arrived (blocked datagrams), so the caller falls
    back to the batch records. Slices before the first sample and after the last (counting
    distinct texts, joining back, writing) are drawn empty: the stage took them all the same."""
    if len(samples) < 2 or not any(n for _, n in samples[:-1]):
        return None
    count, width = _slices(start, end)
    scored, previous = [0] * count, 0
    for t, total in samples:
        scored[min(max(int((t - start) / width), 0), count - 1)] += max(total - previous, 0)  # a retried task restarts
        previous = max(previous, total)
    return {"start": round(start, 3), "bucket_seconds": round(width, 6), "scored": scored,
            "counted": "as device batches finish (the workers' live progress)"}
