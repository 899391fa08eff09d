"""Which engine runs which artifact. Engine modules are imported only when chosen, so the
driver and CI need no accelerator libraries."""
from __future__ import annotations

import importlib
import warnings

from engines.artifact import Manifest
from engines.errors import ArtifactError

ENGINES = {
    "onnx": "engines.onnxruntime_cpu:OnnxRuntimeEngine",
    "torch": "engines.torch_engine:TorchScriptEngine",
    "tensorrt": "engines.tensorrt:TensorRTEngine",
    "neuronx": "engines.neuron:NeuronxEngine",
    "neuron": "engines.neuron:NeuronEngine",
}

# Job backend -> the accelerator it needs (engines.base.Device kind).
ACCELERATOR = {"tensorrt": "cuda", "neuronx": "neuron", "neuron": "neuron"}
_DEVICE_WORDS = {"cuda": "NVIDIA GPU", "neuron": "NeuronCore"}


class BackendFallbackWarning(UserWarning):
    """`--backend auto` found no accelerator for the artifact and runs ONNX Runtime on the CPU."""


def engine_class(backend: str):
    try:
        module, name = ENGINES[backend].split(":")
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}; choose one of {sorted(ENGINES)}") from None
    return getattr(importlib.import_module(module), name)


def _runs(backend: str, manifest: Manifest) -> bool:
    """An engine runs artifacts of its own backend; ONNX Runtime also any that carries model.onnx
    (a tensorrt artifact does)."""
    return backend == manifest.backend or (backend == "onnx" and "model.onnx" in manifest.files)


def resolve_backend(requested: str, manifest: Manifest, hardware=None) -> str:
    """Turn `--backend` into a concrete engine for this artifact, or explain why it cannot run.

    `auto` picks the artifact's own backend when the executors have the accelerator it needs
    (`hardware`: a job passes engines.hardware.executors() of its Spark application; default:
    this machine's devices). It falls back to ONNX Runtime on the CPU, with a
    BackendFallbackWarning, only when no accelerator at all is there and the artifact carries
    model.onnx; anything else is an ArtifactError.
    """
    backend = manifest.backend if requested == "auto" else requested
    if requested == "auto" and backend in ACCELERATOR:
        from engines import hardware as probe

        hw = hardware if hardware is not None else probe.detect()
        kind = ACCELERATOR[backend]
        if not (hw.cuda if kind == "cuda" else hw.neuron):
            what = _DEVICE_WORDS[kind]
            has_onnx = "model.onnx" in manifest.files
            if has_onnx and not (hw.cuda or hw.neuron):
                warnings.warn(f"--backend auto: no {what} found ({hw.source}); artifact {manifest.model_id} "
                              f"({manifest.backend}) falls back to ONNX Runtime on the CPU", BackendFallbackWarning,
                              stacklevel=2)
                return "onnx"
            cpu = "pass --backend onnx to run its model.onnx on the CPU" if has_onnx else \
                "compile an onnx artifact for the CPU (this one carries no model.onnx)"
            raise ArtifactError(
                f"artifact {manifest.model_id} was compiled for backend {manifest.backend!r}, which needs a {what}, "
                f"and none was found ({hw}); request one for the executors "
                f"(spark.executor.resource.{probe.SPARK_RESOURCE[kind]}.amount), or {cpu}")
    if not _runs(backend, manifest):
        runnable = sorted(b for b in ENGINES if _runs(b, manifest))
        raise ArtifactError(
            f"artifact {manifest.model_id} was compiled for backend {manifest.backend!r}; "
            f"--backend {requested} cannot run it (use one of {runnable or ['auto']})"
        )
    return backend
