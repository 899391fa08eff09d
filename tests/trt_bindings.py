"""The real TensorRT Python bindings on a CPU machine: fetch a pinned release, stub its C libraries, import it.

`tensorrt-cu12-bindings` is the bindings alone (about 1.3 MB a release); its extension module
links libnvinfer, libnvinfer_plugin and libnvonnxparser, which are not on PyPI. tests/trt_stub.c
defines the C entry points it imports; compiled under each soname the module lists as NEEDED and
loaded with RTLD_GLOBAL first, it satisfies the dynamic loader, and the real module imports.
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

PACKAGE = "tensorrt-cu12-bindings"
STUB_SOURCE = Path(__file__).with_name("trt_stub.c")
# What pip prints when it cannot reach the package index (as opposed to a release that is not there).
_OFFLINE = ("NewConnectionError", "Failed to establish a new connection", "Temporary failure in name resolution",
            "Name or service not known", "Network is unreachable", "ConnectTimeoutError", "ProxyError",
            "Read timed out", "No module named pip")


class Unavailable(Exception):
    """gcc, readelf or the package index is not available here; the test skips with this message."""


def cache_root() -> Path:
    """Downloads live outside the checkout and survive it: one folder per release and Python."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "accel-scoring" / "tensorrt-bindings"


def fetch(version: str, root: Path | None = None) -> Path:
    """The folder holding `tensorrt_bindings` `version` for this Python, installed on first use."""
    target = Path(root or cache_root()) / f"{version}-cp{sys.version_info.major}{sys.version_info.minor}"
    if (target / "tensorrt_bindings").is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check",
                           "--retries", "1", "--timeout", "20", "--target", str(tmp), f"{PACKAGE}=={version}"],
                          capture_output=True, text=True)
    if proc.returncode:
        shutil.rmtree(tmp, ignore_errors=True)
        clues = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if any(s in line for s in _OFFLINE)]
        if clues:
            raise Unavailable(f"cannot fetch {PACKAGE}=={version}, the package index is unreachable: {clues[0]}")
        raise RuntimeError(f"pip could not install {PACKAGE}=={version}:\n{proc.stdout}{proc.stderr}")
    try:
        os.replace(tmp, target)
    except OSError:  # another test run installed it first
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def extension(folder: Path) -> Path:
    return Path(folder) / "tensorrt_bindings" / "tensorrt.so"


def build_stubs(module: Path, out: Path) -> list[Path]:
    """tests/trt_stub.c compiled once per TensorRT library `module` links, named by its soname."""
    for tool in ("gcc", "readelf"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} not found: the real-bindings test compiles a stub of TensorRT's C libraries")
    dynamic = subprocess.run(["readelf", "-d", str(module)], capture_output=True, text=True, check=True).stdout
    sonames = re.findall(r"\(NEEDED\)\s+Shared library: \[(libnv[^\]]+)\]", dynamic)
    if not sonames:
        raise RuntimeError(f"{module} links no TensorRT library; `readelf -d` said:\n{dynamic}")
    out.mkdir(parents=True, exist_ok=True)
    stubs = []
    for soname in sonames:
        stub = out / soname
        subprocess.run(["gcc", "-shared", "-fPIC", "-Wall", f"-Wl,-soname,{soname}", "-o", str(stub), str(STUB_SOURCE)],
                       check=True, capture_output=True, text=True)
        stubs.append(stub)
    return stubs


def load(folder: Path, stubs: Sequence[Path]):
    """Import the real bindings into this process (one release per process, so run it in a subprocess)."""
    for stub in stubs:
        ctypes.CDLL(str(stub), mode=ctypes.RTLD_GLOBAL)
    sys.path.insert(0, str(folder))
    import tensorrt_bindings

    return tensorrt_bindings
