"""Test-only fault injection, off unless ACCEL_SCORING_FAULT is set in the executor's environment.

Format: `<kind>:<partition>` where kind is `raise_once` (an exception on the first attempt),
`kill_worker` (SIGKILL this Python worker on the first attempt) or `kill_executor` (SIGKILL the
executor JVM on the first attempt). Used by the reliability tests to prove that retries
neither lose nor double rows.
"""
from __future__ import annotations

import os
import signal

ENV = "ACCEL_SCORING_FAULT"


def maybe_inject(ctx) -> None:
    spec = os.environ.get(ENV)
    if not spec or ctx is None:
        return
    kind, _, partition = spec.partition(":")
    if str(ctx.partitionId()) != partition or ctx.attemptNumber() != 0 or ctx.stageAttemptNumber() != 0:
        return
    if kind == "raise_once":
        raise RuntimeError(f"injected fault ({ENV}={spec})")
    if kind == "kill_worker":
        os.kill(os.getpid(), signal.SIGKILL)
    if kind == "kill_executor":
        os.kill(_executor_jvm_pid(), signal.SIGKILL)
    raise ValueError(f"unknown {ENV} kind {kind!r}")


def _executor_jvm_pid() -> int:
    """The nearest `java` ancestor: Python worker -> pyspark daemon -> executor JVM."""
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if os.path.basename(f.read().split(b"\0")[0]) == b"java":
                return pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    raise RuntimeError("no executor JVM among this worker's ancestors")
