"""The worker's half of live progress: as device batches finish (at most every 0.25 s) and
after each Arrow batch, one UDP datagram to the driver with the rows this task attempt has
scored so far. The same channel carries a worker's one-line messages in local mode (`say`),
where the worker's stderr is the terminal the driver draws its progress bar on, and a task's
fatal failure (`fatal`).

Spark reports a Python UDF's row counts only when its task ends (accumulators and the
MapInArrow SQL metrics alike), so a run with two partitions could only say 0%, 50%, 100%.
A datagram costs the worker one non-blocking send and can never fail or slow a task: when the
driver cannot be reached the progress line stands still and the run summary, counted by Spark,
is exact all the same.
"""
from __future__ import annotations

import contextlib
import dataclasses
import socket
import sys
import time

# Device batches finish several times a second on an accelerator; the driver needs far fewer.
PARTIAL_EVERY_SECONDS = 0.25


@dataclasses.dataclass(frozen=True)
class ProgressAddress:
    """Where the driver listens (jobs/progress.py) and the token that marks this run's packets."""

    host: str
    port: int
    token: str
    relay: bool = False  # the driver prints the workers' messages (local mode: one terminal for both)


# The driver reads datagrams of up to this many bytes; a longer message is cut to fit.
MAX_DATAGRAM = 4096
FATAL = "fatal"  # `<token> fatal <text>`: this task failed as every attempt would; the driver cancels the run
SAY = "say"  # `<token> say <text>`: a worker's one-line message, which the driver prints above its bar


class ProgressReporter:
    """Counts a task attempt's scored rows: whole Arrow batches (`add`) plus the rows of the
    current one whose device batches are done (`partial`), so a partition that is a single
    Arrow batch still moves. `fatal` tells the driver that the task fails for a reason every
    retry would meet again (an engine that cannot load on this worker)."""

    def __init__(self, address: ProgressAddress | None, partition: int | None, attempt: int | None):
        self._address = address
        self._prefix = f"{address.token} {partition} {attempt} " if address else ""
        self._rows = 0
        self._sent_at = 0.0
        self._sock = None
        if address is not None:
            try:
                family = socket.getaddrinfo(address.host, address.port, type=socket.SOCK_DGRAM)[0][0]
                self._sock = socket.socket(family, socket.SOCK_DGRAM)
                self._sock.setblocking(False)
            except OSError:
                self._sock = None

    def partial(self, rows_in_batch: int) -> None:
        if time.monotonic() - self._sent_at >= PARTIAL_EVERY_SECONDS:
            self._send(self._rows + rows_in_batch)

    def add(self, rows: int) -> None:
        self._rows += rows
        self._send(self._rows)

    def fatal(self, text: str) -> None:
        if self._address is not None:
            self._datagram(f"{self._address.token} {FATAL} {text}")

    @property
    def relays(self) -> bool:
        return self._sock is not None and self._address.relay

    def say(self, text: str) -> None:
        self._datagram(f"{self._address.token} {SAY} {text}")

    def _send(self, rows: int) -> None:
        self._sent_at = time.monotonic()
        self._datagram(f"{self._prefix}{rows}")

    def _datagram(self, text: str) -> None:
        if self._sock is None:
            return
        try:
            self._sock.sendto(text.encode()[:MAX_DATAGRAM], (self._address.host, self._address.port))
        except OSError:  # full buffer, unreachable driver: progress is best effort
            pass

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


_relay: ProgressReporter | None = None


def say(line: str) -> None:
    """A worker's one-line message (an engine loaded or refused, the tokenizer chosen): to a
    driver that relays (inside `relayed`), else the executor's stderr log."""
    if _relay is not None:
        _relay.say(line)
    else:
        print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def relayed(reporter: ProgressReporter):
    """Inside the block, `say` goes through `reporter` when its driver relays messages."""
    global _relay
    previous, _relay = _relay, reporter if reporter.relays else None
    try:
        yield
    finally:
        _relay = previous
