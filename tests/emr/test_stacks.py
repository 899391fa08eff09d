"""The files that cannot import emr/stacks.py (pyproject.toml, the Neuron image's Dockerfile) hold
its pins, so each pin is still written once where it is decided and read everywhere else."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from emr.stacks import EXECUTOR_PLATFORM, NEURON

REPO = Path(__file__).resolve().parents[2]


def test_the_neuronx_extra_is_one_neuron_releases_pair() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["neuronx"] == [pin.requirement for pin in NEURON.pins]
    assert NEURON.release == "2.31.1"
    assert (NEURON.torch_neuronx.version, NEURON.neuronx_cc.version) == ("2.9.0.2.15.32035", "2.26.6360.0")


def test_the_neuron_image_installs_that_release_and_its_runtime_packages() -> None:
    dockerfile = (REPO / "emr" / "k8s" / "Dockerfile").read_text()
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", dockerfile, re.M))
    assert args["TORCH_NEURONX_VERSION"] == NEURON.torch_neuronx.version
    assert args["NEURONX_CC_VERSION"] == NEURON.neuronx_cc.version
    rpm_args = {"aws-neuronx-runtime-lib": "NEURON_RUNTIME_LIB_VERSION",
                "aws-neuronx-collectives": "NEURON_COLLECTIVES_VERSION", "aws-neuronx-tools": "NEURON_TOOLS_VERSION"}
    assert {name: args[arg] for name, arg in rpm_args.items()} == dict(NEURON.rpms)
    for name, arg in rpm_args.items():
        assert f'"{name}-${{{arg}}}*"' in dockerfile  # dnf installs that release, as Neuron's installer pins one


def test_the_executor_platform_is_amazon_linux_2023() -> None:
    """manylinux tags down from AL2023's glibc 2.34: what `pip index versions` is asked for."""
    tags = EXECUTOR_PLATFORM.platform_tags()
    assert tags[0] == "manylinux_2_34_x86_64" and "manylinux_2_28_x86_64" in tags and tags[-1] == "linux_x86_64"
    assert (EXECUTOR_PLATFORM.python, EXECUTOR_PLATFORM.abi) == ("3.11", "cp311")
