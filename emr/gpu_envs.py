"""The two GPU environments the executors' Python can be, and which backends each is built for.

``FULL`` is the GPU stack of emr/stacks.py, a CUDA torch and TensorRT, for ``--backend
tensorrt``; ``TORCH`` is that stack's CUDA torch alone, for ``--backend torch-cuda``, which
needs nothing else and so no NVIDIA index. Each is built the same two ways: as the archive
(`make package-gpu`, `make package-gpu-torch`: the AL2023 container installs its requirements
file, then the wheel with ``aws,fast`` and the env's extra), or on every node at cluster start
(``create-cluster --python-env bootstrap`` with the env's extra in ``--pip-extras``;
emr/bootstrap_env.py). ``python -m emr package`` writes both requirements files to dist/ and
``stage`` uploads them beside the scripts.
"""

from __future__ import annotations

from dataclasses import dataclass

from emr import layout as L
from emr.stacks import GPU, GPU_TORCH, GpuStack


@dataclass(frozen=True)
class GpuEnv:
    name: str  # in messages: "the {name} environment", "the {name} stack"
    backends: tuple[str, ...]  # what it is built for, the one whose modules it holds first
    extra: str  # the pyproject extra that asks for it, in --pip-extras and the archive's extras
    stack: GpuStack  # what its requirements file pins (emr/stacks.py)
    requirements: str  # that file, in dist/ and under <prefix>/scripts/
    make_target: str  # builds the archive with it (emr/package.mk)

    @property
    def backend(self) -> str:
        return self.backends[0]


FULL = GpuEnv("GPU", ("tensorrt", "torch"), "gpu", GPU, L.GPU_REQUIREMENTS, "package-gpu")
TORCH = GpuEnv("torch-only GPU", ("torch-cuda",), "torch-cuda", GPU_TORCH, L.GPU_TORCH_REQUIREMENTS,
               "package-gpu-torch")
ENVS = (FULL, TORCH)


def for_backend(backend: str) -> GpuEnv | None:
    """The environment to build for ``backend``; None for a backend no GPU environment is for."""
    return next((env for env in ENVS if backend in env.backends), None)


def selected(extras: str) -> GpuEnv | None:
    """The environment an extras list (``aws,fast,torch-cuda``) asks for; the full one when both are named."""
    names = {e.strip() for e in extras.split(",")}
    return next((env for env in ENVS if env.extra in names), None)
