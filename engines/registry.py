"""Every backend's facts, collected from the Engine subclasses that declare them (engines/base.py).

Engine.__init_subclass__ registers each class that sets `backend` when its module is imported,
and importing this module imports ENGINE_MODULES, so every reader (the manifest's backend
names, the jobs' and compile's choices, udfs/device.py, jobs/stage_resources.py, jobs/runner.py)
sees the same classes. Engine modules import their frameworks only in `load()`, so this needs
no accelerator library. The module list is the only thing a new backend's module adds here;
an explicit list rather than a scan of engines/, whose other modules import torch.
"""
from __future__ import annotations

import dataclasses
import importlib
import warnings

from engines import hardware as probe
from engines.artifact import Manifest
from engines.errors import ArtifactError

ENGINE_MODULES = ("engines.onnxruntime_cpu", "engines.torch_engine", "engines.tensorrt", "engines.torch_cuda",
                  "engines.neuron")
CPU_FALLBACK = "onnx"  # what `--backend auto` runs an artifact's model.onnx with when no accelerator is there

_ENGINES: dict[str, type] = {}


class BackendFallbackWarning(UserWarning):
    """`--backend auto` found no accelerator for the artifact and runs ONNX Runtime on the CPU."""


def register(cls: type) -> None:
    """Called by Engine.__init_subclass__ for each class that declares a `backend`."""
    known = _ENGINES.get(cls.backend)
    if known is not None and known.__qualname__ != cls.__qualname__:
        raise ValueError(f"backend {cls.backend!r} is declared by both {known.__qualname__} and {cls.__qualname__}")
    _ENGINES[cls.backend] = cls


def _engines() -> list[type]:
    """Registered classes, this module's list order first, so choices read the same however imported."""
    order = {m: i for i, m in enumerate(ENGINE_MODULES)}
    return sorted(_ENGINES.values(), key=lambda c: order.get(c.__module__, len(order)))


def backends() -> tuple[str, ...]:
    """The artifacts' backend names, and the jobs' and compile's `--backend` choices."""
    return tuple(c.backend for c in _engines())


def engine_class(backend: str):
    try:
        return _ENGINES[backend]
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}; choose one of {list(backends())}") from None


def canonical_backend(name: str) -> str:
    """A manifest's backend name as it is today (older manifests wrote a few differently)."""
    return next((c.backend for c in _engines() if name in c.legacy_backends), name)


def checked(manifest: Manifest) -> Manifest:
    """A manifest as read, its backend under today's name; ArtifactError for one no engine declares."""
    backend = canonical_backend(manifest.backend)
    if backend not in backends():
        raise ArtifactError(f"manifest backend {manifest.backend!r} is not one of {backends()}")
    return manifest if backend == manifest.backend else dataclasses.replace(manifest, backend=backend)


def precisions() -> tuple[str, ...]:
    """Every backend's precisions: compile's `--precision` choices."""
    return tuple(dict.fromkeys(p for c in _engines() for p in c.precisions))


def check_precision(backend: str, precision: str) -> None:
    allowed = engine_class(backend).precisions
    if precision not in allowed:
        raise ArtifactError(f"--precision {precision} is not available for --backend {backend} "
                            f"(choose one of {list(allowed)})")


def device_kinds() -> tuple[str, ...]:
    """Device.kind values some backend runs on (`cpu` first): what `--device` may name."""
    return tuple(dict.fromkeys(["cpu"] + [c.device_kind for c in _engines()]))


def spark_resources() -> dict[str, str]:
    """Accelerator device kind -> the Spark resource name executors request it by."""
    return {c.device_kind: c.spark_resource for c in _engines() if c.spark_resource}


def described(hw: probe.Hardware) -> str:
    """What a probe found, in the Spark resource names users request ('local: 2 neuroncore')."""
    found = [f"{hw.count(kind)} {name}" for kind, name in spark_resources().items() if hw.count(kind)]
    return f"{hw.source}: {', '.join(found) or 'none'}"


def _runs(backend: str, manifest: Manifest) -> bool:
    return engine_class(backend).runs(manifest)


def resolve_backend(requested: str, manifest: Manifest, hardware=None) -> str:
    """Turn `--backend` into a concrete engine for this artifact, or explain why it cannot run.

    `auto` picks the artifact's own backend when the executors have the accelerator it needs
    (`hardware`: a job passes jobs/stage_resources.py executor_hardware() of its Spark application; default:
    this machine's devices). It falls back to ONNX Runtime on the CPU, with a
    BackendFallbackWarning, only when no accelerator at all is there and the artifact carries
    model.onnx; anything else is an ArtifactError.
    """
    backend = manifest.backend if requested == "auto" else requested
    cls = engine_class(backend) if backend in _ENGINES else None
    if requested == "auto" and cls is not None and cls.spark_resource:
        hw = hardware if hardware is not None else probe.detect(device_kinds())
        if not hw.has(cls.device_kind):
            what = cls.device_words
            has_onnx = _runs(CPU_FALLBACK, manifest)
            if has_onnx and not hw.any:
                warnings.warn(f"--backend auto: no {what} found ({hw.source}); artifact {manifest.model_id} "
                              f"({manifest.backend}) falls back to ONNX Runtime on the CPU", BackendFallbackWarning,
                              stacklevel=2)
                return CPU_FALLBACK
            cpu = (f"pass --backend {CPU_FALLBACK} to run its model.onnx on the CPU" if has_onnx else
                   f"pass --backend {cls.backend} --device cpu to run it on the CPU" if cls.runs_on_cpu else
                   f"compile an {CPU_FALLBACK} artifact for the CPU (this one carries no model.onnx)")
            raise ArtifactError(
                f"artifact {manifest.model_id} was compiled for backend {manifest.backend!r}, which needs a {what}, "
                f"and none was found ({described(hw)}); request one for the executors "
                f"(spark.executor.resource.{cls.spark_resource}.amount), or {cpu}")
    if cls is None or not _runs(backend, manifest):
        runnable = [b for b in backends() if _runs(b, manifest)]
        raise ArtifactError(
            f"artifact {manifest.model_id} was compiled for backend {manifest.backend!r}; "
            f"--backend {requested} cannot run it (use one of {runnable or ['auto']})"
        )
    return backend


for _module in ENGINE_MODULES:
    importlib.import_module(_module)
