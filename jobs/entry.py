"""The first thing the jobs' entry points do: import the project under `needs_project`, so that a
Python without its packages (Debian's `python3` instead of the venv's) gets one line saying
which Python to use, not a traceback ending in `No module named 'numpy'`. Standard library only:
it runs before anything it guards can be imported.
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

PROJECT_PACKAGES = ("engines", "udfs", "jobs", "emr")  # a missing one of these is a bug, not the wrong Python
REPO = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def needs_project(command: str):
    """`command`: how the user ran it after the interpreter, e.g. `jobs/duplicates.py`."""
    try:
        yield
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] in PROJECT_PACKAGES:
            raise
        venv = REPO / ".venv" / "bin" / "python"
        use = f"`{venv} {command} …`" if venv.exists() else f"`.venv/bin/python {command} …` after `make venv`"
        print(f"error: {sys.executable} cannot import {e.name}, which accel-scoring needs: run it with the project's "
              f"venv, {use}, or install the project into this Python", file=sys.stderr)
        raise SystemExit(2) from None
