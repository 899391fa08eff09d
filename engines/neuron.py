"""AWS Neuron: one traced TorchScript per (batch, seq) bucket, on one NeuronCore.

`neuronx` runs torch-neuronx artifacts on Inf2/Trn1 (torch-neuronx 2.9.x, the primary path);
`neuron` runs torch-neuron artifacts on Inf1 (legacy; its own Python 3.10 environment with torch
1.13.1, pyproject.toml's inf1 extra). Both pin the process to the task's NeuronCore by setting
NEURON_RT_VISIBLE_CORES *before* the Neuron runtime is imported: the runtime reads it once per
process, so one Python worker serves one core for its whole life (docs/accelerators.md).

Inputs are padded on the sequence axis to the smallest compiled bucket that fits (the scorer
already does this for static engines); the batch axis is handled by the runtime's dynamic
batching, which splits and pads dim 0 to the compiled batch size. Both switch it on at compile
time, in the saved module (`torch_neuronx.dynamic_batch` before torch.jit.save,
`dynamic_batch_size=True` in the Inf1 trace; compiler/accel_compile.py), so a loaded bucket is
used as it is.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from typing import Mapping

import numpy as np

from engines import hardware, parity
from engines.base import Engine
from engines.errors import EngineUnavailableError, ParityError, TargetMismatchError

VISIBLE = "NEURON_RT_VISIBLE_CORES"


def bucket_file(folder_name: str, batch: int, seq: int) -> str:
    return f"{folder_name}/b{batch}_s{seq}.pt"


def versions_compatible(built: str, installed: str) -> bool:
    """Same torch major.minor and same Neuron release major.minor.

    torch-neuronx versions read <torch version>.<neuron release>.<build>, e.g. 2.9.0.2.15.32035;
    torch-neuron (Inf1) ones read <torch>.<neuron> too, e.g. 1.13.1.2.11.13.0. Traced models are
    tied to the SDK that compiled them, so both parts must agree.
    """
    b, i = built.split("."), installed.split(".")
    return len(b) >= 5 and len(i) >= 5 and b[:2] == i[:2] and b[3:5] == i[3:5]


def pin_core(address: str | None, runtime_module: str, environ=os.environ, modules=sys.modules) -> str | None:
    """Set NEURON_RT_VISIBLE_CORES for `address` before the runtime loads; return the value in force.

    Raises EngineUnavailableError when the runtime is already initialised on another core in
    this process, or when the core is outside what the node allotted (the Kubernetes device
    plugin sets the variable for the container).
    """
    current = environ.get(VISIBLE)
    if runtime_module in modules:  # the runtime read the variable when it was imported
        if address is not None and current is not None and address not in hardware.parse_core_list(current):
            raise EngineUnavailableError(
                f"this Python worker already runs the Neuron runtime on NeuronCore(s) {current}; it cannot move to "
                f"core {address}. Give each executor one NeuronCore (spark.executor.resource.neuroncore.amount=1, "
                f"spark.task.resource.neuroncore.amount=1), see docs/accelerators.md")
        return current
    if address is None:
        if current is None:
            environ["NEURON_RT_NUM_CORES"] = "1"  # one model per core: the runtime takes one free core
        return current
    if current is not None and current != address:
        allotted = hardware.parse_core_list(current)
        if address not in allotted:
            raise EngineUnavailableError(
                f"Spark assigned NeuronCore {address}, but {VISIBLE}={current} was set for this container; "
                f"the discovery script must report the cores the container was given")
    environ[VISIBLE] = address
    return address


class NeuronBase(Engine):
    """Shared by NeuronxEngine and NeuronEngine; subclasses name the runtime module and folder."""

    device_kind = "neuron"
    device_words = "NeuronCore"
    spark_resource = "neuroncore"
    default_batch_tokens = 8192
    static_shapes = True
    runtime_module: str
    distribution: str
    folder_name: str

    def _warmup_shapes(self) -> list[tuple[int, int]]:
        return list(self.manifest.buckets)  # every NEFF is loaded and run once before any row

    def _import_runtime(self):
        self.visible_cores = pin_core(self.device.address, self.runtime_module)
        try:
            import torch
            module = importlib.import_module(self.runtime_module)
        except ImportError as e:
            raise self.missing_runtime(f"backend {self.backend}", e) from e
        return torch, module

    @classmethod
    def missing_runtime(cls, action: str, error: ImportError) -> EngineUnavailableError:
        """What `action` (scoring, or compiling in compiler/accel_compile.py) says without the runtime."""
        return EngineUnavailableError(f"{action} needs {cls.distribution} ({error}); {cls.install_hint()}")

    def _installed_version(self, module) -> str:
        version = getattr(module, "__version__", None)
        if version:
            return str(version)
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    def _check_target(self, installed: str) -> None:
        target = self.manifest.target
        if target.get("device") != "neuron" or target.get("runtime") != self.distribution:
            raise TargetMismatchError(f"artifact target {target} is not a {self.distribution} build")
        built = str(target.get("version", ""))
        if not versions_compatible(built, installed):
            raise TargetMismatchError(
                f"artifact {self.manifest.model_id} was traced with {self.distribution} {built}; this worker has "
                f"{installed}. Recompile it with the executors' Neuron SDK (python -m compiler --backend "
                f"{self.backend} ...)")
        instance = hardware.instance_type()
        want = target.get("instance")
        if instance and want and hardware.neuron_generation(instance) != hardware.neuron_generation(want):
            raise TargetMismatchError(f"artifact was compiled for {want} (NeuronCore {hardware.neuron_generation(want)}); "
                                      f"this is a {instance}")

    def _load(self) -> None:
        torch, module = self._import_runtime()
        self._torch = torch
        self._check_target(self._installed_version(module))
        torch.set_num_threads(self.threads)
        self._models: dict[int, tuple[int, object]] = {}
        try:
            for batch, seq in sorted(self.manifest.buckets, key=lambda b: b[1]):
                model = torch.jit.load(str(self.folder / bucket_file(self.folder_name, batch, seq)))
                if seq not in self._models or batch > self._models[seq][0]:
                    self._models[seq] = (batch, model)
            self._seqs = sorted(self._models)
            record = parity.check_stored(self._infer, self.folder, self.manifest.task, self.manifest.precision)
        except Exception as e:  # noqa: BLE001 - say plainly when there is no Neuron device at all
            if not hardware.neuron_device_present():
                raise EngineUnavailableError(
                    f"backend {self.backend} could not load {self.manifest.model_id} and this machine has no Neuron "
                    f"device (/dev/neuron*, neuron-ls): {type(e).__name__}: {e}. Run it on an "
                    f"{'Inf1' if self.backend == 'neuron' else 'Inf2/Trn1'} executor, or use --backend onnx "
                    f"with an ONNX artifact on the CPU.") from e
            raise
        self.parity_record = record
        if record is not None and not record["passed"]:
            raise ParityError(f"{self.backend} artifact {self.manifest.model_id} failed parity on this NeuronCore: {record}")

    def _infer(self, feed: Mapping[str, np.ndarray]) -> np.ndarray:
        torch = self._torch
        n, seq = feed[self.manifest.inputs[0]].shape
        fit = [s for s in self._seqs if s >= seq]
        if not fit:
            raise ValueError(f"a [{n}, {seq}] batch exceeds the largest compiled bucket (seq {self._seqs[-1]})")
        bucket_seq = fit[0]
        _, model = self._models[bucket_seq]
        args = []
        for name in self.manifest.inputs:
            x = feed[name]
            if seq < bucket_seq:
                x = np.pad(x, ((0, 0), (0, bucket_seq - seq)))  # zeros: [PAD] ids, mask 0
            args.append(torch.from_numpy(np.ascontiguousarray(x, dtype=np.int64)))
        with torch.no_grad():
            out = model(*args)
        if isinstance(out, (tuple, list)):
            out = out[0]
        return out.float().numpy()

    def _close(self) -> None:
        self._models = {}


class NeuronxEngine(NeuronBase):
    """torch-neuronx on Inf2 / Trn1 (NeuronCore-v2)."""

    backend = "neuronx"
    compile_stage = "compiler.accel_compile:NeuronxStage"
    precisions = ("bf16", "fp16", "fp32")
    runtime_module = "torch_neuronx"
    distribution = "torch-neuronx"
    folder_name = "neuronx"
    @staticmethod
    def install_hint() -> str:
        return ("install the wheel's neuronx extra (torch-neuronx and neuronx-cc of one Neuron release, "
                "pyproject.toml) with the Neuron pip repository as an extra index into the executors' Python 3.11 "
                "environment; see docs/accelerators.md")


class NeuronEngine(NeuronBase):
    """torch-neuron on Inf1 (NeuronCore-v1), legacy: traced with dynamic_batch_size=True."""

    backend = "neuron"
    compile_stage = "compiler.accel_compile:Inf1Stage"
    precisions = ("bf16", "fp16")
    runtime_module = "torch_neuron"
    distribution = "torch-neuron"
    folder_name = "neuron"
    @staticmethod
    def install_hint() -> str:
        """torch-neuron 1.13.1 pins torch 1.13.1 and has no build past Python 3.10, so it cannot join a
        compile or neuronx environment (torch >= 2.3); say so, and what this one has."""
        import torch

        here = f"Python {sys.version_info[0]}.{sys.version_info[1]} with torch {torch.__version__}"
        return (f"torch-neuron (Inf1) installs only into its own Python 3.10 environment with torch 1.13.1, "
                f"and this is {here}: there, pip install this project with its inf1 extra ('.[inf1]', not "
                f"'.[compile]') and the Neuron pip repository as an extra index; see docs/accelerators.md, Inf1")
