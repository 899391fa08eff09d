"""EMR 7, 8.0 and 8.1 side by side: the release table, EMR 8 cluster, step and EMR on EKS requests,
the stage-level fleet layout, and EMR 7's requests byte for byte as recorded.

``assets/emr7-requests.json`` was written by the request builders before the EMR 8 work and
rewritten on purpose since (the staged GPU discovery script and the driver check, the EMR 7 on
EKS label, Spark's decommission settings with Spot task nodes), so any other change to what an
EMR 7 user sends shows up here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emr import layout as L
from emr import packaging, releases
from emr.cluster import ClusterSettings, build_run_job_flow_request
from emr.eks import EksSettings, build_start_job_run_request
from emr.errors import EmrError
from emr.profiles import CPU_NODES, get_profile
from emr.steps import JobRequest, build_step
from tests.emr.test_requests import _conf_of, _validate

LAYOUT = L.Layout.at("s3://deploy/accel/v1")
JOB = JobRequest("duplicates", "s3://data/pairs/", "s3://data/scores/", "s3://deploy/accel/v1/models/m/1/",
                 "2026-11-01", ("--backend", "tensorrt"))
EMR7 = json.loads((Path(__file__).parent / "assets" / "emr7-requests.json").read_text())
EMR7_LINE, EMR8_0, EMR8_1 = releases.EMR7, releases.EMR8_0, releases.EMR8_1
EMR8 = EMR8_1
EKS = ("vc123", "arn:aws:iam::123456789012:role/emr-eks-job", "acct.dkr.ecr/neuron:1")


def _json(value: dict) -> dict:
    return json.loads(json.dumps(value))


# --- EMR 7 stays as it was -------------------------------------------------------------------------

def test_emr_7_requests_are_the_recorded_ones() -> None:
    g5 = get_profile("g5")
    emr7 = EMR7_LINE.default_label
    assert _json(build_run_job_flow_request(g5, LAYOUT, ClusterSettings("c", "s3://logs/", release_label=emr7))) == \
        EMR7["groups"]
    fleet = ClusterSettings("c", "s3://logs/", release_label=emr7, fleet=True, subnet_ids=("subnet-a", "subnet-b"),
                            spot_task_count=2)
    assert _json(build_run_job_flow_request(g5, LAYOUT, fleet)) == EMR7["fleet"]
    assert _json(build_step(LAYOUT, JOB)) == EMR7["step"]
    settings = EksSettings(*EKS, release_label=EMR7_LINE.default_eks_label, log_uri="s3://logs/eks/")
    assert _json(build_start_job_run_request(LAYOUT, JOB, settings, client_token="t-1")) == EMR7["eks"]


def test_the_table_has_one_row_per_spark_line_and_finds_labels_by_prefix() -> None:
    assert [(line.name, line.spark) for line in releases.LINES] == [
        ("EMR 7", "3.5"), ("EMR 8.0", "4.0"), ("EMR 8.1", "4.1")]
    assert (EMR8_0.spark_version, EMR8_1.spark_version) == ("4.0.2-amzn-0", "4.1.1-amzn-0")
    assert releases.line_of("emr-7.13.0") is EMR7_LINE
    assert releases.line_of("emr-spark-8.0.0") is EMR8_0 and releases.line_of("emr-spark-8.1.0") is EMR8_1
    assert releases.line_of("emr-spark-8.1.0-latest") is EMR8_1  # EMR on EKS labels, same families
    assert releases.line_of("emr-7.13.0-20260421") is EMR7_LINE
    assert releases.line_of("emr-6.15.0") is None
    assert releases.line_of("emr-spark-8.2.0") is None  # a Spark minor with no row is not guessed
    assert [line.stage_level_scoring for line in releases.LINES] == [False, True, True]
    for label in ("emr-6.15.0", "emr-spark-8.2.0"):
        with pytest.raises(EmrError, match="EMR 6.x ships Spark 3.0-3.4.*needs its row in emr/releases.py") as caught:
            releases.require_line(label)
        assert caught.value.exit_code == 2


def test_the_default_is_the_newest_long_term_support_release_and_eks_is_current() -> None:
    assert releases.DEFAULT is EMR8_1 and EMR8_1.lts and not EMR7_LINE.lts
    assert releases.DEFAULT.default_label == "emr-spark-8.1.0"
    assert releases.DEFAULT.default_eks_label == "emr-spark-8.1.0-latest"
    assert EMR7_LINE.default_eks_label == "emr-7.14.0-latest"  # emr-7.14.0 is on EMR on EKS too
    assert EMR7_LINE.hadoop == "3.4.2-amzn-2"


def test_every_row_says_where_its_facts_come_from_and_when() -> None:
    for line in releases.LINES:
        assert line.source and all(src.startswith("https://docs.aws.amazon.com/emr/") for src in line.source), line
        assert line.read == "2026-12-03" and line.pyspark_metadata.startswith(f"pyspark {line.spark}."), line


# --- EMR 8 on EC2 -----------------------------------------------------------------------------------

@pytest.mark.parametrize("label", ["emr-spark-8.0.0", "emr-spark-8.1.0"])
@pytest.mark.parametrize("fleet", [False, True])
def test_emr_8_cluster_names_spark_alone_and_gets_emr_7s_gpu_configuration(fleet: bool, label: str) -> None:
    settings = ClusterSettings("c", "s3://logs/", release_label=label, fleet=fleet)
    request = build_run_job_flow_request(get_profile("g5"), LAYOUT, settings)
    _validate("emr", "RunJobFlow", request)
    assert request["ReleaseLabel"] == label
    assert request["Applications"] == [{"Name": "Spark"}]
    emr7 = EMR7["fleet" if fleet else "groups"]
    by_name = {c["Classification"]: c for c in request["Configurations"]}
    for classification in ("yarn-site", "container-executor", "capacity-scheduler"):
        assert by_name[classification] == {c["Classification"]: c for c in emr7["Configurations"]}[classification]
    assert request["BootstrapActions"] == emr7["BootstrapActions"]  # cgroup v1 mount, cache dir, driver check
    spark = _conf_of(request, "spark-defaults")
    assert spark["spark.executor.resource.gpu.discoveryScript"] == "./get_gpus.sh"
    assert spark["spark.yarn.dist.files"] == "s3://deploy/accel/v1/scripts/get_gpus.sh"
    assert spark["spark.dynamicAllocation.enabled"] == "false"


def test_emr_8_steps_are_emr_7s() -> None:
    """A step names no release: spark-submit, the archive and the job are the same on both lines."""
    step = build_step(LAYOUT, JOB)
    _validate("emr", "AddJobFlowSteps", {"JobFlowId": "j-1", "Steps": [step]})
    assert _json(step) == EMR7["step"]


# --- EMR on EKS 8 -----------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [EMR8_0, EMR8_1])
def test_eks_8_job_run_takes_the_spark_8_label(line) -> None:
    settings = EksSettings(*EKS, release_label=line.default_eks_label)
    request = build_start_job_run_request(LAYOUT, JOB, settings, client_token="t-1")
    _validate("emr-containers", "StartJobRun", request)
    assert request["releaseLabel"] == f"{line.default_label}-latest"
    emr7 = build_start_job_run_request(LAYOUT, JOB, EksSettings(*EKS, release_label=EMR7_LINE.default_eks_label),
                                       client_token="t-1")
    assert {**request, "releaseLabel": emr7["releaseLabel"]} == emr7  # only the label differs


def test_eks_label_of_no_line_is_refused() -> None:
    with pytest.raises(EmrError, match="'emr-6.15.0-latest' is not emr-7.x"):
        EksSettings(*EKS, release_label="emr-6.15.0-latest")


# --- the stage-level fleet: CPU core nodes, GPU task nodes --------------------------------------------

def _stage_level(**extra) -> dict:
    settings = ClusterSettings("c", "s3://logs/", release_label="emr-spark-8.0.0", fleet=True,
                               subnet_ids=("subnet-a", "subnet-b"), cpu_core_type="m6i.2xlarge",
                               core_instance_count=2, **{"gpu_task_count": 2, **extra})
    request = build_run_job_flow_request(get_profile("g5"), LAYOUT, settings)
    _validate("emr", "RunJobFlow", request)
    return request


def test_stage_level_fleet_puts_gpus_on_task_nodes_only() -> None:
    request = _stage_level()
    fleets = {f["InstanceFleetType"]: f for f in request["Instances"]["InstanceFleets"]}
    core, task = fleets["CORE"], fleets["TASK"]
    assert [t["InstanceType"] for t in core["InstanceTypeConfigs"]] == ["m6i.2xlarge"]
    assert core["TargetOnDemandCapacity"] == 2
    assert core["InstanceTypeConfigs"][0]["Configurations"] == [
        {"Classification": "yarn-site", "Properties": {"yarn.nodemanager.resource.memory-mb": "24576"}}]
    assert [t["InstanceType"] for t in task["InstanceTypeConfigs"]] == ["g5.2xlarge", "g5.4xlarge", "g5.8xlarge"]
    assert task["TargetOnDemandCapacity"] == 2 and "TargetSpotCapacity" not in task
    assert set(task["LaunchSpecifications"]) == {"OnDemandSpecification"}
    for gpu_type in task["InstanceTypeConfigs"]:
        node = {c["Classification"]: c for c in gpu_type["Configurations"]}
        assert node["yarn-site"]["Properties"]["yarn.nodemanager.resource-plugins"] == "yarn.io/gpu"
        assert node["yarn-site"]["Properties"]["yarn.nodemanager.resource.memory-mb"] == "24576"
        assert {c["Classification"] for c in node["container-executor"]["Configurations"]} == {"gpu", "cgroups"}
    cluster = {c["Classification"]: c["Properties"] for c in request["Configurations"]}
    assert set(cluster) == {"yarn-site", "capacity-scheduler", "spark-defaults"}  # no GPU plugin cluster-wide
    assert cluster["yarn-site"] == {
        "yarn.resource-types": "yarn.io/gpu", "yarn.scheduler.maximum-allocation-mb": "24576",
        "yarn.node-labels.enabled": "true", "yarn.node-labels.am.default-node-label-expression": "CORE"}
    spark = cluster["spark-defaults"]
    assert spark["spark.dynamicAllocation.enabled"] == "true" and spark["spark.shuffle.service.enabled"] == "true"
    assert "spark.executor.instances" not in spark
    # Spark takes any spark.executor.resource.gpu.* key as the default profile's request (and
    # refuses one without an amount): the GPU goes to the scoring stage's profile only.
    assert not [k for k in spark if k.startswith(("spark.executor.resource.", "spark.task.resource."))]
    assert spark["spark.executor.cores"] == "4"
    assert {k: v for k, v in spark.items() if k.startswith("spark.accelScoring.scoring.")} == {
        "spark.accelScoring.scoring.executor.resource.gpu.amount": "1",
        "spark.accelScoring.scoring.executor.resource.gpu.discoveryScript": "./get_gpus.sh",
        "spark.accelScoring.scoring.task.resource.gpu.amount": "0.5",
        "spark.accelScoring.scoring.executor.cores": "4", "spark.accelScoring.scoring.task.cpus": "2",
        "spark.accelScoring.scoring.executor.memory": "14336m",
        "spark.accelScoring.scoring.executor.memoryOverhead": "6144m"}


def test_stage_level_fleet_takes_spot_gpus_beside_on_demand_ones() -> None:
    task = [f for f in _stage_level(spot_task_count=3)["Instances"]["InstanceFleets"]
            if f["InstanceFleetType"] == "TASK"][0]
    assert task["TargetOnDemandCapacity"] == 2 and task["TargetSpotCapacity"] == 3
    assert set(task["LaunchSpecifications"]) == {"OnDemandSpecification", "SpotSpecification"}
    assert all(t["BidPriceAsPercentageOfOnDemandPrice"] == 100.0 for t in task["InstanceTypeConfigs"])


def test_every_cpu_core_type_holds_the_driver_and_a_cpu_executor() -> None:
    from emr.profiles import (CPU_EXECUTOR_CORES, CPU_EXECUTOR_MEMORY_MB, CPU_EXECUTOR_MEMORY_OVERHEAD_MB,
                              DRIVER_CORES, DRIVER_MEMORY_MB, DRIVER_MEMORY_OVERHEAD_MB)

    for node in CPU_NODES.values():
        assert node.yarn_memory_mb >= (DRIVER_MEMORY_MB + DRIVER_MEMORY_OVERHEAD_MB + CPU_EXECUTOR_MEMORY_MB
                                       + CPU_EXECUTOR_MEMORY_OVERHEAD_MB), node
        assert node.vcpus >= DRIVER_CORES + CPU_EXECUTOR_CORES, node


@pytest.mark.parametrize("settings, message", [
    (dict(release_label="emr-7.14.0"), "--cpu-core-type needs Spark 4 .*emr-7.14.0 is EMR 7 .Spark 3.5."),
    (dict(fleet=False), "--cpu-core-type is an instance fleet layout: add --fleet"),
    (dict(gpu_task_count=0), "puts every GPU on task nodes: add --gpu-task-count N"),
    (dict(cpu_core_type="c9.huge"), "no sizing for CPU core type 'c9.huge'; choose one of m6i.2xlarge"),
    (dict(cpu_core_type=None), "--gpu-task-count is for the stage-level layout"),
    (dict(gpu_task_count=-1), "--gpu-task-count must be 0 or more"),
])
def test_stage_level_settings_refused_before_sending(settings: dict, message: str) -> None:
    base = dict(release_label="emr-spark-8.0.0", fleet=True, cpu_core_type="m6i.2xlarge", gpu_task_count=2)
    with pytest.raises(EmrError, match=message) as caught:
        build_run_job_flow_request(get_profile("g5"), LAYOUT, ClusterSettings("c", "s3://logs/", **{**base, **settings}))
    assert caught.value.exit_code == 2


# --- the environment archive per release line ---------------------------------------------------------

def test_constraints_are_the_lines_pyspark_needs(tmp_path: Path) -> None:
    """Each line's PySpark's own Requires-Dist for its sql extra: 3.5 declares numpy<2."""
    text = packaging.write_constraints(tmp_path, EMR8_1).read_text()
    assert text.splitlines()[1:] == ["pandas>=2.2.0", "pyarrow>=15.0.0", "numpy>=1.21"]
    assert not any(line.startswith("pyspark") for line in text.splitlines())  # the cluster brings pyspark
    assert packaging.write_constraints(tmp_path, EMR8_0).read_text().splitlines()[1:] == \
        ["pandas>=2.0.0", "pyarrow>=11.0.0", "numpy>=1.21"]
    assert packaging.write_constraints(tmp_path, EMR7_LINE).read_text().splitlines()[1:] == \
        ["pandas>=1.0.5", "pyarrow>=4.0.0", "numpy>=1.15,<2"]


def test_the_constraints_are_the_installed_pysparks_metadata() -> None:
    """The line whose pyspark this venv has (.venv: 3.5, .venv-spark4: 4.1) is held to that METADATA."""
    from importlib.metadata import distribution

    pyspark = distribution("pyspark")
    line = next(line for line in releases.LINES if pyspark.version.startswith(line.spark + "."))
    sql = {}
    for requirement in pyspark.requires or ():
        spec, _, marker = requirement.partition(";")
        if 'extra == "sql"' in marker:
            name = spec.split(">")[0].split("<")[0].split("=")[0].strip()
            sql[name] = ",".join(sorted(spec[len(name):].strip().split(","), key=lambda p: not p.startswith(">")))
    assert sql == dict(line.executor_libraries), (pyspark.version, sql)


def test_the_archive_is_installed_under_the_lines_constraints(tmp_path: Path, monkeypatch) -> None:
    """The venv's pip install gets ``-c`` with the EMR 8 file; stops before packing (no network here)."""
    pytest.importorskip("venv_pack", reason="venv-pack is not installed")
    commands: list[list[str]] = []

    class Stop(Exception):
        pass

    def run(cmd: list[str], echo) -> None:
        commands.append(cmd)
        if "install" in cmd:
            raise Stop

    monkeypatch.setattr(packaging, "_run", run)
    with pytest.raises(Stop):
        packaging.build_env_archive(tmp_path / "accel_scoring-0.1.0-py3-none-any.whl", tmp_path, line=EMR8_1)
    install = commands[-1]
    constraints = install[install.index("-c") + 1]
    assert Path(constraints) == tmp_path / packaging.CONSTRAINTS
    assert "pandas>=2.2.0" in Path(constraints).read_text()
    assert install[-1].endswith("accel_scoring-0.1.0-py3-none-any.whl[aws,fast]")
