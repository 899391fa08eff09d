"""Every exact version the executors, the jobs, the Airflow deployment or the make targets install
from the public index is on it, for the platform it is installed on.

Asked through `pip index versions` (emr/index_check.py), isolated from this machine's pip
configuration: a wheel on disk or an extra index must not answer for the public index. Nothing is
downloaded into the checkout; pip's HTTP cache is its own, in the home folder. Skips, saying why,
when the index cannot be reached. Pins on the indexes CI cannot reach (PyTorch's CUDA index,
NVIDIA's, the Neuron repository) are `python -m emr preflight --online`'s (emr/README.md).
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from emr import index_check
from emr.stacks import EXECUTOR_PLATFORM, NEURON, PYPI, STACKS, Pin, Platform

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# Installed from the Neuron pip repository: on the public index these names hold placeholders.
NEURON_INDEX = {p.name for p in NEURON.pins} | {"torch-neuron", "neuron-cc"}
# pyproject's inf1 extra is its own Python 3.10 environment (torch-neuron has no later build).
INF1_PLATFORM = Platform("3.10", "cp", EXECUTOR_PLATFORM.glibc, "x86_64", source=EXECUTOR_PLATFORM.source)
_PIN = re.compile(r"^\s*([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*==\s*([A-Za-z0-9_.+*]+)\s*(?:;.*)?$")


def _pin(requirement: str, where: str) -> tuple[Pin, str] | None:
    match = _PIN.match(requirement)
    return (Pin(match.group(1), match.group(2), PYPI.key), where) if match else None


def _pins() -> list[tuple[Pin, str, Platform]]:
    found = [(pin, f"emr/stacks.py CUDA {stack.cuda_major}")
             for stack in STACKS.values() for pin in (*stack.pins, *stack.tensorrt_parts) if pin.index == PYPI.key]
    for extra, requirements in PYPROJECT["project"]["optional-dependencies"].items():
        found += [p for r in requirements if (p := _pin(r, f"pyproject.toml [{extra}]"))]
    makefile = (ROOT / "Makefile").read_text()
    for variable in ("TORCH_SPEC", "RAY_SPEC"):
        spec = re.search(rf"^{variable} \?= (\S+)", makefile, re.M).group(1)
        found.append(_pin(spec, f"Makefile {variable}"))
    airflow = (ROOT / "emr" / "airflow-requirements.txt").read_text().splitlines()
    found += [p for r in airflow if (p := _pin(r.split("#")[0], "emr/airflow-requirements.txt"))]
    return [(pin, where, INF1_PLATFORM if where.endswith("[inf1]") else EXECUTOR_PLATFORM)
            for pin, where in found if pin.name not in NEURON_INDEX]


PINS = _pins()


def test_the_pins_are_collected_from_every_place_that_installs() -> None:
    wheres = {where.split(" [")[0] for _, where, _ in PINS}
    assert wheres == {"emr/stacks.py CUDA 12", "emr/stacks.py CUDA 13", "pyproject.toml", "Makefile TORCH_SPEC",
                      "Makefile RAY_SPEC", "emr/airflow-requirements.txt"}
    names = {pin.requirement for pin, _, _ in PINS}
    assert {"tensorrt-cu12==10.16.1.11", "torch==2.13.0", "flash-tokenizer==1.2.0", "torch==1.13.1",
            "apache-airflow==3.3.2"} <= names
    assert not names & {"torch==2.13.0+cu126"}  # that one is on PyTorch's index: preflight --online


@pytest.mark.parametrize("pin, where, platform", PINS, ids=[f"{p.requirement} ({w})" for p, w, _ in PINS])
def test_the_pinned_version_is_on_the_public_index(pin: Pin, where: str, platform: Platform) -> None:
    try:
        problem = index_check.missing(pin, platform=platform)
    except index_check.IndexUnreachable as exc:
        pytest.skip(str(exc))
    assert problem is None, f"{where}: {problem}"
