"""Compile by stage: export -> optimise or convert -> validate, then compiler/compile.py writes.

Each backend contributes one Stage, named by its Engine subclass's `compile_stage`
(engines/base.py), so compiler/compile.py dispatches on the engine class and runs the same
steps for every backend: a new backend brings its Engine subclass and its Stage, nothing else.
Stage modules import their compilers (torch, onnx, Neuron) only when a stage runs.
"""
from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any

from engines import registry


@dataclasses.dataclass(frozen=True)
class CompileJob:
    """What every stage reads: the reference module, the folder being written and the choices."""

    module: Any  # the transformers reference (compiler/export.py)
    work: Path  # the artifact folder being written
    backend: str
    task: str
    output: str
    max_seq_len: int
    buckets: tuple[tuple[int, int], ...]
    precision: str
    tokenizer: Any
    options: Any  # compiler.accel_compile.Options
    optimize: str = "none"
    threshold: float = 0.5
    positive_label: int | None = None
    parity_rows: list | None = None


class Stage:
    """One backend's compile steps; compiler/compile.py calls them in order."""

    builds_here = False  # whether `compile --build` (Options.build) applies: build for this machine's device now

    def export(self, job: CompileJob) -> dict:
        """Write the model's files into job.work; return entries for the manifest's `target`."""
        raise NotImplementedError

    def convert(self, job: CompileJob) -> dict:
        """Optimise or convert what export wrote (precision, build spec, traces); more `target` entries."""
        return {}

    def validate(self, job: CompileJob, manifest) -> tuple[dict, list[str]]:
        """The parity record, and any files this added to job.work (shipped plans)."""
        raise NotImplementedError


def stage_for(backend: str) -> Stage:
    where = registry.engine_class(backend).compile_stage
    if where is None:
        raise ValueError(f"backend {backend!r} has no compile stage")
    module, name = where.split(":")
    return getattr(importlib.import_module(module), name)()


def building_backends() -> list[str]:
    """The backends whose stage builds for this machine's device with `compile --build`."""
    return [b for b in registry.backends()
            if registry.engine_class(b).compile_stage is not None and stage_for(b).builds_here]
