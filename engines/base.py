"""One small interface for every backend.

Construction is cheap and picklable (paths and options only); `load()` does the heavy work on
the worker, once. Input checks live here, once, for every backend.
"""
from __future__ import annotations

import abc
import dataclasses
import time
from pathlib import Path
from typing import ClassVar, Mapping

import numpy as np

from engines.artifact import Manifest
from engines.errors import ParityError


@dataclasses.dataclass(frozen=True)
class Device:
    """Where an engine runs: `cpu`, or an accelerator kind with Spark's address string."""

    kind: str = "cpu"
    address: str | None = None

    def __str__(self) -> str:
        return self.kind if self.address is None else f"{self.kind}:{self.address}"


@dataclasses.dataclass(frozen=True)
class EngineSpec:
    """The shapes an engine accepts; the scorer follows them, it never picks its own."""

    input_names: tuple[str, ...]
    max_seq_len: int
    # Static engines (TensorRT profiles, Neuron traces) only take these (batch, seq) shapes.
    buckets: tuple[tuple[int, int], ...] = ()
    static_shapes: bool = False
    pad_multiple: int = 8


class Engine(abc.ABC):
    """Loads one artifact on one device and runs batches of token ids through it.

    A subclass that sets `backend` declares every fact about that backend below, and
    engines/registry.py collects it when the class is defined: the jobs' and compile's
    `--backend` choices, the manifest's backend names, device binding and the batch-token
    default all read these attributes, so a new backend is one subclass (and its compile stage).
    """

    backend: ClassVar[str]  # the artifact's and the jobs' --backend name
    legacy_backends: ClassVar[tuple[str, ...]] = ()  # names older manifests wrote for it
    device_kind: ClassVar[str] = "cpu"  # Device.kind it runs on
    device_words: ClassVar[str] = "CPU"  # that device in messages
    spark_resource: ClassVar[str | None] = None  # spark.executor.resource.<name> that assigns the device
    runs_on_cpu: ClassVar[bool] = False  # an accelerator engine that also takes `--device cpu` (same artifact)
    # What the scoring stage's ResourceProfile asks of that resource when the job's Spark conf
    # names no amount (jobs/stage_resources.py): one device per executor and one per task.
    spark_executor_amount: ClassVar[int] = 1
    spark_task_amount: ClassVar[float] = 1.0
    precisions: ClassVar[tuple[str, ...]] = ("fp32",)  # compile --precision choices; the first is the default
    # Padded tokens per device batch without --batch-tokens. On the CPU small batches win:
    # tighter length buckets and activations that stay in cache. `make bench` measured MiniLM's
    # bare engine on the job's texts at 50.0 rows/s with 512 tokens, 50.1 with 1024 and 37.8 with
    # 8192 (padding efficiency 0.988, 0.973, 0.844). Accelerators want large batches instead.
    default_batch_tokens: ClassVar[int] = 512
    pad_multiple: ClassVar[int] = 8  # sequence lengths are rounded up to a multiple of this
    static_shapes: ClassVar[bool] = False  # only the compiled (batch, seq) buckets run
    compile_stage: ClassVar[str | None] = None  # "module:Class" of its compiler/stage.py Stage; None: not compiled here
    # Batches the scorer may have in flight at once (submit() before the previous result()).
    pipeline_depth: ClassVar[int] = 1

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "backend" in cls.__dict__:
            from engines import registry

            registry.register(cls)

    def __init__(self, folder: str | Path, manifest: Manifest, device: Device = Device(), threads: int = 1):
        self.folder = Path(folder)
        self.manifest = manifest
        self.device = device
        self.threads = max(1, int(threads))
        self.load_seconds: float | None = None
        self._loaded = False

    @classmethod
    def runs(cls, manifest: Manifest) -> bool:
        """Whether this engine can run the artifact: by default, artifacts of its own backend."""
        return manifest.backend == cls.backend

    @classmethod
    def unavailable(cls, device: Device) -> str | None:
        """Why this backend cannot load on `device` of this machine, found without loading
        anything or claiming the device (a missing package, no such device); None when it may. A
        local-mode driver asks before any task, since its machine and Python are the workers'
        (jobs/runner.py)."""
        return None

    @property
    def spec(self) -> EngineSpec:
        return EngineSpec(input_names=self.manifest.inputs, max_seq_len=self.manifest.max_seq_len,
                          buckets=self.manifest.buckets, static_shapes=self.static_shapes,
                          pad_multiple=self.pad_multiple)

    def load(self) -> "Engine":
        """Load and warm up; call once per worker. Warm-up runs every bucket so no row pays for it."""
        if self.manifest.parity.get("passed") is False:
            raise ParityError(f"artifact {self.manifest.model_id} failed its parity check and is refused: "
                              f"{self.manifest.parity}")
        t0 = time.perf_counter()
        self._load()
        for batch, seq in self._warmup_shapes():
            ones = np.ones((batch, seq), dtype=np.int64)
            self._infer({"input_ids": ones, "attention_mask": ones, "token_type_ids": np.zeros_like(ones)})
        self.load_seconds = time.perf_counter() - t0
        self._loaded = True
        return self

    def infer(self, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        """Run one batch. Inputs are int64 [batch, seq] arrays named as in the spec."""
        return self._infer(self._checked(inputs))

    def submit(self, inputs: Mapping[str, np.ndarray]):
        """Start one batch and return a handle whose `.result()` gives what `infer` would.

        Engines with `pipeline_depth > 1` (TensorRT) return before the device finishes, so the
        caller can prepare and submit the next batch meanwhile; the default runs synchronously.
        """
        return self._submit(self._checked(inputs))

    def _checked(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if not self._loaded:
            raise RuntimeError(f"{type(self).__name__}.infer() called before load()")
        names = self.spec.input_names
        missing = [n for n in names if n not in inputs]
        if missing:
            raise ValueError(f"engine expects inputs {list(names)}, missing {missing}")
        shapes = {n: inputs[n].shape for n in names}
        if len(set(shapes.values())) != 1 or len(next(iter(shapes.values()))) != 2:
            raise ValueError(f"inputs must share one [batch, seq] shape, got {shapes}")
        return {n: np.ascontiguousarray(inputs[n], dtype=np.int64) for n in names}

    def close(self) -> None:
        if self._loaded:
            self._close()
            self._loaded = False

    def __enter__(self) -> "Engine":
        return self.load()

    def __exit__(self, *exc) -> None:
        self.close()

    def _warmup_shapes(self) -> list[tuple[int, int]]:
        return [(1, 8)]

    @abc.abstractmethod
    def _load(self) -> None: ...

    @abc.abstractmethod
    def _infer(self, feed: Mapping[str, np.ndarray]) -> np.ndarray: ...

    def _submit(self, feed: Mapping[str, np.ndarray]) -> "Done":
        return Done(self._infer(feed))

    def _close(self) -> None:
        pass


class Done:
    """A finished batch, for engines that run synchronously."""

    def __init__(self, value: np.ndarray):
        self._value = value

    def result(self) -> np.ndarray:
        return self._value
