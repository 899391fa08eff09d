"""PyTorch on an NVIDIA GPU, with nothing but a CUDA build of torch: no TensorRT, no transformers.

The artifact is device- and torch-version-independent (engines/torch_bert.py: an architecture
file and a state dict in the compile precision), so it is compiled on any machine and loaded by
any torch >= TORCH_MIN. On load the worker puts it on its GPU, checks it against the fp32
transformers outputs stored at compile time (the same gate as TensorRT plans: fp16 label
agreement >= 99.5% and p99 |score diff| <= 0.01, bf16 <= 0.02), and scores only if it passes.

Per batch: int64 ids go into pinned host buffers and to the GPU on a copy stream while the
previous batch computes (pipeline_depth = 2, engines/cuda_slots.py); the forward pass runs on a
compute stream, replayed from a CUDA graph captured once per padded (rows, seq) shape where
capture works (engines/cuda_graphs.py), and its float32 output comes back through a pinned
buffer. A batch with no padding runs attention without a mask, which lets
scaled_dot_product_attention pick its flash kernel.

The same artifact runs on the CPU (`--device cpu`): no streams or graphs, torch's CPU kernels
in the artifact's precision. That is how make test runs it; the GPU path is checked by
bench/device_check.py.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Mapping

import numpy as np

from engines import parity
from engines.base import Device, Done, Engine
from engines.cuda_slots import Pending, Slot
from engines.errors import EngineUnavailableError, ParityError, TargetMismatchError
from engines.hardware import cuda_ordinal, local_gpus, number_gpus_like_nvidia_smi

TORCH_MIN = (2, 1)  # load_state_dict(assign=True), used to load weights without a second copy
# The oldest GPUs each precision runs well on: every CUDA torch wheel runs fp16 on a T4 (7.5);
# bf16 matmuls need Ampere (8.0) or newer.
MIN_COMPUTE_CAPABILITY = {"fp16": (7, 5), "fp32": (7, 5), "bf16": (8, 0)}
INSTALL_HINT = ("install a CUDA build of torch in the executors' Python (README.md, 'Installing on executors'); "
                "to score on the CPU pass --device cpu")


def _no_torch() -> str:
    return f"backend torch-cuda needs torch, not importable in {sys.executable}; {INSTALL_HINT}"


def _import_torch():
    number_gpus_like_nvidia_smi()  # before torch can initialise CUDA
    try:
        import torch
    except ImportError:
        raise EngineUnavailableError(_no_torch()) from None
    return torch


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("+")[0].split(".")[:2] if p.isdigit())


class _Pending(Pending):
    """A batch in flight: its output lands in the slot's pinned host buffer."""

    def __init__(self, slot: Slot, rows: int, width: int):
        super().__init__(slot)
        self.rows, self.width = rows, width

    def read(self) -> np.ndarray:
        return self.slot.host["output"][:self.rows * self.width].view(self.rows, self.width).numpy().copy()


class TorchCudaEngine(Engine):
    backend = "torch-cuda"
    device_kind = "cuda"
    device_words = "NVIDIA GPU"
    spark_resource = "gpu"
    runs_on_cpu = True
    precisions = ("fp16", "bf16", "fp32")
    default_batch_tokens = 8192
    compile_stage = "compiler.torch_cuda_compile:TorchCudaStage"
    pipeline_depth = 2

    def __init__(self, *args, cuda_graphs: bool = True, max_graphs: int = 64, **kwargs):
        """`cuda_graphs`: replay a captured graph per padded shape (up to `max_graphs`); off: run eagerly."""
        super().__init__(*args, **kwargs)
        self.cuda_graphs, self.max_graphs = cuda_graphs, max_graphs
        self.parity_record: dict | None = None
        self.graphs = None  # engines.cuda_graphs.CudaGraphs on a GPU with cuda_graphs on

    @classmethod
    def unavailable(cls, device: Device) -> str | None:
        if importlib.util.find_spec("torch") is None:
            return _no_torch()
        if device.kind != "cpu" and not local_gpus():
            return ("backend torch-cuda needs an NVIDIA GPU, and this machine has none (nvidia-smi, /dev/nvidia*); "
                    "run it where Spark's executors have one, or score on this CPU with --device cpu")
        return None

    def _load(self) -> None:
        from engines import torch_bert

        torch = self._torch = _import_torch()
        if _version(torch.__version__) < TORCH_MIN:
            raise EngineUnavailableError(f"backend torch-cuda needs torch >= {'.'.join(map(str, TORCH_MIN))}, "
                                         f"found {torch.__version__}; {INSTALL_HINT}")
        precision = self.manifest.precision
        if self.device.kind == "cpu":
            torch.set_num_threads(self.threads)
            self._dev = torch.device("cpu")
        else:
            self._dev = self._bind_gpu(torch, precision)
        self._model = torch_bert.load(self.folder, precision, self._dev)
        self._width = int(self._model.shape.num_labels if self._model.shape.head == "classifier"
                          else self._model.shape.hidden_size)
        if self.device.kind != "cpu":
            self._compute = torch.cuda.Stream(device=self._dev)  # not the default stream, which waits for all others
            self._copy = torch.cuda.Stream(device=self._dev)
            self._slots = [Slot(torch, self._dev), Slot(torch, self._dev)]
            self._next_slot = 0
        self._gate_parity()  # eagerly: the graphs captured later replay the same kernels
        if self.device.kind != "cpu" and self.cuda_graphs:
            from engines.cuda_graphs import CudaGraphs

            self.graphs = CudaGraphs(torch, self._forward, self._dev, self._compute, limit=self.max_graphs)

    def _bind_gpu(self, torch, precision: str):
        if not torch.cuda.is_available():
            raise EngineUnavailableError(
                "backend torch-cuda needs a CUDA GPU, and torch.cuda.is_available() is False here "
                f"(torch {torch.__version__}, CUDA build {torch.version.cuda}); run on a GPU executor, check "
                f"`nvidia-smi`, and {INSTALL_HINT}")
        ordinal = cuda_ordinal(self.device.address, os.environ.get("CUDA_VISIBLE_DEVICES"), torch.cuda.device_count())
        device = torch.device("cuda", ordinal)
        torch.cuda.set_device(device)
        have = tuple(torch.cuda.get_device_capability(device))
        need = MIN_COMPUTE_CAPABILITY[precision]
        if have < need:
            raise TargetMismatchError(
                f"{torch.cuda.get_device_name(device)} has compute capability {have[0]}.{have[1]}; a {precision} "
                f"torch-cuda artifact needs >= {need[0]}.{need[1]} (compile it with --precision fp16 for this GPU)")
        if precision == "fp32":  # fp32 means fp32: TF32 matmuls would move scores by more than fp32 parity allows
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        return device

    def _gate_parity(self) -> None:
        """On this device, every load: the compile machine's check says nothing about this GPU's kernels."""
        record = parity.check_stored(self._run_eager, self.folder, self.manifest.task, self.manifest.precision)
        if record is not None:
            record["device"] = str(self.device)
        self.parity_record = record
        if record is not None and not record["passed"]:
            raise ParityError(f"torch-cuda {self.manifest.precision} artifact {self.manifest.model_id} failed parity "
                              f"on {self.device}: {record}")

    def _forward(self, ids, mask, types, padded: bool):
        with self._torch.inference_mode():
            return self._model(ids, mask, types, padded)

    def _run_eager(self, feed: Mapping[str, np.ndarray]) -> np.ndarray:
        torch = self._torch
        ids, mask, types = (torch.from_numpy(np.ascontiguousarray(feed[n], dtype=np.int64)).to(self._dev)
                            for n in self.manifest.inputs)
        return self._forward(ids, mask, types, not bool(feed["attention_mask"].all())).cpu().numpy()

    def _submit(self, feed: Mapping[str, np.ndarray]):
        if self.device.kind == "cpu":
            return Done(self._run_eager(feed))
        torch = self._torch
        names = self.manifest.inputs
        rows, seq = feed[names[0]].shape
        padded = not bool(feed["attention_mask"].all())
        slot = self._slots[self._next_slot].claim()
        self._next_slot ^= 1
        size = rows * seq
        slot.ensure({**{n: size for n in names}, "output": rows * self._width},
                    {**{n: torch.int64 for n in names}, "output": torch.float32})
        for n in names:
            slot.host[n][:size].copy_(torch.from_numpy(np.ascontiguousarray(feed[n])).reshape(-1))
        with torch.cuda.stream(self._copy):
            for n in names:
                slot.dev[n][:size].copy_(slot.host[n][:size], non_blocking=True)
            slot.copied.record(self._copy)
        self._compute.wait_event(slot.copied)
        with torch.cuda.stream(self._compute):
            inputs = [slot.dev[n][:size].view(rows, seq) for n in names]
            out = self.graphs.run(inputs, padded) if self.graphs is not None else None
            if out is None:
                out = self._forward(*inputs, padded)
            slot.host["output"][:rows * self._width].copy_(out.reshape(-1), non_blocking=True)
            slot.done.record(self._compute)
        slot.used = True
        slot.pending = _Pending(slot, rows, self._width)
        return slot.pending

    def _infer(self, feed: Mapping[str, np.ndarray]) -> np.ndarray:
        return self._submit(feed).result()

    def _close(self) -> None:
        if hasattr(self, "_compute"):
            self._compute.synchronize()
        for attr in ("graphs", "_slots", "_model"):
            self.__dict__.pop(attr, None)
