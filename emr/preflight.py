"""Checks of a GPU run before any cluster exists: what would fail on the nodes, found here.

``check`` compares a profile (its GPU), a release label (its Spark line and Python), an
environment archive (emr/envinfo.py), optionally a compiled artifact, and the NVIDIA driver
of the nodes when known against the CUDA stack the environment holds (emr/stacks.py), and
returns one sentence per problem. ``online`` asks the package indexes CI cannot reach
whether the stacks' pins are there (emr/index_check.py). Nothing here talks to AWS.
"""

from __future__ import annotations

import re

from engines.artifact import Manifest
from engines.errors import ArtifactError, TargetMismatchError
from dataclasses import dataclass
from typing import Mapping

from emr import gpu_envs, index_check
from emr.envinfo import EnvInfo, runs_on_cuda
from emr.errors import EmrError
from emr.profiles import GpuProfile
from emr.releases import ReleaseLine, known, line_of
from emr.stacks import GPU, INDEXES, NEURON, STACKS, GpuStack, Pin

_CC = re.compile(r"\bsm(\d)(\d)\b")


def compute_capability(profile: GpuProfile) -> tuple[int, int] | None:
    """The profile's GPU compute capability, from its GPU's name (``A10G (sm86)`` -> (8, 6))."""
    match = _CC.search(profile.gpu)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text.split("+")[0])[:3])


def admits(specifier: str, version: str) -> bool:
    """Whether a requirement specifier (``>=3.5,<3.6``) admits ``version``; enough for pyspark's."""
    ops = {"~=": lambda a, b: a >= b and a[:len(b) - 1] == b[:-1], ">=": lambda a, b: a >= b,
           "<=": lambda a, b: a <= b, "==": lambda a, b: a[:len(b)] == b, "!=": lambda a, b: a[:len(b)] != b,
           ">": lambda a, b: a > b, "<": lambda a, b: a < b}
    have = _version(version)
    for part in filter(None, (p.strip() for p in specifier.split(","))):
        op = next((o for o in ops if part.startswith(o)), None)
        if op is None:
            raise EmrError(f"cannot read the environment's pyspark requirement {specifier!r}", exit_code=2)
        if not ops[op](have, _version(part[len(op):].rstrip(".*"))):
            return False
    return True


def _spark_problems(label: str, line: ReleaseLine, env: EnvInfo) -> list[str]:
    """The project's pyspark ranges (one per Spark extra) against this line, and what this PySpark needs."""
    problems = []
    wanted = env.spark_requirements
    if wanted and not any(admits(spec, f"{line.spark}.0") for spec in wanted):
        problems.append(f"{label} runs Spark {line.spark}; the environment's accel-scoring wants pyspark "
                        f"{' or '.join(wanted)}")
    for name, need in line.executor_libraries.items():
        have = env.distributions.get(name)
        if have is not None and not admits(need, have):
            problems.append(f"{label}'s PySpark {line.spark} needs {name}{need}; the environment has {name} "
                            f"{have}: build it with `python -m emr package --release-label {label}` "
                            f"(or RELEASE_LABEL={label} for `make package-al2023`)")
    return problems


def _release_problems(label: str, env: EnvInfo) -> list[str]:
    line = line_of(label)
    if line is None:
        return [f"release label {label!r} is not {known()}: EMR 6.x ships Spark 3.0-3.4 on Amazon Linux 2"]
    problems = _spark_problems(label, line, env)
    if env.python not in line.pythons:
        problems.append(f"the environment is Python {env.python}; {label} nodes have Python "
                        f"{', '.join(line.pythons)}: build it with `make package-al2023` or `make package-gpu`")
    elif env.interpreter != f"/usr/bin/python{env.python}":
        problems.append(f"the environment's bin/python links to {env.interpreter or 'nothing outside it'}, "
                        f"not /usr/bin/python{env.python} as on the nodes: build it on Amazon Linux 2023 with "
                        "`make package-al2023` or `make package-gpu`")
    return problems


def _env_problems(env: EnvInfo, backend: str) -> list[str]:
    problems = []
    if "accel-scoring" not in env.distributions:
        problems.append("the environment has no accel-scoring wheel installed (so none of its dependencies "
                        "either): build it with `make package` or `make package-gpu`")
    build = f"make {(gpu_envs.for_backend(backend) or gpu_envs.FULL).make_target}"
    missing = env.missing_for(backend)
    if missing:
        problems.append(f"backend {backend} needs {' and '.join(missing)}, which the environment lacks: "
                        f"build it with `{build}`")
    if runs_on_cuda(backend) and "torch" in env.modules:
        if env.cpu_only_torch:
            problems.append(f"the environment's torch {env.cpu_only_torch} is a CPU-only build; backend {backend} "
                            f"needs a CUDA build (`{build}`)")
        if backend == "tensorrt" and len(env.cuda_majors) > 1:
            problems.append(f"the environment mixes CUDA {' and '.join(map(str, sorted(env.cuda_majors)))} "
                            "wheels; torch and TensorRT must share one CUDA major (emr/stacks.py)")
    return problems


def _artifact_problems(manifest: Manifest, backend: str, profile: GpuProfile, env: EnvInfo) -> list[str]:
    from engines import tensorrt
    from engines.hardware import Hardware
    from engines.registry import resolve_backend

    if manifest.target.get("device") == "neuron":
        return [f"artifact {manifest.model_id} is a {manifest.backend} build for {manifest.target.get('instance')}; "
                f"profile {profile.name} has NVIDIA GPUs and EMR on EC2 has no NeuronCores: run it on EMR on EKS "
                "(`python -m emr eks-submit`)"]
    try:
        chosen = resolve_backend(backend, manifest, Hardware({"cuda": profile.gpus_per_instance}, source=profile.name))
    except ArtifactError as exc:
        return [str(exc)]
    problems = _env_problems(env, chosen) if backend == "auto" else []
    if chosen not in ("tensorrt", "torch-cuda"):
        return problems
    cc = compute_capability(profile)
    if cc is None:
        return problems + [f"profile {profile.name} does not name its GPU's compute capability (smXY in {profile.gpu!r})"]
    if chosen == "torch-cuda":
        return problems + _torch_cuda_problems(manifest, profile, cc)
    target = dict(manifest.target)
    version = env.tensorrt_version
    if version is None:  # reported as a missing module already; check the GPU alone
        target.update(tensorrt_min=None, tensorrt_below=None)
    try:
        tensorrt.check_target(target, version or "", cc, manifest.precision)
    except TargetMismatchError as exc:
        problems.append(f"artifact {manifest.model_id} on profile {profile.name} ({profile.gpu}): {exc}")
    return problems


def _torch_cuda_problems(manifest: Manifest, profile: GpuProfile, cc: tuple[int, int]) -> list[str]:
    """What the torch-cuda engine refuses at load on this GPU (engines/torch_cuda.py), found here."""
    from engines.torch_cuda import MIN_COMPUTE_CAPABILITY

    need = MIN_COMPUTE_CAPABILITY.get(manifest.precision)
    if need is None or cc >= need:
        return []
    return [f"artifact {manifest.model_id} on profile {profile.name} ({profile.gpu}): this GPU has compute "
            f"capability {cc[0]}.{cc[1]}; a {manifest.precision} torch-cuda artifact needs >= {need[0]}.{need[1]} "
            "(compile it with --precision fp16 for this GPU, or pick a profile with a newer GPU)"]


@dataclass(frozen=True)
class Driver:
    """The NVIDIA driver of the GPU nodes, as ``nvidia-smi --query-gpu=driver_version`` prints it."""

    version: str
    where: str

    @classmethod
    def parse(cls, text: str, where: str) -> "Driver":
        if not re.fullmatch(r"\d{3,}(\.\d+){1,2}", text.strip()):
            raise EmrError(f"{where} {text!r} is not an NVIDIA driver version such as 550.163.01", exit_code=2)
        return cls(text.strip(), where)

    @property
    def branch(self) -> int:
        return int(self.version.split(".")[0])


def stack_of(env: EnvInfo) -> GpuStack | None:
    """The GPU stack (emr/stacks.py) of the environment's one CUDA major, its torch alone when the
    environment has no TensorRT; None for a CPU environment or a mix."""
    majors = env.cuda_majors
    stack = STACKS.get(next(iter(majors))) if len(majors) == 1 else None
    return stack.torch_only() if stack and env.tensorrt_version is None else stack


def driver_problems(stack: GpuStack | None, driver: Driver | None) -> list[str]:
    """The driver against the stack, with the fix in the same sentence."""
    if stack is None or driver is None or driver.branch >= stack.driver_min:
        return []
    runnable = [s for s in STACKS.values() if s.driver_min <= driver.branch]
    fix = (f"build the environment with the CUDA {runnable[0].cuda_major} stack instead (emr/stacks.py)" if runnable
           else f"run on nodes with driver R{stack.driver_min} or newer (another EMR release or a custom AMI)")
    return [f"NVIDIA driver {driver.version} ({driver.where}) cannot run the environment's {stack.describe()}: {fix}"]


def check(profile: GpuProfile, release_label: str, env: EnvInfo, *, backend: str = "auto",
          manifest: Manifest | None = None, driver: Driver | None = None) -> list[str]:
    """Every problem found, one sentence each; empty when the run can start."""
    problems = _release_problems(release_label, env) + driver_problems(stack_of(env), driver)
    if backend != "auto":
        problems += _env_problems(env, backend)
    elif manifest is None:
        problems += _env_problems(env, "onnx")  # the default scores on the CPU: the base environment
    if manifest is not None:
        problems += _artifact_problems(manifest, backend, profile, env)
    return problems


def online_pins(stack: GpuStack = GPU) -> dict[str, tuple[Pin, ...]]:
    """The pins each index beyond the public one must hold, by INDEXES key."""
    pins: dict[str, list[Pin]] = {}
    for pin in (*stack.pins, *stack.tensorrt_parts, *NEURON.pins):
        if pin.index != "pypi":
            pins.setdefault(pin.index, []).append(pin)
    return {key: tuple(value) for key, value in pins.items()}


def online(urls: Mapping[str, str | None], stack: GpuStack = GPU) -> tuple[list[str], list[str]]:
    """Ask each index whose URL is given for its pins: (what was found or not checked, problems)."""
    found, problems = [], []
    for key, pins in online_pins(stack).items():
        index, url = INDEXES[key], urls.get(key)
        if not url:
            found.append(f"not checked: {index} ({', '.join(p.requirement for p in pins)}; pass {index.option} URL)")
            continue
        for pin in pins:
            try:
                why = index_check.missing(pin, index_url=url)
            except EmrError as exc:  # unreachable, or pip failed: nothing is known about the rest either
                problems.append(f"{index}: {exc}")
                break
            if why:
                problems.append(why)
            else:
                found.append(f"{pin.requirement} is on {index} ({url})")
    return found, problems
