"""The shell scripts shipped to nodes: syntax, and the NeuronCore discovery output Spark reads."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "emr" / "scripts"


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.sh")))
def test_script_parses_and_is_executable(script: str) -> None:
    path = SCRIPTS / script
    assert os.access(path, os.X_OK), f"{script} is not executable"
    subprocess.run(["bash", "-n", str(path)], check=True)


@pytest.mark.parametrize(
    "visible, addresses",
    [("3", ["3"]), ("0-2", ["0", "1", "2"]), ("0,2", ["0", "2"]), ("0-1, 4", ["0", "1", "4"])],
)
def test_neuroncore_discovery_reads_the_device_plugin_variable(visible: str, addresses: list[str]) -> None:
    env = {"PATH": "/usr/bin:/bin", "NEURON_RT_VISIBLE_CORES": visible}
    out = subprocess.run([str(SCRIPTS / "get_neuroncores.py")], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out) == {"name": "neuroncore", "addresses": addresses}


FAKE_AWS = """#!/bin/bash
echo "aws $*" >> "$CALLS"
if [ "$3" = --recursive ]; then touch "${@: -1}accel_scoring-0.1.0-py3-none-any.whl"; else echo "torch==0" > "${@: -1}"; fi
"""
FAKE_PIP = """#!/bin/bash
echo "pip $* WHEEL_STUB_PIP_INDEX_URL=${WHEEL_STUB_PIP_INDEX_URL:-}" >> "$CALLS"
"""
FAKE_PYTHON = """#!/bin/bash
mkdir -p "$3/bin" && ln -s "$FAKES/pip" "$3/bin/pip"
"""


def _run_install(tmp_path: Path, *args: str) -> list[str]:
    """Run install-python-env.sh with aws, pip, python and sudo faked on PATH; return their calls."""
    fakes, calls = tmp_path / "fakes", tmp_path / "calls"
    fakes.mkdir()
    for name, body in {"aws": FAKE_AWS, "pip": FAKE_PIP, "python3.11": FAKE_PYTHON,
                       "sudo": '#!/bin/bash\nexec "$@"\n'}.items():
        (fakes / name).write_text(body)
        (fakes / name).chmod(0o755)
    env = {"PATH": f"{fakes}:/usr/bin:/bin", "CALLS": str(calls), "FAKES": str(fakes), "TMPDIR": str(tmp_path)}
    subprocess.run(["bash", str(SCRIPTS / "install-python-env.sh"), "s3://deploy/accel/v1/package/",
                    args[0], str(tmp_path / "opt" / "venv"), *args[1:]], env=env, check=True)
    return [line.replace(str(tmp_path), "TMP") for line in calls.read_text().splitlines()]


def test_install_python_env_installs_the_gpu_requirements_from_both_indexes_before_the_wheel(tmp_path) -> None:
    calls = _run_install(tmp_path, "aws,gpu", "s3://deploy/accel/v1/scripts/gpu-requirements.txt",
                         "https://torch.example.invalid/cu126", "https://nvidia.example.invalid/simple")
    work = calls[0].rsplit(" ", 1)[1]  # the script's download folder
    assert calls[0].startswith("aws s3 cp --recursive --exclude * --include accel_scoring-*.whl "
                               "s3://deploy/accel/v1/package/ ")
    assert calls[1:] == [
        "pip install --no-cache-dir --upgrade pip WHEEL_STUB_PIP_INDEX_URL=",
        f"aws s3 cp s3://deploy/accel/v1/scripts/gpu-requirements.txt {work}gpu-requirements.txt",
        "pip install --no-cache-dir --extra-index-url https://torch.example.invalid/cu126 --extra-index-url "
        f"https://nvidia.example.invalid/simple -r {work}gpu-requirements.txt "
        "WHEEL_STUB_PIP_INDEX_URL=https://nvidia.example.invalid/simple",
        f"pip install --no-cache-dir {work}accel_scoring-0.1.0-py3-none-any.whl[aws,gpu] WHEEL_STUB_PIP_INDEX_URL=",
    ]


def test_install_python_env_without_requirements_installs_only_the_wheel(tmp_path) -> None:
    calls = _run_install(tmp_path, "aws")
    assert [c.split(" TMP")[0] for c in calls[1:]] == [
        "pip install --no-cache-dir --upgrade pip WHEEL_STUB_PIP_INDEX_URL=", "pip install --no-cache-dir"]
    assert calls[-1].endswith("accel_scoring-0.1.0-py3-none-any.whl[aws] WHEEL_STUB_PIP_INDEX_URL=")


def test_install_python_env_installs_the_torch_alone_from_pytorchs_index(tmp_path) -> None:
    """A torch-cuda extra: gpu-torch-requirements.txt from the torch index, no NVIDIA index at all."""
    calls = _run_install(tmp_path, "aws,fast,torch-cuda", "s3://deploy/accel/v1/scripts/gpu-torch-requirements.txt",
                         "https://torch.example.invalid/cu126")
    work = calls[0].rsplit(" ", 1)[1]
    assert calls[2:] == [
        f"aws s3 cp s3://deploy/accel/v1/scripts/gpu-torch-requirements.txt {work}gpu-torch-requirements.txt",
        "pip install --no-cache-dir --extra-index-url https://torch.example.invalid/cu126 "
        f"-r {work}gpu-torch-requirements.txt WHEEL_STUB_PIP_INDEX_URL=",
        f"pip install --no-cache-dir {work}accel_scoring-0.1.0-py3-none-any.whl[aws,fast,torch-cuda] "
        "WHEEL_STUB_PIP_INDEX_URL=",
    ]
