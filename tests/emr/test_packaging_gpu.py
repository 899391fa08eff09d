"""`make package-gpu`, as far as it can be checked without Docker or the CUDA package indexes.

The pins in emr/docker/gpu-requirements.txt must agree with the rest of the project (the gpu
extra, the artifacts' TensorRT range, the Makefile's torch) and with each other (one CUDA major),
and the make target must run the container with them. Building the archive is not tested here.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from engines import trt_build

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "emr" / "docker"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def pins() -> dict[str, Version]:
    lines = [line.strip() for line in (DOCKER / "gpu-requirements.txt").read_text().splitlines()]
    reqs = [Requirement(line) for line in lines if line and not line.startswith("#")]
    assert all(len(r.specifier) == 1 and next(iter(r.specifier)).operator == "==" for r in reqs), "pin exactly"
    return {r.name: Version(next(iter(r.specifier)).version) for r in reqs}


def extra(name: str, dist: str) -> Requirement:
    return next(r for r in map(Requirement, PYPROJECT["project"]["optional-dependencies"][name]) if r.name == dist)


def test_tensorrt_pin_is_in_the_gpu_extra_and_the_artifacts_range() -> None:
    trt = pins()["tensorrt-cu12"]
    assert trt in extra("gpu", "tensorrt-cu12").specifier
    assert Version(trt_build.TENSORRT_MIN) <= trt < Version(trt_build.TENSORRT_BELOW)


def test_torch_pin_is_the_makefiles_torch_built_for_tensorrts_cuda_major() -> None:
    torch = pins()["torch"]
    makefile = re.search(r"^TORCH_SPEC \?= torch==(\S+)", (REPO / "Makefile").read_text(), re.M).group(1)
    assert torch.public == makefile
    assert torch in extra("compile", "torch").specifier
    assert re.fullmatch(r"cu\d{3}", torch.local or ""), "a CUDA build from PyTorch's index, not the default wheel"
    assert torch.local[2:-1] == "12" == re.search(r"-cu(\d+)$", "tensorrt-cu12").group(1)


def _make(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), *args],
                          capture_output=True, text=True, timeout=60)


def test_make_package_gpu_runs_the_al2023_container_with_the_gpu_pins() -> None:
    done = _make("-n", "package-gpu", "TORCH_INDEX_URL=https://torch.invalid/cu128", "NVIDIA_INDEX_URL=https://nv.invalid/")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1:3] == [".venv/bin/python -m emr package --dist dist --no-env",
                          "docker build -f emr/docker/Dockerfile.al2023-env -t accel-scoring-env-al2023 ."]
    assert lines[3] == (f"docker run --rm -v {REPO}/dist:/out -e GPU=1 -e EXTRAS=aws,fast,gpu "
                        '-e TORCH_INDEX_URL="https://torch.invalid/cu128" -e NVIDIA_INDEX_URL="https://nv.invalid/" '
                        "accel-scoring-env-al2023")
    cpu = _make("-n", "package-al2023").stdout.splitlines()
    assert cpu[-1] == f"docker run --rm -v {REPO}/dist:/out  accel-scoring-env-al2023"  # the CPU archive
    emr8 = _make("-n", "package-al2023", "RELEASE_LABEL=emr-spark-8.0.0").stdout.splitlines()
    assert ".venv/bin/python -m emr package --dist dist --no-env --release-label emr-spark-8.0.0" in emr8


def test_make_package_gpu_without_the_indexes_stops_first() -> None:
    done = _make("package-gpu")  # really runs: the guard exits before any build
    assert done.returncode != 0
    assert "make package-gpu needs TORCH_INDEX_URL=... and NVIDIA_INDEX_URL=..." in done.stderr


@pytest.mark.parametrize("needle", [
    "COPY emr/docker/gpu-requirements.txt dist/accel-scoring-constraints.txt /wheels/",
    "-c /wheels/accel-scoring-constraints.txt",  # the release line's pins (emr/releases.py)
    '--extra-index-url "$TORCH_INDEX_URL" --extra-index-url "$NVIDIA_INDEX_URL"',
    "-r /wheels/gpu-requirements.txt",
    'export NVIDIA_PIP_INDEX_URL="$NVIDIA_INDEX_URL"',  # tensorrt-cu12's own installer looks there
    "/build/accel-scoring-env/bin/python -m emr.envinfo /out/accel-scoring-env.tar.gz",
])
def test_dockerfile_installs_the_pins_first_and_describes_the_archive(needle: str) -> None:
    text = (DOCKER / "Dockerfile.al2023-env").read_text()
    assert needle in text
    cmd = text[text.index("CMD "):]
    assert cmd.index("gpu-requirements.txt") < cmd.index("accel_scoring-*.whl") < cmd.index("venv-pack -p")
