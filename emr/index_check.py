"""Whether a pinned release is on a package index for the executors' platform, asked through pip.

``pip index versions --json`` reads an index's project page and lists the versions that have a
file installable on the given platform (sdists count): nothing is downloaded or built, so a
multi-GB CUDA wheel or a wheel-stub sdist costs one page request. pip runs isolated from this
machine's pip configuration (a local wheel folder or an extra index would answer for the index
being asked). The public index is pip's default and is never named here; the others are given
by the caller (``python -m emr preflight --online``, emr/stacks.py ``INDEXES``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Sequence

from emr.errors import EmrError
from emr.stacks import EXECUTOR_PLATFORM, Pin, Platform

# What pip prints when it could not reach the index, as opposed to an index without the release.
OFFLINE_CLUES = ("connection broken by", "NewConnectionError", "Failed to establish a new connection",
                 "Temporary failure in name resolution", "Name or service not known", "Failed to resolve",
                 "Network is unreachable", "ConnectTimeoutError", "ProxyError", "Read timed out", "SSLError",
                 "No module named pip")


class IndexUnreachable(EmrError):
    """pip could not reach the index (no network, a proxy, DNS); nothing is known about the pin."""


def _platform_args(platform: Platform) -> list[str]:
    args = ["--python-version", platform.python, "--implementation", platform.implementation, "--abi", platform.abi]
    for tag in platform.platform_tags():
        args += ["--platform", tag]
    return args


def versions(project: str, *, index_url: str | None = None, platform: Platform = EXECUTOR_PLATFORM,
             timeout_s: float = 120) -> list[str]:
    """The versions of ``project`` on the index with a file for ``platform`` ([] when there is none).

    Raises:
        IndexUnreachable: pip could not reach the index.
        EmrError: pip failed otherwise (its message attached).
    """
    cmd = [sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check", "index", "versions",
           "--json", "--retries", "1", "--timeout", "20", *_platform_args(platform)]
    if index_url:
        cmd += ["--index-url", index_url]
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
    try:
        done = subprocess.run([*cmd, project], capture_output=True, text=True, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise IndexUnreachable(f"no answer from {index_url or 'the public index'} in {timeout_s:.0f}s") from None
    if done.returncode == 0:
        return list(json.loads(done.stdout)["versions"])
    output = done.stdout + done.stderr
    clue = next((line.strip() for line in output.splitlines() if any(c in line for c in OFFLINE_CLUES)), None)
    if clue:
        raise IndexUnreachable(f"cannot reach {index_url or 'the public index'}: {clue[:300]}")
    if "No matching distribution found" in output:
        return []
    raise EmrError(f"pip index versions {project} failed ({done.returncode}): {output.strip()[-500:]}")


def matches(wanted: str, available: Sequence[str]) -> bool:
    """Whether ``wanted`` (``1.2.0``, or a prefix pattern ``1.13.1.*``) is among ``available``."""
    if wanted.endswith(".*"):
        return any(v.startswith(wanted[:-1]) for v in available)
    return wanted in available


def missing(pin: Pin, *, index_url: str | None = None, platform: Platform = EXECUTOR_PLATFORM) -> str | None:
    """Why ``pin`` would not install from the index (one sentence), or None when it would.

    Raises:
        IndexUnreachable: as ``versions``.
    """
    available = versions(pin.name, index_url=index_url, platform=platform)
    if matches(pin.version, available):
        return None
    where = index_url or "the public index"
    near = ", ".join(available[:6]) or "none"
    return (f"{pin.requirement} is not on {where} for CPython {platform.python} on "
            f"{platform.machine} Linux (glibc {'.'.join(map(str, platform.glibc))}); versions there: {near}")
