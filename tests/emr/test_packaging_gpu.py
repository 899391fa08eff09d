"""`make package-gpu`, as far as it can be checked without Docker or the CUDA package indexes.

The GPU stack (emr/stacks.py GPU), which `python -m emr package` writes to dist/gpu-requirements.txt,
must agree with the rest of the project (the gpu extra, the artifacts' TensorRT range, the
Makefile's torch) and with itself (one CUDA major), and the make target must run the container
with it. Building the archive is not tested here; that the pins exist on the public index is
tests/test_pinned_versions.py, on PyTorch's and NVIDIA's indexes `python -m emr preflight --online`.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from emr import gpu_envs, packaging
from emr.cli import main
from emr.stacks import GPU, GPU_TORCH, STACKS, WHEEL_STUB_INDEX_ENV
from engines import torch_cuda, trt_build

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "emr" / "docker"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def pins(tmp_path: Path) -> dict[str, Version]:
    """dist/gpu-requirements.txt as `python -m emr package` writes it."""
    lines = [line.strip() for line in packaging.write_gpu_requirements(tmp_path).read_text().splitlines()]
    reqs = [Requirement(line) for line in lines if line and not line.startswith("#")]
    assert all(len(r.specifier) == 1 and next(iter(r.specifier)).operator == "==" for r in reqs), "pin exactly"
    return {r.name: Version(next(iter(r.specifier)).version) for r in reqs}


def extra(name: str, dist: str) -> Requirement:
    return next(r for r in map(Requirement, PYPROJECT["project"]["optional-dependencies"][name]) if r.name == dist)


def test_the_requirements_are_the_cuda_12_stack(tmp_path) -> None:
    """torch 2.13 has cu126 and cu130 builds, no cu128 (emr/stacks.py says where that was read)."""
    text = packaging.write_gpu_requirements(tmp_path).read_text()
    assert text.splitlines()[1:] == ["torch==2.13.0+cu126", "tensorrt-cu12==10.16.1.11"]
    assert text.startswith("# CUDA 12: torch 2.13.0+cu126, tensorrt-cu12 10.16.1.11, on an NVIDIA driver R525 or newer")
    assert "PyTorch's CUDA 12.6 wheel index (cu126) (--torch-index-url) and NVIDIA's package index" in text
    assert [(s.cuda_major, s.driver_min) for s in STACKS.values()] == [(12, 525), (13, 580)]


def test_tensorrt_pin_is_in_the_gpu_extra_and_the_artifacts_range(tmp_path) -> None:
    trt = pins(tmp_path)["tensorrt-cu12"]
    assert trt in extra("gpu", "tensorrt-cu12").specifier
    assert Version(trt_build.TENSORRT_MIN) <= trt < Version(trt_build.TENSORRT_BELOW)
    assert {str(trt)} == {p.version for p in GPU.tensorrt_parts}  # libs and bindings of the same release


def test_torch_pin_is_the_makefiles_torch_built_for_tensorrts_cuda_major(tmp_path) -> None:
    torch = pins(tmp_path)["torch"]
    makefile = re.search(r"^TORCH_SPEC \?= torch==(\S+)", (REPO / "Makefile").read_text(), re.M).group(1)
    assert torch.public == makefile
    assert torch in extra("compile", "torch").specifier
    assert re.fullmatch(r"cu\d{3}", torch.local or ""), "a CUDA build from PyTorch's index, not the default wheel"
    assert torch.local[2:-1] == str(GPU.cuda_major) == re.search(r"-cu(\d+)$", GPU.tensorrt.name).group(1)


def test_the_torch_only_requirements_are_the_stacks_torch_alone(tmp_path) -> None:
    """--backend torch-cuda's environment: GPU's torch pin itself (no second copy), its index, its driver."""
    text = packaging.write_gpu_requirements(tmp_path, gpu_envs.TORCH).read_text()
    assert text.splitlines()[1:] == ["torch==2.13.0+cu126"]
    assert text.splitlines()[0] == ("# CUDA 12: torch 2.13.0+cu126, on an NVIDIA driver R525 or newer (emr/stacks.py); "
                                    "from PyTorch's CUDA 12.6 wheel index (cu126) (--torch-index-url) besides the "
                                    "public index")
    assert GPU_TORCH.torch is GPU.torch and GPU_TORCH.driver_min == GPU.driver_min
    assert (tmp_path / "gpu-torch-requirements.txt").is_file()
    assert [env.requirements for env in gpu_envs.ENVS] == ["gpu-requirements.txt", "gpu-torch-requirements.txt"]


def test_the_torch_cuda_extra_admits_the_pin_and_asks_for_the_engines_torch() -> None:
    """pyproject cannot import engines/torch_cuda.py: its floor is TORCH_MIN, and the CUDA pin is above it."""
    req = extra("torch-cuda", "torch")
    assert [(s.operator, s.version) for s in req.specifier] == [(">=", ".".join(map(str, torch_cuda.TORCH_MIN)))]
    assert Version(GPU_TORCH.torch.version) in req.specifier


def test_package_writes_both_gpu_requirements(tmp_path, capsys) -> None:
    assert main(["package", "--dist", str(tmp_path), "--dry-run"]) == 0
    planned = capsys.readouterr().err  # dry-run prose goes to stderr, JSON alone to stdout
    assert (f"would build {tmp_path}/gpu-torch-requirements.txt (the torch-only GPU stack for make package-gpu-torch "
            "and the bootstrap with a torch-cuda extra: CUDA 12: torch 2.13.0+cu126, on an NVIDIA driver R525 or "
            "newer)") in planned.splitlines()
    assert not list(tmp_path.iterdir())
    assert main(["package", "--dist", str(tmp_path), "--no-env"]) == 0
    for env in gpu_envs.ENVS:
        assert (tmp_path / env.requirements).read_text().split("\n", 1)[1] == env.stack.requirements()


def _make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), *args],
                          capture_output=True, text=True, timeout=60)


def test_make_package_gpu_runs_the_al2023_container_with_the_gpu_pins() -> None:
    done = _make("-n", "package-gpu", "TORCH_INDEX_URL=https://torch.invalid/cu126", "NVIDIA_INDEX_URL=https://nv.invalid/")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1:3] == [".venv/bin/python -m emr package --dist dist --no-env",
                          "docker build -f emr/docker/Dockerfile.al2023-env -t accel-scoring-env-al2023 ."]
    assert lines[3] == (f"docker run --rm -v {REPO}/dist:/out -e GPU=1 -e EXTRAS=aws,fast,gpu "
                        '-e TORCH_INDEX_URL="https://torch.invalid/cu126" -e NVIDIA_INDEX_URL="https://nv.invalid/" '
                        "accel-scoring-env-al2023")
    cpu = _make("-n", "package-al2023").stdout.splitlines()
    assert cpu[-1] == f"docker run --rm -v {REPO}/dist:/out  accel-scoring-env-al2023"  # the CPU archive
    emr8 = _make("-n", "package-al2023", "RELEASE_LABEL=emr-spark-8.0.0").stdout.splitlines()
    assert ".venv/bin/python -m emr package --dist dist --no-env --release-label emr-spark-8.0.0" in emr8


def test_make_package_gpu_torch_runs_the_container_with_the_torch_alone() -> None:
    """No NVIDIA index: the torch-only archive takes only PyTorch's, and the torch-cuda extra."""
    done = _make("-n", "package-gpu-torch", "TORCH_INDEX_URL=https://torch.invalid/cu126")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == ".venv/bin/python -m emr package --dist dist --no-env"
    assert lines[3] == (f"docker run --rm -v {REPO}/dist:/out -e GPU=torch -e EXTRAS=aws,fast,torch-cuda "
                        '-e TORCH_INDEX_URL="https://torch.invalid/cu126" accel-scoring-env-al2023')
    stopped = _make("package-gpu-torch")  # really runs: the guard exits before any build
    assert stopped.returncode != 0
    assert "make package-gpu-torch needs TORCH_INDEX_URL=... (emr/package.mk)\n" in stopped.stderr


def test_make_package_gpu_without_the_indexes_stops_first() -> None:
    done = _make("package-gpu")  # really runs: the guard exits before any build
    assert done.returncode != 0
    assert "make package-gpu needs TORCH_INDEX_URL=... and NVIDIA_INDEX_URL=..." in done.stderr


@pytest.mark.parametrize("needle", [
    "COPY dist/gpu-requirements.txt dist/gpu-torch-requirements.txt dist/accel-scoring-constraints.txt /wheels/",
    "-c /wheels/accel-scoring-constraints.txt",  # the release line's pins (emr/releases.py)
    '--extra-index-url "$TORCH_INDEX_URL" --extra-index-url "$NVIDIA_INDEX_URL"',
    "-r /wheels/gpu-requirements.txt",
    f'export {WHEEL_STUB_INDEX_ENV}="$NVIDIA_INDEX_URL"',  # the wheel-stub tensorrt-cu12-libs looks there
    "/build/accel-scoring-env/bin/python -m emr.envinfo /out/accel-scoring-env.tar.gz",
])
def test_dockerfile_installs_the_pins_first_and_describes_the_archive(needle: str) -> None:
    text = (DOCKER / "Dockerfile.al2023-env").read_text()
    assert needle in text
    cmd = text[text.index("CMD "):]
    assert cmd.index("gpu-requirements.txt") < cmd.index("accel_scoring-*.whl") < cmd.index("venv-pack -p")


def test_dockerfile_installs_the_torch_alone_from_pytorchs_index_for_gpu_torch() -> None:
    cmd = (DOCKER / "Dockerfile.al2023-env").read_text().split("CMD ", 1)[1]
    branch = cmd[cmd.index('elif [ "$GPU" = torch ]'):cmd.index("fi;")]
    assert '$pip --extra-index-url "$TORCH_INDEX_URL" -r /wheels/gpu-torch-requirements.txt;' in branch
    assert "NVIDIA" not in branch
    assert cmd.index("gpu-torch-requirements.txt") < cmd.index("accel_scoring-*.whl")


@pytest.mark.parametrize("path", ["emr/docker/Dockerfile.al2023-env", "emr/scripts/install-python-env.sh"])
def test_the_nvidia_index_reaches_the_wheel_stub_under_the_variable_it_reads(path: str) -> None:
    """wheel-stub reads WHEEL_STUB_PIP_INDEX_URL and nothing else: behind a mirror without NVIDIA's
    index, tensorrt-cu12-libs's stub would otherwise fetch from an address nobody configured."""
    text = (REPO / path).read_text()
    assert f'{WHEEL_STUB_INDEX_ENV}="$NVIDIA_INDEX_URL"' in text
    assert "NVIDIA_PIP_INDEX_URL" not in text


def test_the_venvs_torch_can_be_pytorchs_cpu_build() -> None:
    """On the public index torch==2.13.0 is the CUDA 13 build (several GB); TORCH_CPU_INDEX_URL and
    TORCH_SPEC=torch==2.13.0+cpu ask PyTorch's CPU index instead, before the project installs."""
    venv = "/tmp/accel-scoring-no-such-venv"
    cpu = _make("-n", f"VENV={venv}", f"{venv}/.installed", "TORCH_SPEC=torch==2.13.0+cpu",
                "TORCH_CPU_INDEX_URL=https://cpu.invalid/whl").stdout.splitlines()
    assert f'{venv}/bin/python -m pip install -q --extra-index-url "https://cpu.invalid/whl" "torch==2.13.0+cpu"' in cpu
    default = _make("-n", f"VENV={venv}", f"{venv}/.installed").stdout.splitlines()
    assert f'{venv}/bin/python -m pip install -q "torch==2.13.0"' in default
