"""Live progress of the scoring stage: rows scored so far, rows/s and ETA.

Workers send their attempt's running row count after every Arrow batch (udfs/progress.py); the
driver keeps the newest attempt's count per partition, so a retried task counts its rows once.
On a terminal the job draws a progress bar (tqdm); elsewhere (EMR step logs, Airflow task logs,
a pipe) it prints one plain line every --progress-seconds. In local mode the workers' one-line
messages come the same way and are printed whole, above the bar (tqdm's write), where the
workers' own stderr would have cut into it.
"""
from __future__ import annotations

import secrets
import socket
import threading
import time

from udfs.progress import FATAL, MAX_DATAGRAM, SAY, ProgressAddress

BAR_REFRESH_SECONDS = 0.5


def is_local(spark) -> bool:
    """Local mode: the executors run on the driver's machine, their stderr on its terminal."""
    return spark.sparkContext.getConf().get("spark.master", "local").startswith("local")


def driver_addresses(spark) -> tuple[str, str]:
    """(bind, advertise): loopback in local mode; else Spark's own driver addresses, which the
    executors already reach (its RPC and block manager live there)."""
    conf = spark.sparkContext.getConf()
    if is_local(spark):
        return "127.0.0.1", "127.0.0.1"
    host = conf.get("spark.driver.host", socket.gethostname())
    return conf.get("spark.driver.bindAddress", host), host


class RowCounts:
    """Newest attempt's running count per partition; a stale or foreign datagram changes nothing."""

    def __init__(self, token: str):
        self._token = token
        self._by_partition: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def record(self, message: str) -> None:
        parts = message.split()
        if len(parts) != 4 or parts[0] != self._token:
            return
        try:
            attempt, rows = int(parts[2]), int(parts[3])
        except ValueError:
            return
        with self._lock:
            seen = self._by_partition.get(parts[1])
            if seen is None or attempt > seen[0] or (attempt == seen[0] and rows > seen[1]):
                self._by_partition[parts[1]] = (attempt, rows)

    def total(self) -> int:
        with self._lock:
            return sum(rows for _, rows in self._by_partition.values())


class WorkerFailed(RuntimeError):
    """A worker reported a failure that every retry would repeat (udfs/scorer.py); the driver
    cancelled the run instead of letting Spark retry each task."""


class Progress:
    """Receives the workers' counts and shows them until stopped; use as a context manager.
    A worker's fatal report cancels the application's jobs, and leaving the block then raises
    WorkerFailed with the worker's reason."""

    def __init__(self, spark, rows_total: int, every_seconds: float, out, unit: str = "rows", then: str = ""):
        """`unit`: what is counted; a run that scores distinct texts once counts those, not rows.
        `then`: what the run does once all are scored (joining back, writing), said at that
        moment so that a bar at 100% is never left standing without a word."""
        self.rows_total = rows_total
        self.unit = unit
        self._then = then
        self._announced = False
        self._every = every_seconds
        self._out = out
        token = secrets.token_hex(8)
        self._token = token
        self.counts = RowCounts(token)
        self._context = spark.sparkContext
        self.fatal: str | None = None
        bind, advertise = driver_addresses(spark)
        family = socket.getaddrinfo(bind, 0, type=socket.SOCK_DGRAM)[0][0]
        self._sock = socket.socket(family, socket.SOCK_DGRAM)
        self._sock.bind((bind, 0))
        self._sock.settimeout(0.2)
        self.address = ProgressAddress(advertise, self._sock.getsockname()[1], token, relay=is_local(spark))
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._bar = None
        self.samples: list[tuple[float, int]] = []  # (epoch seconds, rows scored): rows/s in report.html
        self._threads = [threading.Thread(target=self._receive, name="accel-progress-receive", daemon=True),
                         threading.Thread(target=self._show, name="accel-progress-show", daemon=True)]

    def __enter__(self) -> "Progress":
        self._t0 = time.monotonic()
        if self._out.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=self.rows_total, unit=self.unit, file=self._out, dynamic_ncols=True,
                             mininterval=BAR_REFRESH_SECONDS, desc="scoring")
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2)
        self._sock.setblocking(False)
        while self._take():  # what arrived after the receiving thread's last look
            pass
        self._sock.close()
        if self._bar is not None:
            self._bar.close()
        if self.fatal is not None:
            raise WorkerFailed(self.fatal)

    def line(self, rows: int | None = None) -> str:
        rows = self.counts.total() if rows is None else rows
        elapsed = time.monotonic() - self._t0
        rate = rows / elapsed if elapsed > 0 else 0.0
        eta = f"{(self.rows_total - rows) / rate:.0f}s" if rate > 0 else "unknown"
        return (f"progress: {rows}/{self.rows_total} {self.unit} ({rows / max(self.rows_total, 1):.0%}), "
                f"{rate:.{0 if rate >= 10 else 2}f} {self.unit}/s, elapsed {elapsed:.0f}s, eta {eta}")

    def say(self, text: str) -> None:
        """A whole line on the progress stream, above the bar where there is one."""
        if self._bar is not None:
            self._bar.write(text, file=self._out)
        else:
            print(text, file=self._out, flush=True)

    def _announce(self, rows: int) -> None:
        """Once everything is scored: say what the run does now, which can take a while."""
        if self._announced or rows < self.rows_total or not self._then:
            return
        self._announced = True
        elapsed = time.monotonic() - self._t0
        done = f"all {self.rows_total:,} {self.unit} scored in {elapsed:.0f}s" if self.rows_total else \
            f"no {self.unit} to score"
        self.say(f"progress: {done}; now {self._then}")

    def finish(self, rows_done: int) -> None:
        """The last word, with Spark's exact count (lost datagrams cannot make it wrong)."""
        self.samples.append((time.time(), rows_done))
        if self._bar is not None:
            self._bar.update(rows_done - self._bar.n)
            self._bar.refresh()
        else:
            print(self.line(rows_done), file=self._out, flush=True)

    def _receive(self) -> None:
        while not self._stop.is_set():
            self._take()

    def _take(self) -> bool:
        """Handle one datagram; False when none came."""
        try:
            data = self._sock.recv(MAX_DATAGRAM)
        except (socket.timeout, OSError):
            return False
        message = data.decode("utf-8", "replace")
        token, _, rest = message.partition(" ")
        kind, _, text = rest.partition(" ")
        if token == self._token and kind == FATAL:
            if self.fatal is None:
                self.fatal = text
                self._context.cancelAllJobs()
        elif token == self._token and kind == SAY:
            self.say(text)
        else:
            self.counts.record(message)
        return True

    def _show(self) -> None:
        """Samples the count every BAR_REFRESH_SECONDS; draws the bar then, or prints a line
        every --progress-seconds."""
        printed = time.monotonic()
        while not self._stop.wait(BAR_REFRESH_SECONDS):
            rows = self.counts.total()
            self.samples.append((time.time(), rows))
            if self._bar is not None:
                self._bar.update(rows - self._bar.n)
            elif time.monotonic() - printed >= self._every:
                printed = time.monotonic()
                print(self.line(rows), file=self._out, flush=True)
            self._announce(rows)
