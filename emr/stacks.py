"""The executors' accelerator stacks: what gets installed, from which package index, on what driver.

One place for these external facts, each with its source and the date it was read:

- ``STACKS``: the two GPU stacks a torch 2.13 + TensorRT 10.16 environment can be. ``GPU`` is
  the one the project ships (`make package-gpu`, the bootstrap environment): CUDA 12, because it
  runs on any NVIDIA driver from R525, while the CUDA 13 stack needs R580 and the driver of
  EMR's GPU nodes is not published (emr/README.md, "The GPU stack").
- ``NEURON``: the Neuron stack of the EMR on EKS image, every pin from one Neuron release.
- ``INDEXES``: the package indexes those pins come from. Their addresses are never written in
  this repository; each says where its address is published, and the commands take it as an
  argument.
- ``EXECUTOR_PLATFORM``: the nodes' interpreter and C library, which decide which wheels fit.

``dist/gpu-requirements.txt`` is written from ``GPU`` by `python -m emr package`
(emr/packaging.py) for the AL2023 container and the bootstrap action, and
``dist/gpu-torch-requirements.txt`` from ``GPU_TORCH``, the same stack's torch alone
(emr/gpu_envs.py says which environment each is for).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Mapping

READ = "2026-12-03"


@dataclass(frozen=True)
class Index:
    """A package index the executors' pins come from, and where its address is published."""

    key: str
    name: str
    published: str  # where a user finds its address
    option: str  # the command-line flag (and make variable) that carries it

    def __str__(self) -> str:
        return self.name


PYPI = Index("pypi", "the public package index", "pip's default index", "")
INDEXES: Mapping[str, Index] = MappingProxyType({i.key: i for i in (
    PYPI,
    Index("torch-cu126", "PyTorch's CUDA 12.6 wheel index (cu126)",
          "PyTorch's 'Get started' install selector (Linux, Pip, CUDA 12.6)", "--torch-index-url"),
    Index("nvidia", "NVIDIA's package index",
          "NVIDIA's TensorRT installation guide, 'Python package index installation'", "--nvidia-index-url"),
    Index("neuron", "the Neuron pip repository",
          "the Neuron setup guide (Amazon Linux 2023, pip repository)", "--neuron-index-url"),
)})


@dataclass(frozen=True)
class Pin:
    """One exact requirement and the index it is installed from."""

    name: str
    version: str
    index: str  # a key of INDEXES
    wheel: bool = True  # False: an sdist is what that index serves (a wheel-stub)

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class Platform:
    """The executors' Python and C library: the wheel tags that install on the nodes."""

    python: str
    implementation: str
    glibc: tuple[int, int]
    machine: str
    source: str
    read: str = READ

    @property
    def abi(self) -> str:
        return f"{self.implementation}{self.python.replace('.', '')}"

    def platform_tags(self) -> tuple[str, ...]:
        """manylinux tags from this glibc down to manylinux2014's 2.17, then plain linux."""
        major, minor = self.glibc
        tags = [f"manylinux_{major}_{m}_{self.machine}" for m in range(minor, 16, -1)]
        return (*tags, f"manylinux2014_{self.machine}", f"linux_{self.machine}")


# Amazon Linux 2023 (EMR 7 and 8 nodes, and the AL2023 container that builds the archive):
# CPython 3.11 from /usr/bin/python3.11, glibc 2.34, x86_64 for every GPU and inf2 profile.
EXECUTOR_PLATFORM = Platform(
    "3.11", "cp", (2, 34), "x86_64",
    source="https://docs.aws.amazon.com/linux/al2023/ug/core-glibc.html (glibc 2.34)")


@dataclass(frozen=True)
class GpuStack:
    """torch built for one CUDA major, TensorRT for the same major, and the driver both need."""

    cuda_major: int
    build: str  # PyTorch's name for the CUDA build (its index's and its wheels' local tag)
    torch: Pin
    tensorrt: Pin | None  # None: the torch of a stack alone (``torch_only``)
    # Wheels the tensorrt package installs from NVIDIA's index (on the public index they are
    # wheel-stub sdists that fetch them from there).
    tensorrt_parts: tuple[Pin, ...]
    driver_min: int  # NVIDIA driver branch: CUDA minor-version compatibility's minimum
    source: tuple[str, ...]
    read: str = READ

    @property
    def pins(self) -> tuple[Pin, ...]:
        """What its requirements file installs, in order."""
        return (self.torch,) if self.tensorrt is None else (self.torch, self.tensorrt)

    def torch_only(self) -> "GpuStack":
        """This stack without TensorRT: the same torch pin (not a copy of it), the same driver."""
        return replace(self, tensorrt=None, tensorrt_parts=())

    def requirements(self) -> str:
        return "".join(f"{pin.requirement}\n" for pin in self.pins)

    def describe(self) -> str:
        return (f"CUDA {self.cuda_major}: {', '.join(map(str, self.pins))}, "
                f"on an NVIDIA driver R{self.driver_min} or newer")

    def indexes(self) -> tuple[Index, ...]:
        """The indexes beyond the public one that installing this stack needs."""
        keys = dict.fromkeys(p.index for p in (*self.pins, *self.tensorrt_parts) if p.index != PYPI.key)
        return tuple(INDEXES[k] for k in keys)


_TENSORRT = "10.16.1.11"  # inside the artifacts' range, engines/trt_build.py TENSORRT_MIN/BELOW
_CUDA_COMPAT = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
STACKS: Mapping[int, GpuStack] = MappingProxyType({
    # torch 2.13 has cu126 and cu130 builds and no cu128 (PyTorch dropped CUDA 12.8 from 2.12).
    12: GpuStack(
        12, "cu126", Pin("torch", "2.13.0+cu126", "torch-cu126"), Pin("tensorrt-cu12", _TENSORRT, "pypi", wheel=False),
        (Pin("tensorrt-cu12-libs", _TENSORRT, "nvidia"), Pin("tensorrt-cu12-bindings", _TENSORRT, "pypi")),
        driver_min=525,
        source=("https://github.com/pytorch/pytorch/issues/178665 (CUDA 12.8 deprecated from 2.12; "
                "12.6 kept as legacy)",
                "https://github.com/pytorch/FBGEMM/pull/5976 (torch 2.13: cu126 and cu130 wheels, no cu128)",
                _CUDA_COMPAT + " (CUDA 12.x: driver >= 525)",
                "https://github.com/pytorch/pytorch/pull/182849 (RELEASE.md, 2.12: CUDA 12.6 and 13.0 "
                "builds cover Turing 7.5 to Hopper 9.0)",
                "the public index's tensorrt-cu12, -libs and -bindings release lists")),
    # The public index's torch 2.13.0 is the CUDA 13.0 build: its metadata requires
    # cuda-toolkit 13.0.3 and nvidia-cudnn-cu13.
    13: GpuStack(
        13, "cu130", Pin("torch", "2.13.0", "pypi"), Pin("tensorrt-cu13", _TENSORRT, "pypi", wheel=False),
        (Pin("tensorrt-cu13-libs", _TENSORRT, "nvidia"), Pin("tensorrt-cu13-bindings", _TENSORRT, "pypi")),
        driver_min=580,
        source=("https://github.com/pytorch/pytorch/issues/178665 (CUDA 13.0 stable, published to the "
                "public index)", "the public index's torch 2.13.0 metadata (Requires-Dist cuda-toolkit==13.0.3)",
                _CUDA_COMPAT + " (CUDA 13.x: driver >= 580)")),
})
GPU = STACKS[12]
# The executors' torch-only environment (--backend torch-cuda): GPU's torch, from the same index,
# on the same driver minimum, and no TensorRT, so no NVIDIA index.
GPU_TORCH = GPU.torch_only()
# tensorrt-cu12 on the public index is a wheel-stub: it downloads the real libraries from the
# URL in this variable (else from the index its author configured); wheel-stub 0.5.0's
# wheel_stub/wheel.py reads no other variable.
WHEEL_STUB_INDEX_ENV = "WHEEL_STUB_PIP_INDEX_URL"


@dataclass(frozen=True)
class NeuronStack:
    """The EMR on EKS image's Neuron packages, all from one Neuron release's manifest."""

    release: str
    torch_neuronx: Pin
    neuronx_cc: Pin
    rpms: Mapping[str, str]  # the runtime packages from the Neuron yum repository
    source: str
    read: str = READ

    @property
    def pins(self) -> tuple[Pin, ...]:
        return (self.torch_neuronx, self.neuronx_cc)


# Neuron 2.31.1 is the newest release whose manifest lists torch-neuronx 2.9 (the PyTorch/XLA
# line this project traces with) for inf2; 2.32.0 lists none.
NEURON = NeuronStack(
    "2.31.1",
    Pin("torch-neuronx", "2.9.0.2.15.32035", "neuron"), Pin("neuronx-cc", "2.26.6360.0", "neuron"),
    MappingProxyType({"aws-neuronx-runtime-lib": "2.33.10.0", "aws-neuronx-collectives": "2.33.10.0",
                      "aws-neuronx-tools": "2.31.15.0"}),
    source="https://github.com/aws-neuron/aws-neuron-sdk src/helperscripts/n2-manifest.json "
           "(manifest 2.32.0 of 08/17/2026), release 2.31.1, instance inf2")
