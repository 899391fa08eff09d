"""A driver thread that prints rows done, rows/s and ETA while the scoring stage runs.

Spark's status tracker counts finished tasks; rows are estimated from the share of tasks done
in the running job, which is exact when partitions are even and close enough otherwise.
"""
from __future__ import annotations

import sys
import threading
import time


class Progress(threading.Thread):
    def __init__(self, spark, rows_total: int, every_seconds: float = 30.0, out=sys.stderr):
        super().__init__(name="accel-scoring-progress", daemon=True)
        self._tracker = spark.sparkContext.statusTracker()
        self._rows_total = rows_total
        self._every = every_seconds
        self._out = out
        self._stop_event = threading.Event()
        self._t0 = time.monotonic()

    def fraction_done(self) -> float:
        done = total = 0
        for stage_id in self._tracker.getActiveStageIds():
            info = self._tracker.getStageInfo(stage_id)
            if info:
                done += info.numCompletedTasks
                total += info.numTasks
        return done / total if total else 0.0

    def line(self) -> str:
        elapsed = time.monotonic() - self._t0
        rows = int(self._rows_total * self.fraction_done())
        rate = rows / elapsed if elapsed > 0 else 0.0
        eta = (self._rows_total - rows) / rate if rate > 0 else float("nan")
        return (f"progress: {rows}/{self._rows_total} rows ({rows / max(self._rows_total, 1):.0%}), "
                f"{rate:.0f} rows/s, elapsed {elapsed:.0f}s, eta {eta:.0f}s")

    def run(self) -> None:
        while not self._stop_event.wait(self._every):
            print(self.line(), file=self._out, flush=True)

    def stop(self) -> None:
        self._stop_event.set()
