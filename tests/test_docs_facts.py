"""The external facts the docs state are the ones the tables hold (issue #26).

The tables: emr/releases.py (release labels and what each line ships) and emr/stacks.py (the
GPU and Neuron stacks, the driver each needs), each fact with its source and the date it was
read. A doc (README.md, emr/README.md, docs/*.md) fails here when it states a release label, a
CUDA build, a torch or TensorRT pin, an NVIDIA driver branch, a Neuron pin or a Neuron release
that the tables do not hold, when emr/README.md's release table differs from emr/releases.py,
or when a command of its "Checks only AWS can answer" names an EMR operation or parameter
botocore's service model does not have.
"""
from __future__ import annotations

import re
import shlex

import pytest

from emr import releases
from emr.stacks import NEURON, STACKS
from tests.fake_tensorrt import PINNED as TENSORRT_BINDINGS_TESTED
from tests.test_readme_commands import DOCS, REPO

EMR_README = REPO / "emr" / "README.md"


def _held_labels() -> set[str]:
    return {label for line in releases.LINES for label in line.labels} | {releases.S3A_SINCE}


# kind -> (pattern whose group 1 is the stated value, the values the tables hold, how they match)
def _exact(held):
    return lambda value: value in held


def _prefix_of(pins):
    """A stated version may be a pin or a prefix of it (``2.9``, ``2.9.x``, ``2.9.*``)."""
    def match(value: str) -> bool:
        stem = re.sub(r"(\.(x|\*))+$", "", value).rstrip(".")
        return any(pin == stem or pin.startswith(stem + ".") for pin in pins)
    return match


FACTS = {
    "EMR release label": (r"\b(emr-(?:spark-)?\d+\.\d+\.\d+(?:-latest|-\d{8})?)\b", _exact(_held_labels())),
    "CUDA build": (r"\b(cu1\d{2})\b", _exact({s.build for s in STACKS.values()})),
    "torch CUDA pin": (r"\btorch[ =]=?(\d+\.\d+\.\d+\+cu\d+)", _exact({s.torch.version for s in STACKS.values()})),
    "TensorRT pin": (r"\btensorrt-cu1\d(?:-libs|-bindings)?[ =]=?(\d+\.\d+\.\d+\.\d+)",
                     _exact({s.tensorrt.version for s in STACKS.values()} | set(TENSORRT_BINDINGS_TESTED))),
    "NVIDIA driver branch": (r"\bR(\d{3})\b", _exact({str(s.driver_min) for s in STACKS.values()})),
    "torch-neuronx version": (r"\btorch-neuronx[ =]=?(\d[\d.]*(?:\.[x*])?)", _prefix_of([NEURON.torch_neuronx.version])),
    "neuronx-cc version": (r"\bneuronx-cc[ =]=?(\d[\d.]*(?:\.[x*])?)", _prefix_of([NEURON.neuronx_cc.version])),
    "Neuron release (x.y.z)": (r"\bNeuron (\d+\.\d+\.\d+)\b", _exact({NEURON.release})),
}


def _statements(kind: str):
    pattern, _ = FACTS[kind]
    for doc in DOCS:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for match in re.finditer(pattern, line):
                yield f"{doc.relative_to(REPO)}:{number}", match.group(1)


@pytest.mark.parametrize("kind", FACTS)
def test_every_stated_fact_is_one_the_tables_hold(kind: str) -> None:
    held = FACTS[kind][1]
    wrong = [f"{where}: {value}" for where, value in _statements(kind) if not held(value)]
    assert not wrong, f"{kind}s the docs state that emr/releases.py and emr/stacks.py do not hold: {wrong}"


def test_the_checks_see_what_they_check() -> None:
    """Each kind finds statements in today's docs, so a broken pattern cannot pass unnoticed."""
    assert all(list(_statements(kind)) for kind in FACTS), [k for k in FACTS if not list(_statements(k))]


def _release_table() -> dict[str, dict[str, str]]:
    """emr/README.md's "EMR 7 and EMR 8" table: row title -> {column: cell}."""
    lines = EMR_README.read_text().split("### EMR 7 and EMR 8", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in lines[start:next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))]]
    return {cells[0]: dict(zip(rows[0][1:], cells[1:])) for cells in rows[2:]}


def test_the_release_table_in_emr_readme_is_emr_releases_py() -> None:
    table = _release_table()
    assert list(table["release label on EC2 (`--release-label`)"]) == [line.name for line in releases.LINES]
    for line in releases.LINES:
        assert table["release label on EC2 (`--release-label`)"][line.name].startswith(f"`{line.default_label}`")
        eks = table["release label on EKS (`eks-submit --release-label`)"][line.name]
        assert eks.startswith(f"`{line.default_eks_label}`") and (line.eks_dated_label or "") in eks
        assert table["Spark, Scala, Java"][line.name].startswith(f"{line.spark_version},")
        assert table["Python on the nodes"][line.name].startswith(", ".join(line.pythons))
        assert table["`Applications` in the request"][line.name].startswith(", ".join(line.applications))
        assert table["the archive's pip constraints (that PySpark's `sql` extra)"][line.name] == \
            ", ".join(f"{name}{spec}" for name, spec in line.executor_libraries.items())
        hadoop = table["Hadoop"][line.name]
        assert hadoop == line.hadoop if line.hadoop else hadoop == "no Hadoop application"
    default = [name for name, cell in table["release label on EC2 (`--release-label`)"].items() if "the default" in cell]
    assert default == [releases.DEFAULT.name]


def _aws_commands() -> list[list[str]]:
    text = EMR_README.read_text()
    section = text[text.index("## Checks only AWS can answer"):text.index("## Running on EMR")]
    return [shlex.split(line.strip().split(" | ")[0]) for line in section.splitlines()
            if line.strip().startswith("aws emr ")]


def test_the_checks_only_aws_can_answer_are_real_emr_calls() -> None:
    """Each `aws emr <op> --param …` is an operation of botocore's EMR model with those parameters."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("emr")
    operations = {re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower(): name for name in model.operation_names}
    commands = _aws_commands()
    assert len(commands) == 4
    for words in commands:
        operation = model.operation_model(operations[words[2]])
        members = set(operation.input_shape.members) if operation.input_shape else set()
        for word in words[3:]:
            if word.startswith("--") and word not in ("--query", "--output", "--region"):
                parameter = "".join(part.capitalize() for part in word[2:].split("-"))
                assert parameter in members, (words, parameter, sorted(members))
