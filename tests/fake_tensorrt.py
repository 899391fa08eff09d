"""A CPU emulation of the TensorRT 10 runtime and of the few torch.cuda calls TensorRTEngine makes.

FakeTensorRT runs a "plan" (JSON naming an ONNX graph and its profiles) with ONNX Runtime on
the CPU, reading and writing tensors through the raw addresses given to `set_tensor_address`,
and enforcing what TensorRT enforces: an input shape must lie in the active optimisation
profile, every I/O tensor needs an address, input dtypes are the plan's (int32 here, so the
engine's conversion is exercised). FakeCuda makes streams and events no-ops and "device" memory
ordinary CPU memory.

What it proves: TensorRTEngine's Python path (plan cache use, profile selection and switching,
chunking batches larger than a profile, double-buffered slots, dtype handling, output
collection) produces the right numbers. What it does not: anything about real TensorRT
(parsing, kernels, fp16 numerics, stream concurrency, memory) or CUDA.
"""
from __future__ import annotations

import contextlib
import json
import types

import numpy as np
import torch


class FakeCuda:
    """torch.cuda as TensorRTEngine uses it, on the CPU."""

    def __init__(self):
        self.buffers: list[torch.Tensor] = []

    # torch.cuda namespace
    def is_available(self):
        return True

    def device_count(self):
        return 1

    def set_device(self, device):
        pass

    def get_device_capability(self, device=None):
        return (8, 6)

    def get_device_name(self, device=None):
        return "NVIDIA A10G"

    class Stream:
        _next = 1

        def __init__(self, device=None):
            self.cuda_stream = FakeCuda.Stream._next
            FakeCuda.Stream._next += 1

        def synchronize(self):
            pass

        def wait_event(self, event):
            assert event.recorded, "waiting on an event that was never recorded"

    class Event:
        def __init__(self):
            self.recorded = False

        def record(self, stream=None):
            self.recorded = True

        def synchronize(self):
            pass

    @staticmethod
    def stream(s):
        return contextlib.nullcontext()

    # memory
    def empty(self, *shape, dtype=None, device=None, pin_memory=False):
        """Like cudaMalloc, at a 256-byte aligned address (CPU tensors are only 64-byte aligned)."""
        shape = shape[0] if isinstance(shape[0], tuple) else shape
        count = int(np.prod(shape))
        spare = torch.empty(count + 256, dtype=dtype)
        skip = (-spare.data_ptr() % 256) // spare.element_size()
        t = spare[skip:skip + count].view(shape)
        self.buffers.append(t)
        return t

    def resolve(self, address: int, dtype: torch.dtype, count: int) -> torch.Tensor:
        """The `count` elements of `dtype` starting at a raw address inside a buffer we handed out."""
        for buf in self.buffers:
            start = buf.data_ptr()
            end = start + buf.numel() * buf.element_size()
            if start <= address < end:
                assert buf.dtype == dtype, f"address holds {buf.dtype}, the plan expects {dtype}"
                offset = (address - start) // buf.element_size()
                assert offset + count <= buf.numel(), "tensor runs past the end of its buffer"
                return buf.reshape(-1)[offset:offset + count]
        raise AssertionError(f"address {address:#x} is not in any device buffer")


def fake_torch(cuda: FakeCuda):
    """A module that is torch, except for torch.cuda, torch.empty and torch.device."""
    module = types.ModuleType("torch")
    module.__dict__.update({k: getattr(torch, k) for k in dir(torch) if not k.startswith("__")})
    module.__version__ = torch.__version__
    module.cuda = cuda
    module.empty = cuda.empty
    module.device = lambda kind, index=None: f"{kind}:{index}"
    module.version = types.SimpleNamespace(cuda="12.fake")
    return module


class FakeTensorRT(types.ModuleType):
    """The `tensorrt` module surface TensorRTEngine's runtime uses."""

    class DataType:
        INT64, INT32, FLOAT, HALF, BF16 = "INT64", "INT32", "FLOAT", "HALF", "BF16"

    class TensorIOMode:
        INPUT, OUTPUT = "INPUT", "OUTPUT"

    class Logger:
        WARNING = 2

        def __init__(self, level=None):
            pass

    def __init__(self, cuda: FakeCuda, input_dtype: str = "INT32"):
        super().__init__("tensorrt")
        self.__version__ = "10.9.0.34"
        self.cuda = cuda
        self.input_dtype = input_dtype
        self.executions: list[tuple[int, tuple[int, int]]] = []  # (profile, input shape)
        outer = self

        class Runtime:
            def __init__(self, logger):
                pass

            def deserialize_cuda_engine(self, data: bytes):
                return FakeEngine(outer, json.loads(data))

        self.Runtime = Runtime

    @staticmethod
    def plan_bytes(onnx_path, profiles, inputs, output) -> bytes:
        """What our fake build writes: enough for FakeEngine to run the graph."""
        return json.dumps({"onnx": str(onnx_path), "inputs": list(inputs), "output": output,
                           "profiles": [{"min": list(p.min), "max": list(p.max)} for p in profiles]}).encode()


class FakeEngine:
    def __init__(self, trt: FakeTensorRT, plan: dict):
        import onnxruntime as ort

        self.trt, self.plan = trt, plan
        self.session = ort.InferenceSession(plan["onnx"], providers=["CPUExecutionProvider"])
        self.width = self.session.get_outputs()[0].shape[-1]
        self.names = plan["inputs"] + [plan["output"]]

    @property
    def num_io_tensors(self):
        return len(self.names)

    def get_tensor_name(self, i):
        return self.names[i]

    def get_tensor_mode(self, name):
        return self.trt.TensorIOMode.OUTPUT if name == self.plan["output"] else self.trt.TensorIOMode.INPUT

    def get_tensor_dtype(self, name):
        return self.trt.DataType.FLOAT if name == self.plan["output"] else getattr(self.trt.DataType, self.trt.input_dtype)

    def get_tensor_shape(self, name):
        return (-1, self.width) if name == self.plan["output"] else (-1, -1)

    def create_execution_context(self):
        return FakeContext(self)


class FakeContext:
    def __init__(self, engine: FakeEngine):
        self.engine = engine
        self.profile = 0
        self.shapes: dict = {}
        self.addresses: dict = {}

    def set_optimization_profile_async(self, index, stream):
        assert 0 <= index < len(self.engine.plan["profiles"])
        self.profile = index
        self.shapes = {}  # TensorRT: shapes must be set again after a profile switch
        return True

    def set_input_shape(self, name, shape):
        p = self.engine.plan["profiles"][self.profile]
        if not all(lo <= s <= hi for lo, s, hi in zip(p["min"], shape, p["max"])):
            raise AssertionError(f"shape {shape} outside profile {self.profile} {p}")
        self.shapes[name] = tuple(shape)
        return True

    def set_tensor_address(self, name, address):
        if address % 256:
            return False  # TensorRT refuses it and keeps the previous address
        self.addresses[name] = address
        return True

    def execute_async_v3(self, stream):
        trt, cuda = self.engine.trt, self.engine.trt.cuda
        inputs = self.engine.plan["inputs"]
        assert set(self.shapes) == set(inputs), f"input shapes set: {sorted(self.shapes)}"
        shape = self.shapes[inputs[0]]
        in_dtype = torch.int32 if trt.input_dtype == "INT32" else torch.int64
        n = shape[0] * shape[1]
        feed = {name: cuda.resolve(self.addresses[name], in_dtype, n).reshape(shape).numpy().astype(np.int64)
                for name in inputs}
        out = self.engine.session.run(None, feed)[0]
        target = cuda.resolve(self.addresses[self.engine.plan["output"]], torch.float32, out.size)
        target.copy_(torch.from_numpy(out.reshape(-1)))
        trt.executions.append((self.profile, shape))
        return True
