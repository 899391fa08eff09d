"""Test-only fault injection, off unless ACCEL_SCORING_FAULT is set in the executor's environment.

Format: one or more `<kind>:<arg>` joined by commas, e.g. `raise_once:1,kill_worker:3`.

Task faults fire once per partition, mid-task (after the task's first scored Arrow batch has
been handed back to Spark): when ACCEL_SCORING_FAULT_ONCE_DIR names a folder shared by the
executors, on the attempt that first creates the marker file `<kind>-<partition>` there (so a
retried stage cannot fire it again); otherwise on task attempt 0 (of stage attempt 0 where
PySpark exposes it; 3.5 does not):
- `raise_once:<partition>`: raise an exception;
- `kill_worker:<partition>`: SIGKILL this Python worker;
- `kill_executor:<partition>`: SIGKILL the executor JVM (in local mode, that is the driver);
- `stall:<partition>`: sleep for ten minutes, so a test can interrupt the run mid-stage.

Capacity faults make the engine raise MemoryError, on every attempt, like a device that runs
out of memory, for any device batch of more than `oom_rows:<rows>` rows or more than
`oom_tokens:<tokens>` padded tokens; `slow_ms:<ms>` makes every device batch take that much
longer, like a real model on a real device (the live-progress test needs time to watch).

Driver faults fire at a numbered step of the run-level plan (the step constants below), once per
run (and, with ACCEL_SCORING_FAULT_ONCE_DIR, once per folder, marked `<kind>-<step>`):
- `kill_driver:<step>`: SIGKILL the driver, where a killed run must leave the cache whole;
- `kill_executor_at:<step>`: SIGKILL one executor JVM of this application on this host (the test
  cluster's), where the run must lose the executor's persisted blocks, not rows.

The reliability tests use them to prove that retries neither lose nor double rows and that an
oversized batch is split instead of crashing the worker. Set it through
`spark.executorEnv.ACCEL_SCORING_FAULT` (a cluster), the Python workers' environment, or the
environment of a `local[...]` driver before its JVM starts.
"""
from __future__ import annotations

import dataclasses
import os
import signal
import time

ENV = "ACCEL_SCORING_FAULT"
ONCE_DIR_ENV = "ACCEL_SCORING_FAULT_ONCE_DIR"
TASK_FAULTS = ("raise_once", "kill_worker", "kill_executor", "stall")
CAPACITY_FAULTS = ("oom_rows", "oom_tokens", "slow_ms")
DRIVER_FAULTS = ("kill_driver", "kill_executor_at")
# The driver's steps, where `at_driver_step` is called:
CACHE_ENTRIES_WRITTEN = 1  # jobs/result_cache.py: the cache's new entries are written
CACHE_MARKER_PUBLISHED = 2  # jobs/result_cache.py: their marker is published
UNITS_PERSISTED = 3  # jobs/runner.py: the keyed rows and distinct units are on the executors' disks
CACHE_BATCH_WRITE = 4  # jobs/result_cache.py: the cache's new batch is about to be written


def parse(spec: str | None) -> list[tuple[str, int]]:
    faults = []
    for item in (spec or "").split(","):
        if not item.strip():
            continue
        kind, _, arg = item.strip().partition(":")
        if kind not in TASK_FAULTS + CAPACITY_FAULTS + DRIVER_FAULTS or not arg.strip().isdigit():
            raise ValueError(f"{ENV}: expected <kind>:<number> with kind in {TASK_FAULTS + CAPACITY_FAULTS + DRIVER_FAULTS}, got {item!r}")
        faults.append((kind, int(arg)))
    return faults


def maybe_inject(ctx) -> None:
    """Fire this task's fault, if one is set for its partition and has not fired yet."""
    faults = parse(os.environ.get(ENV))
    if not faults or ctx is None:
        return
    for kind, partition in faults:
        if kind not in TASK_FAULTS or partition != ctx.partitionId() or not _first_time(ctx, kind, partition):
            continue
        if kind == "raise_once":
            raise RuntimeError(f"injected fault ({ENV}={kind}:{partition})")
        if kind == "kill_worker":
            os.kill(os.getpid(), signal.SIGKILL)
        if kind == "kill_executor":
            os.kill(_executor_jvm_pid(), signal.SIGKILL)
            time.sleep(60)  # the JVM is going; do not let this worker report anything meanwhile
        if kind == "stall":
            time.sleep(600)


def at_driver_step(step: int, app_id: str | None = None) -> None:
    """Fire the driver fault set for `step`, if any (test-only)."""
    for kind, at in parse(os.environ.get(ENV)):
        if kind not in DRIVER_FAULTS or at != step or not _first_time_here(kind, step):
            continue
        if kind == "kill_driver":
            os.kill(os.getpid(), signal.SIGKILL)
        if kind == "kill_executor_at" and app_id:
            os.kill(_an_executor_jvm_pid(app_id), signal.SIGKILL)


def _first_time_here(kind: str, step: int) -> bool:
    folder = os.environ.get(ONCE_DIR_ENV)
    if not folder:
        return True
    try:
        os.close(os.open(os.path.join(folder, f"{kind}-{step}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _an_executor_jvm_pid(app_id: str) -> int:
    """The lowest pid among this application's executor JVMs on this host."""
    for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in args and app_id.encode() in args:
            return pid
    raise RuntimeError(f"no executor JVM of {app_id} on this host")


def _first_time(ctx, kind: str, partition: int) -> bool:
    if os.environ.get(ONCE_DIR_ENV):
        return _first_time_here(kind, partition)
    stage_attempt = getattr(ctx, "stageAttemptNumber", None)  # PySpark 3.5's TaskContext lacks it
    return ctx.attemptNumber() == 0 and (stage_attempt is None or stage_attempt() == 0)


def limit_capacity(runtime):
    """The runtime, with its engine behind an injected memory limit if one is set; else unchanged."""
    limits = {kind: arg for kind, arg in parse(os.environ.get(ENV)) if kind in CAPACITY_FAULTS}
    if not limits:
        return runtime
    return dataclasses.replace(runtime, engine=CapacityLimitedEngine(runtime.engine, limits.get("oom_rows"),
                                                                     limits.get("oom_tokens"), limits.get("slow_ms")))


class CapacityLimitedEngine:
    """Wraps an engine; a device batch over `max_rows` rows or `max_tokens` padded tokens raises
    MemoryError before reaching the engine, as a device out of memory would; `slow_ms` delays
    every batch."""

    def __init__(self, engine, max_rows: int | None = None, max_tokens: int | None = None,
                 slow_ms: int | None = None):
        self._engine, self.max_rows, self.max_tokens, self.slow_ms = engine, max_rows, max_tokens, slow_ms

    @property
    def spec(self):
        return self._engine.spec

    @property
    def pipeline_depth(self) -> int:
        return getattr(self._engine, "pipeline_depth", 1)

    def infer(self, inputs):
        self._check(inputs)
        return self._engine.infer(inputs)

    def submit(self, inputs):
        self._check(inputs)
        return self._engine.submit(inputs)

    def _check(self, inputs) -> None:
        if self.slow_ms:
            time.sleep(self.slow_ms / 1000)
        rows, seq = inputs["input_ids"].shape
        if (self.max_rows is not None and rows > self.max_rows) or (
                self.max_tokens is not None and rows * seq > self.max_tokens):
            raise MemoryError(f"injected out-of-memory ({ENV}): a [{rows}, {seq}] batch exceeds "
                              f"rows<={self.max_rows}, tokens<={self.max_tokens}")


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
