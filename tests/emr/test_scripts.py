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
