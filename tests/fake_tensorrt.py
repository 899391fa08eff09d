"""CPU stand-ins for the `tensorrt` module (build and runtime) and the few torch.cuda calls TensorRTEngine makes.

FakeTensorRT runs a "plan" (JSON naming an ONNX graph and its profiles) with ONNX Runtime on
the CPU, reading and writing tensors through the raw addresses given to `set_tensor_address`,
and refusing what TensorRT refuses, the way TensorRT does (a False return, the previous state
kept): an input shape outside the active optimisation profile, a tensor address that is not
256-byte aligned, a profile index that does not exist. Every ONNX output is an I/O tensor that
needs an address, input dtypes are the plan's (int32 or int64), and a version-compatible plan
loads only into a Runtime with `engine_host_code_allowed`. FakeCuda makes streams and events
no-ops, "device" memory 256-byte aligned CPU memory, and reports a chosen GPU (its name and
compute capability).
RecordingTrt is the build side: it records what the build asks of TensorRT.

Both take a TensorRT version and use that version's real enum values (ENUMS); classes carry the
real classes' names, and tests/test_trt_real_bindings.py checks every member, signature and
enum value here against the real bindings of the versions it pins.

What it proves: TensorRTEngine's Python path (plan cache use, profile selection and switching,
chunking batches larger than a profile, double-buffered slots, dtype handling, output
collection, checked return values) produces the right numbers. What it does not: anything
about real TensorRT (parsing, kernels, fp16 numerics, stream concurrency, memory) or CUDA.
"""
from __future__ import annotations

import contextlib
import enum
import json
import types

import numpy as np
import torch

# The releases the fakes mirror: the first 10.x the project supports, the last 10.x, the newest 11.x.
PINNED = ("10.4.0", "10.16.1.11", "11.4.0.106")
ALIGNMENT = 256  # bytes: TensorRT refuses tensor addresses that are not a multiple of this

# The enum members the code and these fakes use, with their values in the real bindings, per
# TensorRT major version (tests/test_trt_real_bindings.py compares them with each pinned release).
_COMMON = {
    "DataType": {"FLOAT": 0, "HALF": 1, "INT32": 3, "BF16": 7, "INT64": 8},
    "TensorIOMode": {"NONE": 0, "INPUT": 1, "OUTPUT": 2},
    "MemoryPoolType": {"WORKSPACE": 0},
    "Logger.Severity": {"WARNING": 2},
}
ENUMS = {
    10: {**_COMMON, "NetworkDefinitionCreationFlag": {"STRONGLY_TYPED": 1},
         "BuilderFlag": {"FP16": 0, "TF32": 6, "VERSION_COMPATIBLE": 13, "BF16": 17}},
    # 11 dropped EXPLICIT_BATCH and the precision flags, and renumbered flags after them.
    11: {**_COMMON, "NetworkDefinitionCreationFlag": {"STRONGLY_TYPED": 0},
         "BuilderFlag": {"TF32": 6, "VERSION_COMPATIBLE": 12}},
}
DEFAULT_VERSION = PINNED[1]


class _Enum(enum.Enum):
    """Like a pybind11 enum: int() gives the value, and it equals only members of its own enum."""

    def __int__(self):
        return self.value


def _enums(version: str) -> dict[str, type[_Enum]]:
    return {path: _Enum(path.rsplit(".", 1)[-1], members)
            for path, members in ENUMS[int(version.split(".")[0])].items()}


class FakeCuda:
    """torch.cuda as TensorRTEngine uses it, on the CPU; `capability` and `name` pick the GPU (T4 is (7, 5))."""

    def __init__(self, capability: tuple[int, int] = (8, 6), name: str = "NVIDIA A10G"):
        self.capability, self.name = tuple(capability), name
        self.buffers: list[torch.Tensor] = []

    # torch.cuda namespace
    def is_available(self):
        return True

    def device_count(self):
        return 1

    def set_device(self, device):
        pass

    def get_device_capability(self, device=None):
        return self.capability

    def get_device_name(self, device=None):
        return self.name

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
        """Aligned like cudaMalloc's (torch's CPU allocator only aligns to 64 bytes)."""
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        nbytes = int(np.prod(shape)) * torch.empty(0, dtype=dtype).element_size()
        raw = torch.empty(nbytes + ALIGNMENT, dtype=torch.uint8)
        start = -raw.data_ptr() % ALIGNMENT
        t = raw[start:start + nbytes].view(dtype).reshape(shape)
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


class _FakeModule(types.ModuleType):
    """What both fakes share with the real module: its version, its enums, its Logger."""

    def __init__(self, version: str):
        super().__init__("tensorrt")
        self.__version__ = version
        enums = _enums(version)
        for path, cls in enums.items():
            if "." not in path:
                setattr(self, path, cls)
        severity = enums["Logger.Severity"]

        class Logger:
            Severity, WARNING = severity, severity.WARNING

            def __init__(self, min_severity=severity.WARNING):
                self.min_severity = min_severity

        self.Logger = Logger


class FakeTensorRT(_FakeModule):
    """The `tensorrt` module surface TensorRTEngine's runtime uses."""

    def __init__(self, cuda: FakeCuda, input_dtype: str = "INT32", version: str = DEFAULT_VERSION):
        super().__init__(version)
        self.cuda = cuda
        self.input_dtype = getattr(self.DataType, input_dtype)
        self.executions: list[tuple[int, tuple[int, int]]] = []  # (profile, input shape)
        outer = self

        class Runtime:
            engine_host_code_allowed = False  # TensorRT's default

            def __init__(self, logger):
                pass

            def deserialize_cuda_engine(self, serialized_engine):
                plan = json.loads(serialized_engine)
                if plan["version_compatible"] and not self.engine_host_code_allowed:
                    return None  # TensorRT: the plan embeds its lean runtime, host code this Runtime refuses
                return ICudaEngine(outer, plan)

        self.Runtime = Runtime


def plan_bytes(onnx_path, profiles, inputs, version_compatible=False) -> bytes:
    """What the emulated build writes: enough for ICudaEngine to run the graph."""
    return json.dumps({"onnx": str(onnx_path), "inputs": list(inputs), "version_compatible": version_compatible,
                       "profiles": [{"min": list(p.min), "max": list(p.max)} for p in profiles]}).encode()


class ICudaEngine:
    def __init__(self, trt: FakeTensorRT, plan: dict):
        import onnxruntime as ort

        self.trt, self.plan = trt, plan
        self.session = ort.InferenceSession(plan["onnx"], providers=["CPUExecutionProvider"])
        self.outputs = {o.name: o.shape for o in self.session.get_outputs()}
        self.names = plan["inputs"] + list(self.outputs)

    @property
    def num_io_tensors(self):
        return len(self.names)

    def get_tensor_name(self, index):
        return self.names[index]

    def get_tensor_mode(self, name):
        return self.trt.TensorIOMode.OUTPUT if name in self.outputs else self.trt.TensorIOMode.INPUT

    def get_tensor_dtype(self, name):
        return self.trt.DataType.FLOAT if name in self.outputs else self.trt.input_dtype

    def get_tensor_shape(self, name):
        return (-1, self.outputs[name][-1]) if name in self.outputs else (-1, -1)

    def create_execution_context(self, strategy=None):
        return IExecutionContext(self)


class IExecutionContext:
    def __init__(self, engine: ICudaEngine):
        self.engine = engine
        self.profile = 0
        self.shapes: dict = {}
        self.addresses: dict = {}

    def set_optimization_profile_async(self, profile_index, stream_handle):
        if not 0 <= profile_index < len(self.engine.plan["profiles"]):
            return False
        self.profile = profile_index
        self.shapes = {}  # TensorRT: shapes must be set again after a profile switch
        return True

    def set_input_shape(self, name, shape):
        p = self.engine.plan["profiles"][self.profile]
        if not all(lo <= s <= hi for lo, s, hi in zip(p["min"], shape, p["max"])):
            return False
        self.shapes[name] = tuple(shape)
        return True

    def set_tensor_address(self, name, memory):
        if memory % ALIGNMENT:
            return False
        self.addresses[name] = memory
        return True

    def execute_async_v3(self, stream_handle):
        inputs = self.engine.plan["inputs"]
        if set(self.shapes) != set(inputs) or not set(self.engine.names) <= set(self.addresses):
            return False  # TensorRT: every input needs a shape, every I/O tensor an address
        trt, cuda = self.engine.trt, self.engine.trt.cuda
        shape = self.shapes[inputs[0]]
        in_dtype = torch.int32 if trt.input_dtype == trt.DataType.INT32 else torch.int64
        n = shape[0] * shape[1]
        feed = {name: cuda.resolve(self.addresses[name], in_dtype, n).reshape(shape).numpy().astype(np.int64)
                for name in inputs}
        for name, out in zip(self.engine.outputs, self.engine.session.run(None, feed)):
            target = cuda.resolve(self.addresses[name], torch.float32, out.size)
            target.copy_(torch.from_numpy(out.reshape(-1)))
        trt.executions.append((self.profile, shape))
        return True


class RecordingTrt(_FakeModule):
    """The `tensorrt` module surface the build uses. Records the calls, so it proves the build is
    strongly typed and sets a profile per input per bucket. Says nothing about whether TensorRT
    accepts our graph."""

    def __init__(self, parse_ok=True, plan=b"serialized", version: str = DEFAULT_VERSION):
        super().__init__(version)
        self.calls = []
        self.parse_ok, self.plan = parse_ok, plan
        outer = self

        class Builder:
            def __init__(self, logger):
                outer.calls.append(("Builder", logger.min_severity))

            def create_network(self, flags=0):
                outer.calls.append(("create_network", flags))
                return INetworkDefinition()

            def create_builder_config(self):
                outer.config = IBuilderConfig(outer)
                return outer.config

            def create_optimization_profile(self):
                return IOptimizationProfile()

            def build_serialized_network(self, network, config):
                outer.calls.append(("build", len(config.profiles)))
                return outer.plan

        class OnnxParser:
            num_errors = 1

            def __init__(self, network, logger):
                pass

            def parse_from_file(self, model):
                outer.calls.append(("parse", model))
                return outer.parse_ok

            def get_error(self, index):
                return "In node 3 (GatherND): unsupported"

        self.Builder, self.OnnxParser = Builder, OnnxParser


class INetworkDefinition:
    num_inputs = 3

    def get_input(self, index):
        return types.SimpleNamespace(name=("input_ids", "attention_mask", "token_type_ids")[index])


class IOptimizationProfile:
    def __init__(self):
        self.shapes = {}

    def set_shape(self, input, min, opt, max):  # the real parameter names, builtins shadowed
        self.shapes[input] = (tuple(min), tuple(opt), tuple(max))


class IBuilderConfig:
    builder_optimization_level = 3

    def __init__(self, trt: RecordingTrt):
        self.profiles, self.pools = [], {}
        self.flags = {trt.BuilderFlag.TF32}  # TensorRT's default: TF32 is on

    def set_memory_pool_limit(self, pool, pool_size):
        self.pools[pool] = pool_size

    def set_flag(self, flag):
        self.flags.add(flag)

    def clear_flag(self, flag):
        self.flags.discard(flag)

    def get_flag(self, flag):
        return flag in self.flags

    def add_optimization_profile(self, profile):
        self.profiles.append(profile)
        return len(self.profiles) - 1
