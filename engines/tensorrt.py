"""TensorRT on an NVIDIA GPU: one plan per (TensorRT version, GPU, precision, profiles, graph).

The artifact carries the ONNX graph and a build spec (`tensorrt/build.json`, one optimisation
profile per sequence bucket). On first use an executor builds the plan for its GPU and caches
it on local disk (ACCEL_SCORING_CACHE, default /tmp/accel-scoring-cache), under a file lock so
that concurrent workers build once; `compile --build` on a GPU box ships plans in the artifact.

Runtime (the TensorRT 10 API, unchanged in 11): `set_input_shape` / `set_tensor_address` /
`execute_async_v3` on a non-default stream, torch CUDA tensors as device buffers and pinned host
staging buffers. `submit()` copies a batch to the GPU on a copy stream while the previous batch
computes, so the scorer's next batch overlaps the current one (pipeline_depth = 2).

`import engines.tensorrt` needs neither torch nor tensorrt; `_load()` imports them and raises
EngineUnavailableError naming what is missing and the fix.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from pathlib import Path
from typing import Mapping

import numpy as np

from engines import parity, trt_build
from engines.artifact import sha256_file
from engines.base import Device, Engine, EngineSpec
from engines.cuda_slots import Pending, Slot
from engines.errors import EngineCallError, EngineUnavailableError, ParityError, TargetMismatchError
from engines.hardware import cuda_ordinal, local_gpus, number_gpus_like_nvidia_smi

INSTALL_HINT = (f"install its gpu extra ({trt_build.TENSORRT_REQUIREMENT}) in the executors' Python, with "
                "`pip install -e '.[gpu]'` in a checkout or `pip install 'dist/accel_scoring-<version>-py3-none-any.whl[gpu]'` "
                "(make package), plus a CUDA 12 build of torch: README.md, 'Installing on executors'; "
                "to score on the CPU instead, use --backend onnx")


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


def _missing(modules: list[str]) -> str:
    return f"backend tensorrt needs {' and '.join(modules)}, not importable in {sys.executable}; {INSTALL_HINT}"


def _import_runtime():
    number_gpus_like_nvidia_smi()  # before torch can initialise CUDA
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
        raise EngineUnavailableError(_missing(missing))
    if not torch.cuda.is_available():
        raise EngineUnavailableError(
            "backend tensorrt needs a CUDA GPU, and torch.cuda.is_available() is False here "
            f"(torch {torch.__version__}, CUDA build {torch.version.cuda}); run on a GPU executor, check "
            "`nvidia-smi`, and install a CUDA build of torch. To score on the CPU use --backend onnx.")
    return trt, torch


ALIGN = 256  # bytes: TensorRT refuses a tensor address that is not a multiple of this


def chunks(rows: int, max_batch: int) -> list[tuple[int, int]]:
    """(first row, rows) of each chunk: a batch larger than its profile runs in several."""
    return [(start, min(max_batch, rows - start)) for start in range(0, rows, max_batch)]


def aligned(elements: int, itemsize: int) -> int:
    """`elements` rounded up to a whole number of ALIGN bytes.

    Chunk k of a tensor starts at k * aligned(chunk elements) in its slot buffer, so every
    chunk's address is one TensorRT accepts whatever the batch, sequence or label count.
    """
    step = ALIGN // itemsize
    return -(-elements // step) * step


class _Pending(Pending):
    def __init__(self, slot: Slot, output: str, parts: list[tuple[int, int]], stride: int, width: int):
        super().__init__(slot)
        self.output, self.parts, self.stride, self.width = output, parts, stride, width

    def read(self) -> np.ndarray:
        flat = self.slot.host[self.output]
        rows = [flat[k * self.stride:k * self.stride + n * self.width] for k, (_, n) in enumerate(self.parts)]
        return self.slot.torch.cat(rows).reshape(-1, self.width).float().numpy().copy()


class TensorRTEngine(Engine):
    backend = "tensorrt"
    device_kind = "cuda"
    device_words = "NVIDIA GPU"
    spark_resource = "gpu"
    precisions = trt_build.PRECISIONS
    default_batch_tokens = 8192
    compile_stage = "compiler.accel_compile:TensorRTStage"
    pipeline_depth = 2

    def __init__(self, *args, plan_cache: Path | None = None, **kwargs):
        """`plan_cache`: where built plans are kept; default trt_build.cache_root() (the node's cache)."""
        super().__init__(*args, **kwargs)
        self.plan_cache = plan_cache
        self.build_spec = trt_build.BuildSpec.read(self.folder)
        self.profiles = list(self.build_spec.profiles)
        self.plan_source: str | None = None
        self.parity_record: dict | None = None

    @classmethod
    def unavailable(cls, device: Device) -> str | None:
        missing = [m for m in ("torch", "tensorrt") if importlib.util.find_spec(m) is None]
        if missing:
            return _missing(missing)
        if not local_gpus():
            return ("backend tensorrt needs an NVIDIA GPU, and this machine has none (nvidia-smi, /dev/nvidia*); "
                    "run it where Spark's executors have one, or score on the CPU with --backend onnx")
        return None

    @property
    def spec(self) -> EngineSpec:
        return dataclasses.replace(super().spec, buckets=tuple(p.opt for p in self.profiles))

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
            root=self.plan_cache, prebuilt_dir=self.folder / trt_build.PLANS_DIR)
        self._runtime = trt.Runtime(logger)
        if self.build_spec.version_compatible:
            # A version-compatible plan carries its own lean runtime as host code, which a
            # Runtime refuses to deserialize unless allowed.
            self._runtime.engine_host_code_allowed = True
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
        self._compute = torch.cuda.Stream(device=self._cuda)  # not the default stream, which waits for all others
        self._copy = torch.cuda.Stream(device=self._cuda)
        self._slots = [Slot(torch, self._cuda), Slot(torch, self._cuda)]
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
        slot = self._slots[self._next_slot].claim()
        self._next_slot ^= 1
        out = self._output
        parts = chunks(n, self.profiles[index].max_batch)
        dtypes = {**self._dtypes, out: self._out_dtype}
        row = {**{name: seq for name in self._dtypes}, out: self._out_width}
        stride = {name: aligned(parts[0][1] * row[name], dt.itemsize) for name, dt in dtypes.items()}
        span = {name: (len(parts) - 1) * stride[name] + parts[-1][1] * row[name] for name in dtypes}
        slot.ensure(span, dtypes)
        for name in self._dtypes:
            given = torch.from_numpy(np.ascontiguousarray(feed[name])).reshape(-1)
            for k, (start, rows) in enumerate(parts):
                at = k * stride[name]
                slot.host[name][at:at + rows * seq].copy_(given[start * seq:(start + rows) * seq])
        with torch.cuda.stream(self._copy):
            for name in self._dtypes:
                slot.dev[name][:span[name]].copy_(slot.host[name][:span[name]], non_blocking=True)
            slot.copied.record(self._copy)
        self._compute.wait_event(slot.copied)
        ctx, stream = self._context, self._compute.cuda_stream
        if self._active_profile != index:
            _accepted(ctx.set_optimization_profile_async(index, stream),
                      f"optimisation profile {index} of {len(self.profiles)}")
            self._active_profile = index
        for k, (_, rows) in enumerate(parts):
            for name in self._dtypes:
                _accepted(ctx.set_input_shape(name, (rows, seq)),
                          f"input shape {name} {(rows, seq)} in profile {index} {self.profiles[index]}")
            for name in dtypes:
                address = slot.dev[name][k * stride[name]:].data_ptr()
                _accepted(ctx.set_tensor_address(name, address),
                          f"the address {address:#x} of {name} (it must be a multiple of {ALIGN} bytes)")
            if not ctx.execute_async_v3(stream):
                raise RuntimeError(f"TensorRT execute_async_v3 failed on a [{rows}, {seq}] batch")
        with torch.cuda.stream(self._compute):
            slot.host[out][:span[out]].copy_(slot.dev[out][:span[out]], non_blocking=True)
            slot.done.record(self._compute)
        slot.used = True
        slot.pending = _Pending(slot, out, parts, stride[out], self._out_width)
        return slot.pending

    def _infer(self, feed: Mapping[str, np.ndarray]) -> np.ndarray:
        return self._submit(feed).result()

    def _close(self) -> None:
        if hasattr(self, "_compute"):
            self._compute.synchronize()
        for attr in ("_slots", "_context", "_engine", "_runtime"):
            self.__dict__.pop(attr, None)


def _accepted(ok: bool, what: str) -> None:
    """TensorRT's setters return False (and keep the previous value) instead of raising."""
    if not ok:
        raise EngineCallError(f"TensorRT refused {what}")


def _torch_dtype(torch, trt, dtype):
    """torch dtype for a TensorRT tensor dtype (the parser may keep int64 inputs or narrow them to int32)."""
    names = {"INT64": torch.int64, "INT32": torch.int32, "FLOAT": torch.float32, "HALF": torch.float16,
             "BF16": torch.bfloat16}
    for name, torch_dtype in names.items():
        if getattr(trt.DataType, name, None) == dtype:
            return torch_dtype
    raise TargetMismatchError(f"unexpected TensorRT tensor dtype {dtype}")
