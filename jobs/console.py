"""Where a job's human-readable lines go: the launcher's stderr, never stdout.

stdout carries one thing, the JSON summary line that schedulers parse. Under spark-submit the
Python driver's stderr is not the terminal: Spark's PythonRunner merges the Python process's
stderr into its stdout. So under spark-submit the job writes its lines (and Python's warnings)
through the launcher JVM's own `System.err`, which is the stderr the user or the scheduler
(EMR step logs, Airflow task logs) sees. Run as `python jobs/…`, it is plain `sys.stderr`.
"""
from __future__ import annotations

import io
import os
import sys
import warnings

_launcher: io.TextIOBase | None = None


class _LauncherStderr(io.TextIOBase):
    """A text stream onto spark-submit's System.err, reached through the py4j gateway."""

    def __init__(self, jvm_err, tty: bool):
        self._err = jvm_err
        self._tty = tty

    def write(self, text: str) -> int:
        try:  # bytes, so the JVM's locale (ASCII in a bare shell) cannot mangle UTF-8
            self._err.write(bytearray(text.encode("utf-8")))
        except Exception:  # noqa: BLE001 - a dead gateway must not swallow the message
            sys.__stderr__.write(text)
        return len(text)

    def flush(self) -> None:
        try:
            self._err.flush()
        except Exception:  # noqa: BLE001
            sys.__stderr__.flush()

    def isatty(self) -> bool:
        return self._tty

    def writable(self) -> bool:
        return True


def _launcher_stderr_is_tty() -> bool:
    """Whether spark-submit's stderr (our parent's fd 2) is a terminal (Linux; else False)."""
    try:
        target = os.readlink(f"/proc/{os.getppid()}/fd/2")
    except OSError:
        return False
    return target.startswith(("/dev/pts/", "/dev/tty"))


def _one_line(message, category, filename, lineno, line=None) -> str:
    return f"warning: {message}\n"


def attach() -> io.TextIOBase:
    """Point sys.stderr at the launcher's stderr when run by spark-submit, and print Python
    warnings as one `warning:` line like the job's own; idempotent."""
    global _launcher
    warnings.formatwarning = _one_line
    if _launcher is None and "PYSPARK_GATEWAY_PORT" in os.environ:  # set by spark-submit's PythonRunner
        from pyspark import SparkContext

        SparkContext._ensure_initialized()  # connects to spark-submit's gateway; starts nothing
        _launcher = _LauncherStderr(SparkContext._jvm.java.lang.System.err, _launcher_stderr_is_tty())
        sys.stderr = _launcher
    return stream()


def stream() -> io.TextIOBase:
    """The launcher's stderr under spark-submit, else whatever sys.stderr is now."""
    return _launcher if _launcher is not None else sys.stderr


def say(line: str) -> None:
    print(line, file=stream(), flush=True)
