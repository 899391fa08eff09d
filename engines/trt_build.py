"""TensorRT build: optimisation profiles from buckets, the plan cache, and the build itself.

The build is written in the strongly-typed style (docs/accelerators.md): the network takes
each tensor's precision from the ONNX graph, and no precision builder flag is set, so the same
code builds on TensorRT 10 and 11. Reduced precision therefore lives in the graph: compile
writes `tensorrt/model.fp16.onnx` (or bf16) next to the fp32 `model.onnx`.

Everything here except `build_serialized` is pure Python and unit-tested on the CPU.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Callable, Sequence

from engines.store import CACHE_ENV, DEFAULT_CACHE_DIR

BUILD_SPEC = "tensorrt/build.json"
PLANS_DIR = "tensorrt/plans"  # prebuilt plans shipped inside an artifact (compile --build)
# Compute capability each precision needs (T4 = 7.5 has no bf16); TensorRT >= 10.5 needs 7.5.
MIN_COMPUTE_CAPABILITY = {"fp16": (7, 5), "fp32": (7, 5), "bf16": (8, 0)}
# TensorRTEngine.precisions, BuildSpec's check and compile's --precision; the first is the default
PRECISIONS = tuple(MIN_COMPUTE_CAPABILITY)
DEFAULT_MAX_TOKENS = 16384
# The supported TensorRT releases: the gpu extra (pyproject.toml), the device check and every
# artifact's target read it from here; tests/test_tensorrt.py checks pyproject.toml agrees.
TENSORRT_MIN, TENSORRT_BELOW = "10.4", "12"
TENSORRT_REQUIREMENT = f"tensorrt-cu12>={TENSORRT_MIN},<{TENSORRT_BELOW}"


class BuildError(RuntimeError):
    """TensorRT could not parse the graph or build the plan; the message carries its errors."""


@dataclasses.dataclass(frozen=True)
class Profile:
    """One optimisation profile: every input is [batch, seq] within min..max, tuned for opt."""

    min: tuple[int, int]
    opt: tuple[int, int]
    max: tuple[int, int]

    @property
    def max_batch(self) -> int:
        return self.max[0]

    @property
    def max_seq(self) -> int:
        return self.max[1]

    def covers(self, batch: int, seq: int) -> bool:
        return self.min[0] <= batch <= self.max[0] and self.min[1] <= seq <= self.max[1]


def profiles_for(buckets: Sequence[tuple[int, int]], max_seq_len: int,
                 max_tokens: int = DEFAULT_MAX_TOKENS) -> list[Profile]:
    """One profile per sequence bucket, in ascending sequence order.

    Bucket (B, S) after a bucket of length S' gives seq range S'+1..S (the first starts at 1),
    tuned for (B, S), accepting up to max(B, max_tokens // S) rows. The last profile reaches
    max_seq_len, so every padded batch the scorer makes falls in exactly one profile; batches
    with more rows are split by the engine.
    """
    if not buckets:
        raise ValueError("TensorRT profiles need at least one (batch, seq) bucket")
    seqs = sorted({int(s) for _, s in buckets if int(s) < max_seq_len}) + [int(max_seq_len)]
    batch_for = {}
    for b, s in buckets:
        s = min(int(s), int(max_seq_len))
        batch_for[s] = max(batch_for.get(s, 0), int(b))
    profiles, lo = [], 1
    for s in seqs:
        opt_batch = batch_for.get(s) or max(1, max_tokens // s)
        top = max(opt_batch, max_tokens // s)
        profiles.append(Profile(min=(1, lo), opt=(opt_batch, s), max=(top, s)))
        lo = s + 1
    return profiles


def profile_index(profiles: Sequence[Profile], seq: int) -> int:
    """The profile whose sequence range holds `seq` (the first that reaches it)."""
    for i, p in enumerate(profiles):
        if p.min[1] <= seq <= p.max[1]:
            return i
    raise ValueError(f"sequence length {seq} is outside every TensorRT profile "
                     f"(1..{profiles[-1].max_seq if profiles else 0})")


@dataclasses.dataclass(frozen=True)
class BuildSpec:
    """What compile records for a build on the executor: `tensorrt/build.json`."""

    onnx: str  # artifact-relative path of the graph to build (already in `precision`)
    precision: str
    profiles: tuple[Profile, ...]
    workspace_mib: int = 4096
    max_tokens: int = DEFAULT_MAX_TOKENS
    optimization_level: int = 3
    version_compatible: bool = False

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"TensorRT precision must be one of {PRECISIONS}, got {self.precision!r}")

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["profiles"] = [{"min": list(p.min), "opt": list(p.opt), "max": list(p.max)} for p in self.profiles]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "BuildSpec":
        profiles = tuple(Profile(tuple(p["min"]), tuple(p["opt"]), tuple(p["max"])) for p in d["profiles"])
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{**{k: v for k, v in d.items() if k in known}, "profiles": profiles})

    @classmethod
    def read(cls, folder: Path) -> "BuildSpec":
        return cls.from_dict(json.loads((Path(folder) / BUILD_SPEC).read_text()))


def plan_cache_key(trt_version: str, device_name: str, compute_capability: tuple[int, int], spec: BuildSpec,
                   onnx_sha256: str) -> str:
    """File stem of a plan: readable parts first, then a digest of everything that shapes it.

    A plan is only valid for the exact TensorRT version, the GPU, the precision, the profiles
    and the graph it was built from, so all of them are in it. The GPU is its name as well as
    its compute capability: TensorRT tunes kernels per device, and different GPUs share one
    capability (L4 and L40S are both 8.9).
    """
    major, minor = compute_capability
    blob = json.dumps({"trt": trt_version, "gpu": device_name, "cc": [major, minor], "spec": spec.to_dict(),
                       "onnx": onnx_sha256}, sort_keys=True)
    digest = hashlib.sha256(blob.encode()).hexdigest()[:16]
    gpu = "".join(ch if ch.isalnum() else "_" for ch in device_name.strip()) or "gpu"
    return f"trt{trt_version}-sm{major}{minor}-{gpu}-{spec.precision}-{digest}"


def cache_root() -> Path:
    """Built plans, under the folder S3 artifacts are downloaded to (engines/store.py): one place to size."""
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR) / "tensorrt"


@contextlib.contextmanager
def _locked(lock_path: Path):
    with open(lock_path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # blocks while another worker on this node builds
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cached_plan(key: str, build: Callable[[], bytes], root: Path | None = None,
                prebuilt_dir: Path | None = None) -> tuple[Path, str]:
    """The plan file for `key`: shipped in the artifact, cached on this node, or built now.

    Concurrent workers on one node build once: the first takes an exclusive file lock and
    builds into a temporary file that is renamed into place; the others wait on the lock and
    then find the plan. Returns (path, how) with how in {"artifact", "cache", "built"}.
    """
    if prebuilt_dir is not None and (Path(prebuilt_dir) / f"{key}.plan").is_file():
        return Path(prebuilt_dir) / f"{key}.plan", "artifact"
    root = Path(root or cache_root())
    path = root / f"{key}.plan"
    if path.is_file():
        return path, "cache"
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{key}.lock"):
        if path.is_file():
            return path, "cache"
        data = build()
        tmp = root / f".{key}.{os.getpid()}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path, "built"


def build_serialized(trt, onnx_path: Path, spec: BuildSpec, input_names: Sequence[str] | None = None,
                     logger=None) -> bytes:
    """Parse `onnx_path` into a strongly-typed network and build a serialized plan.

    Args:
        trt: the imported `tensorrt` module (passed in so this module imports without it).
        onnx_path: the graph, already in the spec's precision.
        spec: profiles, workspace and builder options.
        input_names: inputs to give profiles to; default every network input.

    Raises:
        BuildError: with the parser's or builder's messages.
    """
    logger = logger or trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(network_flags(trt))
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(onnx_path)):
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        raise BuildError(f"TensorRT could not parse {onnx_path}: " + "; ".join(errors or ["no error recorded"]))
    names = list(input_names) if input_names else [network.get_input(i).name for i in range(network.num_inputs)]
    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(spec.workspace_mib) << 20)
    config.builder_optimization_level = int(spec.optimization_level)
    if spec.precision == "fp32":
        # TF32 is on by default and rounds fp32 matmul inputs to 10 mantissa bits on Ampere and
        # newer: an fp32 plan would miss the fp32 parity gate (engines/parity.py, logits 1e-4).
        config.clear_flag(trt.BuilderFlag.TF32)
    if spec.version_compatible:
        config.set_flag(trt.BuilderFlag.VERSION_COMPATIBLE)
    for p in spec.profiles:
        profile = builder.create_optimization_profile()
        for name in names:
            profile.set_shape(name, p.min, p.opt, p.max)
        if config.add_optimization_profile(profile) < 0:
            raise BuildError(f"TensorRT refused optimisation profile {p} for inputs {names} (min <= opt <= max "
                             "for every input, batch and sequence >= 1)")
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        raise BuildError(f"TensorRT failed to build {onnx_path} ({spec.precision}, {len(spec.profiles)} profiles); "
                         "see the TensorRT log above")
    return bytes(plan)


def network_flags(trt) -> int:
    """Strongly typed: precision comes from the graph (it replaces BuilderFlag.FP16/BF16, which
    TensorRT 11 removed). 10.x needs the STRONGLY_TYPED creation flag; 11 always builds strongly
    typed and deprecates the flag, so no flag is passed there."""
    if version_tuple(trt.__version__) >= (11,):
        return 0
    return 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)


def version_tuple(text: str) -> tuple[int, ...]:
    """'10.16.1.11' -> (10, 16, 1, 11); stops at the first part without digits."""
    out = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)
