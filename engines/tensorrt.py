"""TensorRT on an NVIDIA GPU: one plan per (TensorRT version, GPU architecture, precision, profiles).

The artifact carries the ONNX graph and a build spec (`tensorrt/build.json`, one optimisation
profile per sequence bucket). On first use an executor builds the plan for its GPU and caches
it on local disk (ACCEL_SCORING_CACHE, default /tmp/accel-scoring-cache), under a file lock so
that concurrent workers build once; `compile --build` on a GPU box ships plans in the artifact.

Runtime (TensorRT 10 API, engines.md §3.3): `set_input_shape` / `set_tensor_address` /
`execute_async_v3` on a non-default stream, torch CUDA tensors as device buffers and pinned host
staging buffers. `submit()` copies a batch to the GPU on a copy stream while the previous batch
computes, so the scorer's next batch overlaps the current one (pipeline_depth = 2).

`import engines.tensorrt` needs neither torch nor tensorrt; `_load()` imports them and raises
EngineUnavailableError naming what is missing and the fix.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping

import numpy as np

from engines import parity, trt_build
from engines.artifact import sha256_file
from engines.base import Engine, EngineSpec
from engines.errors import EngineUnavailableError, ParityError, TargetMismatchError
from engines.hardware import cuda_ordinal

INSTALL_HINT = ("install the project's wheel with its gpu extra (tensorrt-cu12 10.x) in the executors' Python, "
                "plus a CUDA build of torch: README.md, 'Installing on executors'")


def check_target(target: Mapping, trt_version: str, compute_capability: tuple[int, int], precision: str) -> None:
    """Raise TargetMismatchError when this GPU or TensorRT cannot run the artifact's build spec."""
    if target.get("device") != "cuda":
        raise TargetMismatchError(f"artifact target device is {target.get('device')!r}, not 'cuda'")
    need = tuple(target.get("min_compute_capability") or trt_build.MIN_COMPUTE_CAPABILITY.get(precision, (7, 5)))
    if tuple(compute_capability) < need:
        raise TargetMismatchError(
            f"this GPU has compute capability {compute_capability[0]}.{compute_capability[1]}; the artifact's "
            f"{precision} build needs >= {need[0]}.{need[1]} (bf16 needs Ampere or newer; T4 is 7.5)")
    lo, hi = target.get("tensorrt_min"), target.get("tensorrt_below")
    have = trt_build.version_tuple(trt_version)
    if lo and have < trt_build.version_tuple(lo) or hi and have >= trt_build.version_tuple(hi):
        raise TargetMismatchError(f"TensorRT {trt_version} is installed; the artifact was compiled for "
                                  f">= {lo}, < {hi}")


def _import_runtime():
    missing = []
    try:
        import torch
    except ImportError:
        torch = None
        missing.append("torch")
    try:
        import tensorrt as trt
    except ImportError:
        trt = None
        missing.append("tensorrt")
    if missing:
        raise EngineUnavailableError(f"backend tensorrt needs {' and '.join(missing)}, not importable in "
                                     f"{sys.executable}; {INSTALL_HINT}")
    if not torch.cuda.is_available():
        raise EngineUnavailableError(
            "backend tensorrt needs a CUDA GPU, and torch.cuda.is_available() is False here "
            f"(torch {torch.__version__}, CUDA build {torch.version.cuda}); run on a GPU executor, check "
            "`nvidia-smi`, and install a CUDA build of torch. To score on the CPU use --backend onnx.")
    return trt, torch


class _Slot:
    """One set of staging and device buffers; two slots let one batch copy while another computes."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device
        self.rows = 0
        self.capacity = 0
        self.copied = torch.cuda.Event()
        self.done = torch.cuda.Event()
        self.used = False
        self.pending = None

    def ensure(self, tokens: int, rows: int, dtypes: Mapping[str, object], out_width: int, out_dtype) -> None:
        torch = self.torch
        if tokens > self.capacity or rows > self.rows:
            self.capacity, self.rows = max(tokens, self.capacity), max(rows, self.rows)
            self.host = {n: torch.empty(self.capacity, dtype=dt, pin_memory=True) for n, dt in dtypes.items()}
            self.dev = {n: torch.empty(self.capacity, dtype=dt, device=self.device) for n, dt in dtypes.items()}
            self.host_out = torch.empty((self.rows, out_width), dtype=out_dtype, pin_memory=True)
            self.dev_out = torch.empty((self.rows, out_width), dtype=out_dtype, device=self.device)


class _Pending:
    def __init__(self, slot: _Slot, rows: int):
        self.slot, self.rows = slot, rows
        self._value = None

    def result(self) -> np.ndarray:
        if self._value is None:
            self.slot.done.synchronize()
            self._value = self.slot.host_out[: self.rows].float().numpy().copy()
            self.slot.pending = None
        return self._value


class TensorRTEngine(Engine):
    backend = "tensorrt"
    pipeline_depth = 2

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.build_spec = trt_build.BuildSpec.read(self.folder)
        self.profiles = list(self.build_spec.profiles)
        self.plan_source: str | None = None
        self.parity_record: dict | None = None

    @property
    def spec(self) -> EngineSpec:
        return EngineSpec(input_names=self.manifest.inputs, max_seq_len=self.manifest.max_seq_len,
                          buckets=tuple(p.opt for p in self.profiles), static_shapes=False)

    def _warmup_shapes(self) -> list[tuple[int, int]]:
        return [p.opt for p in self.profiles]

    def _load(self) -> None:
        trt, torch = _import_runtime()
        self._trt, self._torch = trt, torch
        ordinal = cuda_ordinal(self.device.address, os.environ.get("CUDA_VISIBLE_DEVICES"), torch.cuda.device_count())
        self._cuda = torch.device("cuda", ordinal)
        torch.cuda.set_device(self._cuda)
        cc = torch.cuda.get_device_capability(self._cuda)
        check_target(self.manifest.target, trt.__version__, cc, self.build_spec.precision)
        onnx_path = self.folder / self.build_spec.onnx
        onnx_sha = self.manifest.files.get(self.build_spec.onnx) or sha256_file(onnx_path)
        key = trt_build.plan_cache_key(trt.__version__, torch.cuda.get_device_name(self._cuda), cc, self.build_spec,
                                       onnx_sha)
        logger = trt.Logger(trt.Logger.WARNING)
        names = list(self.manifest.inputs)
        path, self.plan_source = trt_build.cached_plan(
            key, lambda: trt_build.build_serialized(trt, onnx_path, self.build_spec, names, logger),
            prebuilt_dir=self.folder / trt_build.PLANS_DIR)
        self._runtime = trt.Runtime(logger)
        self._engine = self._runtime.deserialize_cuda_engine(path.read_bytes())
        if self._engine is None:
            raise TargetMismatchError(f"TensorRT {trt.__version__} could not deserialize {path}; delete it to rebuild")
        self._context = self._engine.create_execution_context()
        io = [self._engine.get_tensor_name(i) for i in range(self._engine.num_io_tensors)]
        inputs = [n for n in io if self._engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        if sorted(inputs) != sorted(names):
            raise TargetMismatchError(f"plan inputs {inputs} differ from the manifest's {names}")
        self._output = self.manifest.output
        self._dtypes = {n: _torch_dtype(torch, trt, self._engine.get_tensor_dtype(n)) for n in names}
        self._out_dtype = _torch_dtype(torch, trt, self._engine.get_tensor_dtype(self._output))
        self._out_width = int(self._engine.get_tensor_shape(self._output)[-1])
        self._compute = torch.cuda.Stream(device=self._cuda)  # never the default stream (engines.md §3.3)
        self._copy = torch.cuda.Stream(device=self._cuda)
        self._slots = [_Slot(torch, self._cuda), _Slot(torch, self._cuda)]
        self._next_slot = 0
        self._active_profile = None
        self._gate_parity()

    def _gate_parity(self) -> None:
        """Plans are built where the artifact runs, so their parity is checked here, every load."""
        if self.manifest.parity.get("passed") is True and self.plan_source == "artifact":
            return  # checked by compile --build on this same plan
        record = parity.check_stored(self._infer, self.folder, self.manifest.task, self.build_spec.precision)
        self.parity_record = record
        if record is not None and not record["passed"]:
            raise ParityError(f"TensorRT {self.build_spec.precision} plan for {self.manifest.model_id} failed parity "
                              f"on this GPU: {record}")

    def _submit(self, feed: Mapping[str, np.ndarray]) -> _Pending:
        torch = self._torch
        n, seq = feed[self.manifest.inputs[0]].shape
        index = trt_build.profile_index(self.profiles, seq)
        profile = self.profiles[index]
        slot = self._slots[self._next_slot]
        self._next_slot ^= 1
        if slot.pending is not None:
            slot.pending.result()  # its outputs are read before the buffers are reused
        if slot.used:
            slot.done.synchronize()
        slot.ensure(n * seq, n, self._dtypes, self._out_width, self._out_dtype)
        for name, dt in self._dtypes.items():
            staged = slot.host[name][: n * seq]
            staged.copy_(torch.from_numpy(np.ascontiguousarray(feed[name])).reshape(-1))
        with torch.cuda.stream(self._copy):
            for name in self._dtypes:
                slot.dev[name][: n * seq].copy_(slot.host[name][: n * seq], non_blocking=True)
            slot.copied.record(self._copy)
        self._compute.wait_event(slot.copied)
        ctx, stream = self._context, self._compute.cuda_stream
        if self._active_profile != index:
            ctx.set_optimization_profile_async(index, stream)
            self._active_profile = index
        for start in range(0, n, profile.max_batch):
            rows = min(profile.max_batch, n - start)
            for name in self._dtypes:
                view = slot.dev[name][start * seq:(start + rows) * seq]
                ctx.set_input_shape(name, (rows, seq))
                ctx.set_tensor_address(name, view.data_ptr())
            ctx.set_tensor_address(self._output, slot.dev_out[start:start + rows].data_ptr())
            if not ctx.execute_async_v3(stream):
                raise RuntimeError(f"TensorRT execute_async_v3 failed on a [{rows}, {seq}] batch")
        with torch.cuda.stream(self._compute):
            slot.host_out[:n].copy_(slot.dev_out[:n], non_blocking=True)
            slot.done.record(self._compute)
        slot.used = True
        slot.pending = _Pending(slot, n)
        return slot.pending

    def _infer(self, feed: Mapping[str, np.ndarray]) -> np.ndarray:
        return self._submit(feed).result()

    def _close(self) -> None:
        if hasattr(self, "_compute"):
            self._compute.synchronize()
        for attr in ("_slots", "_context", "_engine", "_runtime"):
            self.__dict__.pop(attr, None)


def _torch_dtype(torch, trt, dtype):
    """torch dtype for a TensorRT tensor dtype (inputs may be int64 or int32: engines.md §7.4)."""
    names = {"INT64": torch.int64, "INT32": torch.int32, "FLOAT": torch.float32, "HALF": torch.float16,
             "BF16": torch.bfloat16}
    for name, torch_dtype in names.items():
        if getattr(trt.DataType, name, None) == dtype:
            return torch_dtype
    raise TargetMismatchError(f"unexpected TensorRT tensor dtype {dtype}")
