"""What accelerators this machine, or a Spark application's executors, have, and which CPU
instruction-set extensions decide its int8 kernels.

Cheap probes only: no CUDA context is created and no Neuron runtime is started, so calling
them on a driver or inside a Python worker never claims a device. Used by `--backend auto`
and by the engines' target checks.
"""
from __future__ import annotations

import dataclasses
import glob
import json
import os
import re
import shutil
import subprocess
from typing import Callable, Iterable, Mapping

from engines import imds

# `neuron-ls --output-format json` replaces `-j` from Neuron 2.34; older tools know only `-j`.
NEURON_LS_JSON_FLAGS = (("--output-format", "json"), ("-j",))
DMI_PRODUCT_NAME = "/sys/devices/virtual/dmi/id/product_name"
INSTANCE_TYPE = re.compile(r"[a-z][a-z0-9-]*\.[a-z0-9-]+")  # inf2.xlarge; not "Standard PC (Q35 ...)"
# NeuronCore generations: an artifact compiled for one runs on instances of the same group.
NEURON_GENERATIONS = {"inf1": "v1", "inf2": "v2", "trn1": "v2", "trn1n": "v2", "trn2": "v3", "trn2n": "v3"}
CPUINFO = "/proc/cpuinfo"
# The extensions that pick ONNX Runtime's int8 GEMM kernels: u8s8 dot products with VNNI or AMX;
# without them (AVX2, AVX-512BW) the 8-bit products are summed in 16 bits, which can saturate.
# An int8 gate holds for CPUs that report the same set (engines/onnxruntime_cpu.py).
INT8_FEATURES = ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx_vnni", "amx_tile", "amx_int8",
                 "asimddp", "i8mm", "sve")


@dataclasses.dataclass(frozen=True)
class Hardware:
    """Accelerators a probe found, counted per engine device kind (engines/base.py Device.kind:
    `cuda`, `neuron`), and where that answer came from. Kinds with none are left out."""

    devices: Mapping[str, int] = dataclasses.field(default_factory=dict)
    source: str = "local"

    def __post_init__(self) -> None:
        object.__setattr__(self, "devices", {kind: int(n) for kind, n in self.devices.items() if n})

    @property
    def any(self) -> bool:
        return bool(self.devices)

    def count(self, kind: str) -> int:
        """Devices of an engine device kind; the CPU always counts one."""
        return 1 if kind == "cpu" else self.devices.get(kind, 0)

    def has(self, kind: str) -> bool:
        return self.count(kind) > 0


def parse_core_list(text: str) -> list[str]:
    """NEURON_RT_VISIBLE_CORES syntax ('3', '0-2', '0,2-3') -> ['0', '1', ...]."""
    cores: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"not a NeuronCore list: {text!r} (expected e.g. '3', '0-2' or '0,2-3')")
        cores += [str(i) for i in range(int(lo), int(hi if sep else lo) + 1)]
    return cores


def parse_cpu_features(cpuinfo: str) -> tuple[str, ...]:
    """The INT8_FEATURES that a /proc/cpuinfo text lists (x86 `flags`, Arm `Features`), in that order."""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            have = set(value.split())
            return tuple(f for f in INT8_FEATURES if f in have)
    return ()


def cpu_features(cpuinfo: str = CPUINFO) -> tuple[str, ...] | None:
    """This machine's INT8_FEATURES; None where /proc/cpuinfo cannot be read (not Linux)."""
    try:
        with open(cpuinfo) as f:
            return parse_cpu_features(f.read())
    except OSError:
        return None


def neuron_devices(report) -> list[dict]:
    """The per-device objects of a parsed neuron-ls JSON report, in either format.

    `neuron-ls -j` (Neuron 2.33 and older) prints a list of devices. `neuron-ls --output-format
    json` (2.34 on) prints an object whose top-level fields describe the instance and UltraServer
    and hold the devices in a list; the docs give no field names for it (tests/canned/README.md),
    so the list is found by its content: objects with `nc_count` or `neuroncore_ids`.
    """
    def is_device(d) -> bool:
        return isinstance(d, dict) and ("nc_count" in d or "neuroncore_ids" in d)

    if isinstance(report, list):
        return report
    if not isinstance(report, dict):
        raise ValueError(f"neuron-ls printed neither a list nor an object of devices: {str(report)[:80]!r}")
    if is_device(report):  # a single device
        return [report]
    lists = [v for v in report.values() if isinstance(v, list) and v and all(is_device(d) for d in v)]
    return lists[0] if lists else []


def parse_neuron_ls(text: str) -> list[str]:
    """NeuronCore ids from neuron-ls JSON output (either format, see neuron_devices).

    Uses each device's `neuroncore_ids`; where those are missing or repeat across devices
    (older tools number them per device), numbers cores consecutively from each `nc_count`.
    """
    devices = neuron_devices(json.loads(text or "[]"))
    ids = [str(i) for d in devices for i in d.get("neuroncore_ids") or []]
    total = sum(int(d.get("nc_count") or len(d.get("neuroncore_ids") or [])) for d in devices)
    if ids and len(set(ids)) == len(ids) == total:
        return sorted(ids, key=int)
    return [str(i) for i in range(total)]


def parse_nvidia_smi(text: str) -> list[str]:
    """GPU indices from `nvidia-smi --query-gpu=index --format=csv,noheader`."""
    return [line.strip() for line in text.splitlines() if line.strip().isdigit()]


def _run(cmd: list[str], timeout: float = 10.0) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def local_gpus() -> int:
    out = _run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"])
    if out is not None:
        return len(parse_nvidia_smi(out))
    return len(glob.glob("/dev/nvidia[0-9]*"))


def neuron_ls_cores() -> list[str] | None:
    """NeuronCore ids from neuron-ls, trying Neuron 2.34's flag before the `-j` it replaced; None
    when neither gives JSON (no tool, or a tool that refuses or ignores the flag)."""
    for flags in NEURON_LS_JSON_FLAGS:
        out = _run(["neuron-ls", *flags])
        if out is None:
            continue
        try:
            return parse_neuron_ls(out)
        except (ValueError, TypeError):
            continue
    return None


def local_neuron_cores() -> int:
    visible = os.environ.get("NEURON_RT_VISIBLE_CORES")  # set by the Kubernetes device plugin
    if visible:
        return len(parse_core_list(visible))
    cores = neuron_ls_cores()
    if cores is not None:
        return len(cores)
    return len(glob.glob("/dev/neuron[0-9]*"))  # devices, not cores; enough to say "present"


def neuron_device_present() -> bool:
    """A Neuron device node or a working `neuron-ls` (ignores NEURON_RT_VISIBLE_CORES, which we set)."""
    return bool(glob.glob("/dev/neuron[0-9]*") or neuron_ls_cores())


def instance_type(product_name: str = DMI_PRODUCT_NAME) -> str | None:
    """This host's EC2 instance type, else None.

    Nitro instances put it in DMI's product name, which costs no request (the EC2 guide documents
    only board_asset_tag there, hence the shape check); other hosts (Xen instances, containers
    without /sys) ask instance metadata (engines/imds.py). neuron-ls prints no per-device instance
    type to read it from.
    """
    try:
        with open(product_name) as f:
            name = f.read().strip()
    except OSError:
        name = ""
    if INSTANCE_TYPE.fullmatch(name):
        return name
    return imds.this_host()


# Each accelerator's probe, under its engines' device kind. A new kind of accelerator adds its probe
# here; which kinds are asked for is the backend registry's (engines/registry.py device_kinds).
PROBES: dict[str, Callable[[], int]] = {"cuda": local_gpus, "neuron": local_neuron_cores}


def detect(kinds: Iterable[str] = tuple(PROBES)) -> Hardware:
    """This machine's accelerators of `kinds` (the CPU needs no probe)."""
    return Hardware({kind: PROBES[kind]() for kind in kinds if kind in PROBES}, source="local")


def neuron_generation(target_or_instance: str) -> str | None:
    """'inf2' or 'inf2.xlarge' -> 'v2'; None when unknown."""
    family = target_or_instance.split(".")[0].lower()
    return NEURON_GENERATIONS.get(family)


def number_gpus_like_nvidia_smi() -> None:
    """Make CUDA order GPUs by PCI bus id, as nvidia-smi does; call it before CUDA initialises.

    CUDA's default order puts the fastest GPU first, so on a host with mixed or several GPUs a
    Spark address (an nvidia-smi index) would name a different device than the ordinal
    cuda_ordinal returns. CUDA reads this variable once, when it initialises in the process.
    """
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"


def cuda_ordinal(address: str | None, visible: str | None, device_count: int) -> int:
    """The CUDA ordinal for a Spark GPU address (with number_gpus_like_nvidia_smi in effect).

    Spark addresses are the host's GPU indices (what nvidia-smi printed). If the process sees
    one GPU (YARN/cgroup isolation, or CUDA_VISIBLE_DEVICES narrowed to it) it is ordinal 0
    whatever its host index; if CUDA_VISIBLE_DEVICES lists indices, the address's position in
    that list is its ordinal.
    """
    if device_count < 1:
        raise ValueError("no CUDA device is visible to this process")
    if device_count == 1:
        return 0
    if address is None:
        return 0
    if visible:
        listed = [v.strip() for v in visible.split(",") if v.strip()]
        if address in listed:
            return listed.index(address)
    index = int(address)
    if not 0 <= index < device_count:
        raise ValueError(f"GPU address {address!r} is not one of the {device_count} devices this process sees "
                         f"(CUDA_VISIBLE_DEVICES={visible!r})")
    return index
