"""Which engine runs which artifact. Engine modules are imported only when chosen, so the
driver and CI need no accelerator libraries."""
from __future__ import annotations

import importlib

from engines.artifact import Manifest
from engines.errors import ArtifactError

ENGINES = {
    "onnx": "engines.onnxruntime_cpu:OnnxRuntimeEngine",
    "torch": "engines.torch_engine:TorchScriptEngine",
}

# Job backend -> artifact backends it can run.
RUNS = {
    "onnx": ("onnx",),
    "torch": ("torchscript",),
}

# Artifact backend -> the job backend `auto` picks on a machine with no accelerator.
NATURAL = {"onnx": "onnx", "torchscript": "torch"}


def engine_class(backend: str):
    try:
        module, name = ENGINES[backend].split(":")
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}; choose one of {sorted(ENGINES)}") from None
    return getattr(importlib.import_module(module), name)


def resolve_backend(requested: str, manifest: Manifest) -> str:
    """Turn `--backend` into a concrete engine for this artifact, or explain why it cannot run."""
    backend = NATURAL.get(manifest.backend) if requested == "auto" else requested
    if backend is None or manifest.backend not in RUNS.get(backend, ()):
        runnable = sorted(b for b, arts in RUNS.items() if manifest.backend in arts)
        raise ArtifactError(
            f"artifact {manifest.model_id} was compiled for backend {manifest.backend!r}; "
            f"--backend {requested} cannot run it (use one of {runnable or ['auto']})"
        )
    return backend
