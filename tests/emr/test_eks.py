"""EMR on EKS scheduling: pod templates, executor sizing per inf2 size and the StartJobRun request."""

from __future__ import annotations

from pathlib import Path

import yaml

from emr import layout as L

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "emr" / "k8s"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
INF2 = ["inf2.xlarge", "inf2.8xlarge", "inf2.24xlarge", "inf2.48xlarge"]


def _template(name: str) -> dict:
    return yaml.safe_load((K8S / name).read_text())


def _required_terms(pod: dict) -> list[dict]:
    return pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]


def test_driver_stays_off_every_neuron_size_without_a_custom_label() -> None:
    driver = _template(L.DRIVER_POD_TEMPLATE)
    assert "nodeSelector" not in driver["spec"]  # a label general nodes lack would leave it Pending
    (term,) = _required_terms(driver)
    assert term["matchExpressions"] == [{"key": INSTANCE_TYPE, "operator": "NotIn", "values": INF2}]
    assert "tolerations" not in driver["spec"]


def test_executors_go_to_inf2_nodes_and_leave_their_resources_to_spark() -> None:
    executor = _template(L.EXECUTOR_POD_TEMPLATE)
    assert "nodeSelector" not in executor["spec"]
    (term,) = _required_terms(executor)
    assert term["matchExpressions"] == [{"key": INSTANCE_TYPE, "operator": "In", "values": INF2}]
    assert executor["spec"]["tolerations"] == [
        {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}]
    # Spark overrides container cpu, memory and aws.amazon.com/neuroncore; a value here would mislead.
    assert "containers" not in executor["spec"]

