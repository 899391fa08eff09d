"""EMR on EKS scheduling: pod templates, executor sizing per inf2 size and the StartJobRun request."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from emr import layout as L
from emr.eks import EXECUTOR_NEURONCORES_ENV, EksSettings, build_start_job_run_request
from emr.errors import EmrError
from emr.k8s.sizing import INF2, Inf2Node
from emr.steps import JobRequest
from tests.emr.test_requests import _validate

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "emr" / "k8s"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
LAYOUT = L.Layout.at("s3://deploy/accel/v1")
JOB = JobRequest("query_intent", "s3://data/queries/", "s3://data/intents/", "s3://deploy/accel/v1/models/m/1/",
                 "2026-11-01", ("--backend", "neuronx"))


def _template(name: str) -> dict:
    return yaml.safe_load((K8S / name).read_text())


def _required_terms(pod: dict) -> list[dict]:
    return pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]


def test_driver_stays_off_every_neuron_size_without_a_custom_label() -> None:
    driver = _template(L.DRIVER_POD_TEMPLATE)
    assert "nodeSelector" not in driver["spec"]  # a label general nodes lack would leave it Pending
    (term,) = _required_terms(driver)
    assert term["matchExpressions"] == [{"key": INSTANCE_TYPE, "operator": "NotIn", "values": list(INF2)}]
    assert "tolerations" not in driver["spec"]


def test_executors_go_to_inf2_nodes_and_leave_their_resources_to_spark() -> None:
    executor = _template(L.EXECUTOR_POD_TEMPLATE)
    assert "nodeSelector" not in executor["spec"]
    (term,) = _required_terms(executor)
    assert term["matchExpressions"] == [{"key": INSTANCE_TYPE, "operator": "In", "values": list(INF2)}]
    assert executor["spec"]["tolerations"] == [
        {"key": "aws.amazon.com/neuron", "operator": "Exists", "effect": "NoSchedule"}]
    # Spark overrides container cpu, memory and aws.amazon.com/neuroncore; a value here would mislead.
    assert "containers" not in executor["spec"]


@pytest.mark.parametrize("node", INF2.values(), ids=lambda n: n.instance_type)
def test_one_executor_per_neuroncore_fits_the_allocatable_node(node: Inf2Node) -> None:
    assert node.executors_per_node == node.neuron_cores
    assert node.executors_per_node * node.executor_cpu_m <= node.allocatable_cpu_m
    assert node.executors_per_node * node.executor_pod_memory_mib <= node.allocatable_memory_mib
    # The Python worker with torch-neuronx, the Neuron runtime and the NEFFs live outside the heap.
    assert node.executor_overhead_mib >= 3 * 1024 and node.executor_overhead_mib > node.executor_memory_mib


def test_the_smallest_node_reserves_what_the_eks_ami_reserves() -> None:
    node = INF2["inf2.xlarge"]
    assert node.allocatable_cpu_m == 4000 - 80 - 250  # 60m + 10m + 2 x 5m kube-reserved, DaemonSets
    assert node.allocatable_memory_mib == 16 * 1024 - (255 + 11 * 250) - 100 - 512


def _readme_sizing_rows() -> list[list[str]]:
    text = (REPO / "emr" / "README.md").read_text()
    table = text.split("| instance | vCPUs |", 1)[1].split("\n\n", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def test_readme_sizing_table_is_the_code() -> None:
    expected = [[f"`{n.instance_type}`", str(n.vcpus), f"{n.memory_gib} GiB",
                 f"{n.allocatable_cpu_m:g}m / {n.allocatable_memory_mib} MiB", str(n.neuron_cores),
                 str(n.executors_per_node), f"{n.executor_cpu_m}m",
                 f"{n.executor_memory_mib} + {n.executor_overhead_mib} MiB"] for n in INF2.values()]
    assert _readme_sizing_rows() == expected, "emr/README.md's inf2 table differs from emr/k8s/sizing.py"


@pytest.mark.parametrize("instance_type", list(INF2))
def test_start_job_run_sizes_pins_and_marks_executors(instance_type: str) -> None:
    settings = EksSettings("vc123", "arn:aws:iam::123456789012:role/emr-eks-job", "acct.dkr.ecr/neuron:1",
                           executor_instances=INF2[instance_type].executors_per_node, instance_type=instance_type)
    request = build_start_job_run_request(LAYOUT, JOB, settings, client_token="t-1")
    _validate("emr-containers", "StartJobRun", request)
    submit = request["jobDriver"]["sparkSubmitJobDriver"]
    assert shlex.split(submit["sparkSubmitParameters"]) == ["--py-files", str(LAYOUT.pyfiles)]
    (defaults,) = request["configurationOverrides"]["applicationConfiguration"]
    assert defaults["classification"] == "spark-defaults"
    conf, node = defaults["properties"], INF2[instance_type]
    assert conf[f"spark.kubernetes.executor.node.selector.{INSTANCE_TYPE}"] == instance_type
    assert conf["spark.kubernetes.executor.request.cores"] == f"{node.executor_cpu_m}m"
    assert conf["spark.executor.memory"] == f"{node.executor_memory_mib}m"
    assert conf["spark.executor.memoryOverhead"] == f"{node.executor_overhead_mib}m"
    assert conf["spark.executor.cores"] == conf["spark.task.cpus"] == "1"
    assert conf["spark.executor.resource.neuroncore.amount"] == conf["spark.task.resource.neuroncore.amount"] == "1"
    assert conf[f"spark.executorEnv.{EXECUTOR_NEURONCORES_ENV}"] == "1"
    assert conf["spark.dynamicAllocation.enabled"] == "false"
    assert not any(re.match(r"spark\.kubernetes\.(driver\.)?node\.selector\.", k) for k in conf)


def test_extra_conf_overrides_the_sizing() -> None:
    settings = EksSettings("vc", "arn:aws:iam::1:role/r", "img:1", extra_conf={"spark.executor.memoryOverhead": "6g"})
    conf = build_start_job_run_request(LAYOUT, JOB, settings)["configurationOverrides"][
        "applicationConfiguration"][0]["properties"]
    assert conf["spark.executor.memoryOverhead"] == "6g"


def test_an_unsized_instance_type_is_refused() -> None:
    with pytest.raises(EmrError, match="no executor sizing for 'inf1.xlarge'") as caught:
        EksSettings("vc", "arn:aws:iam::1:role/r", "img:1", instance_type="inf1.xlarge")
    assert caught.value.exit_code == 2


def test_executor_scheduler_is_set_for_executors_only() -> None:
    settings = EksSettings("vc", "arn:aws:iam::1:role/r", "img:1", executor_scheduler="my-scheduler")
    conf = build_start_job_run_request(LAYOUT, JOB, settings)["configurationOverrides"][
        "applicationConfiguration"][0]["properties"]
    assert conf["spark.kubernetes.executor.scheduler.name"] == "my-scheduler"
    assert "spark.kubernetes.scheduler.name" not in conf and "spark.kubernetes.driver.scheduler.name" not in conf
    default = build_start_job_run_request(LAYOUT, JOB, EksSettings("vc", "arn:aws:iam::1:role/r", "img:1"))
    assert not any("scheduler" in k for k in default["configurationOverrides"]["applicationConfiguration"][0][
        "properties"])


def test_eksctl_node_groups_match_the_templates() -> None:
    config = yaml.safe_load((K8S / "eksctl-cluster.yaml").read_text())
    groups = {g["name"]: g for g in config["managedNodeGroups"]}
    assert groups["inf2"]["instanceType"] in INF2 and groups["general"]["instanceType"] not in INF2
    (toleration,) = _template(L.EXECUTOR_POD_TEMPLATE)["spec"]["tolerations"]
    assert groups["inf2"]["taints"] == [{"key": toleration["key"], "value": "true", "effect": toleration["effect"]}]
    assert "taints" not in groups["general"]


def test_job_execution_role_policies() -> None:
    import json

    trust = json.loads((K8S / "iam" / "job-execution-trust-policy.json").read_text())
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"Service": "elasticmapreduce.amazonaws.com"}
    policy = {s["Sid"]: s for s in json.loads((K8S / "iam" / "job-execution-policy.json").read_text())["Statement"]}
    assert policy["ReadStagedCodeModelsAndInput"]["Action"] == ["s3:GetObject"]
    writes = policy["WriteOutputsAndLogs"]
    assert "s3:PutObject" in writes["Action"] and "s3:DeleteObject" in writes["Action"]  # partition overwrite
    assert all(r.startswith("arn:aws:s3:::BUCKET/") and r.endswith("/*") for r in writes["Resource"])
    assert not any("*" in s["Action"] or s["Action"] == "s3:*" for s in policy.values())
