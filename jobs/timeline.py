"""Per-task seconds and rows from the batch records the scorer emits, and rows over the run
from the driver's live progress samples (jobs/progress.py), or from those records when no
progress datagram arrived.

A record is `[partition, attempt, task_started, batch_ended, rows]`, times in epoch seconds on the
executor (udfs/scorer.py, `_m_batch`). A 10^8-row run at 4096 rows per Arrow batch sends about
25,000 of them (about 1.5 MB) to the driver; the summary keeps only per-task totals and a
timeline of at most MAX_BUCKETS buckets, so it stays small however long the run.
"""
from __future__ import annotations

import json

MAX_BUCKETS = 60


def parse(text: str | None) -> list[list]:
    return [json.loads(line) for line in (text or "").splitlines()]


def per_task(batches: list[list]) -> dict[tuple, dict]:
    """(partition, attempt) -> seconds from the task's start to its last batch, and rows."""
    spans: dict[tuple, list] = {}
    for partition, attempt, started, ended, rows in batches:
        span = spans.setdefault((partition, attempt), [started, ended, 0])
        span[1], span[2] = max(span[1], ended), span[2] + rows
    return {key: {"seconds": round(ended - started, 3), "rows": rows} for key, (started, ended, rows) in spans.items()}


def buckets(batches: list[list]) -> dict:
    """Rows finished in each equal slice of the run, from the first task's start to the last
    batch's end; a slice is at least a second, so a short run is not drawn as noise."""
    if not batches:
        return {"start": None, "bucket_seconds": None, "rows": [], "counted": None}
    start, end = min(b[2] for b in batches), max(b[3] for b in batches)
    count = max(1, min(MAX_BUCKETS, int(end - start)))
    width = max(end - start, 1e-6) / count
    rows = [0] * count
    for *_, ended, n in batches:
        rows[min(int((ended - start) / width), count - 1)] += n
    return {"start": round(start, 3), "bucket_seconds": round(width, 6), "rows": rows,
            "counted": "when each Arrow batch is done, from the first task's start to the last batch's end"}


def from_samples(samples: list[tuple[float, int]]) -> dict | None:
    """Rows scored in each equal slice of the run, from the driver's (time, rows so far) samples,
    which see rows inside an Arrow batch as its device batches finish; None when no worker's
    count ever arrived (blocked datagrams), so the caller falls back to the batch records."""
    if len(samples) < 2 or not any(rows for _, rows in samples[:-1]):
        return None
    start, end = samples[0][0], samples[-1][0]
    count = max(1, min(MAX_BUCKETS, int(end - start)))
    width = max(end - start, 1e-6) / count
    rows, previous = [0] * count, 0
    for t, total in samples:
        rows[min(int((t - start) / width), count - 1)] += max(total - previous, 0)  # a retried task restarts
        previous = max(previous, total)
    return {"start": round(start, 3), "bucket_seconds": round(width, 6), "rows": rows,
            "counted": "as device batches finish (the workers' live progress), over the scoring stage"}
