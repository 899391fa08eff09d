"""Request builders (no AWS): shapes validated by botocore, GPU/Neuron settings as documented."""

from __future__ import annotations

import pytest

from emr import layout as L
from emr.bootstrap_env import BootstrapEnv
from emr.cluster import ClusterSettings, build_run_job_flow_request
from emr.profiles import SPOT_DECOMMISSION
from emr.eks import EksSettings, build_start_job_run_request
from emr.errors import EmrError
from emr.profiles import PROFILES, fits_on_node, get_profile
from emr.stacks import GPU
from emr.steps import JobRequest, build_step, spark_submit_args

LAYOUT = L.Layout.at("s3://deploy/accel/v1")
JOB = JobRequest("duplicates", "s3://data/pairs/", "s3://data/scores/", "s3://deploy/accel/v1/models/m/1/",
                 "2026-11-01", ("--backend", "tensorrt"))


def _validate(service: str, operation: str, params: dict) -> None:
    import botocore.session
    from botocore.validate import validate_parameters

    model = botocore.session.get_session().get_service_model(service)
    validate_parameters(params, model.operation_model(operation).input_shape)  # raises if invalid


def _conf_of(request: dict, classification: str) -> dict:
    return [c for c in request["Configurations"] if c["Classification"] == classification][0]["Properties"]


@pytest.mark.parametrize("name", list(PROFILES))
def test_every_profile_builds_a_valid_gpu_cluster_request(name: str) -> None:
    profile = get_profile(name)
    request = build_run_job_flow_request(profile, LAYOUT, ClusterSettings("c", "s3://logs/emr/"))
    _validate("emr", "RunJobFlow", request)
    core = request["Instances"]["InstanceGroups"][1]
    assert core["InstanceRole"] == "CORE" and core["InstanceType"] == profile.instance_type
    yarn = _conf_of(request, "yarn-site")
    assert yarn["yarn.nodemanager.resource-plugins"] == "yarn.io/gpu"
    assert yarn["yarn.nodemanager.linux-container-executor.cgroups.mount-path"] == "/spark-rapids-cgroup"
    spark = _conf_of(request, "spark-defaults")
    assert spark["spark.executor.resource.gpu.amount"] == "1"
    # the project's own discovery script, staged and shipped with every application: nothing
    # depends on a script only a RAPIDS install puts under /usr/lib/spark
    assert spark["spark.executor.resource.gpu.discoveryScript"] == "./get_gpus.sh"
    assert spark["spark.yarn.dist.files"] == "s3://deploy/accel/v1/scripts/get_gpus.sh"
    assert spark["spark.executorEnv.ACCEL_SCORING_MIN_DRIVER"] == "525"
    amount = float(spark["spark.task.resource.gpu.amount"])
    assert amount <= 0.5 or amount.is_integer()  # what Spark 3.5 accepts
    assert int(spark["spark.task.cpus"]) * round(1 / amount) <= int(spark["spark.executor.cores"])
    executor_sub = [c for c in request["Configurations"] if c["Classification"] == "container-executor"][0]
    assert {c["Classification"] for c in executor_sub["Configurations"]} == {"gpu", "cgroups"}
    assert request["BootstrapActions"][0]["ScriptBootstrapAction"]["Path"] == \
        "s3://deploy/accel/v1/scripts/gpu-cgroup-bootstrap.sh"
    check = [a for a in request["BootstrapActions"] if a["Name"] == "gpu-driver-check"][0]["ScriptBootstrapAction"]
    assert check == {"Path": "s3://deploy/accel/v1/scripts/get_gpus.sh",
                     "Args": ["--check-driver", "525", GPU.describe()]}


def test_files_a_cluster_is_asked_to_ship_join_the_discovery_script() -> None:
    """--conf spark.yarn.dist.files=... adds to the shipped files: without get_gpus.sh no GPU executor starts."""
    extra = {"spark.yarn.dist.files": "s3://b/lookup.csv"}
    for settings in (ClusterSettings("c", "s3://logs/", extra_spark_defaults=extra),
                     ClusterSettings("c", "s3://logs/", extra_spark_defaults=extra, fleet=True,
                                     release_label="emr-spark-8.0.0", cpu_core_type="m6i.2xlarge", gpu_task_count=1)):
        spark = _conf_of(build_run_job_flow_request(get_profile("g5"), LAYOUT, settings), "spark-defaults")
        assert spark["spark.yarn.dist.files"] == "s3://b/lookup.csv,s3://deploy/accel/v1/scripts/get_gpus.sh"


def _tags(request: dict) -> dict:
    return {t["Key"]: t["Value"] for t in request["Tags"]}


@pytest.mark.parametrize("name", list(PROFILES))
def test_every_profile_fits_its_executors_and_a_driver_on_one_node(name: str) -> None:
    assert fits_on_node(get_profile(name)) == []


@pytest.mark.parametrize("name", list(PROFILES))
def test_gpu_cluster_has_disk_tags_roles_and_one_executor_per_gpu(name: str) -> None:
    profile = get_profile(name)
    request = build_run_job_flow_request(profile, LAYOUT, ClusterSettings("c", "s3://logs/", core_instance_count=3))
    assert 15 < request["EbsRootVolumeSize"] <= 100  # EMR's default 15 GiB; at most 100
    assert request["ReleaseLabel"] == "emr-spark-8.1.0"  # the newest long-term-support release
    assert request["ServiceRole"] == "EMR_DefaultRole_V2" and request["JobFlowRole"] == "EMR_EC2_DefaultRole"
    assert _tags(request)["for-use-with-amazon-emr-managed-policies"] == "true"
    assert _tags(request)["accel-scoring:profile"] == name
    spark = _conf_of(request, "spark-defaults")
    assert spark["spark.dynamicAllocation.enabled"] == "false"
    assert spark["spark.executor.instances"] == str(3 * profile.gpus_per_instance)
    assert spark["spark.executorEnv.ACCEL_SCORING_CACHE"] == "/mnt/accel-scoring-cache"
    assert spark["spark.yarn.appMasterEnv.ACCEL_SCORING_CACHE"] == "/mnt/accel-scoring-cache"
    yarn = _conf_of(request, "yarn-site")
    assert yarn["yarn.nodemanager.resource.memory-mb"] == yarn["yarn.scheduler.maximum-allocation-mb"]
    assert "yarn.node-labels.enabled" not in yarn  # instance groups: no task nodes, AM on core anyway
    cache = request["BootstrapActions"][1]["ScriptBootstrapAction"]
    assert cache == {"Path": "s3://deploy/accel/v1/scripts/node-cache-dir.sh", "Args": ["/mnt/accel-scoring-cache"]}


def test_fleet_spreads_core_over_types_and_subnets_with_spot_tasks_and_the_am_on_core() -> None:
    profile = get_profile("g5")
    settings = ClusterSettings("c", "s3://logs/", fleet=True, subnet_ids=("subnet-a", "subnet-b"),
                               core_instance_count=2, spot_task_count=3)
    request = build_run_job_flow_request(profile, LAYOUT, settings)
    _validate("emr", "RunJobFlow", request)
    instances = request["Instances"]
    assert "InstanceGroups" not in instances and "Ec2SubnetId" not in instances
    assert instances["Ec2SubnetIds"] == ["subnet-a", "subnet-b"]
    fleets = {f["InstanceFleetType"]: f for f in instances["InstanceFleets"]}
    core, task = fleets["CORE"], fleets["TASK"]
    assert core["TargetOnDemandCapacity"] == 2 and "TargetSpotCapacity" not in core
    assert [t["InstanceType"] for t in core["InstanceTypeConfigs"]] == ["g5.2xlarge", "g5.4xlarge", "g5.8xlarge"]
    assert core["LaunchSpecifications"]["OnDemandSpecification"]["AllocationStrategy"] == "lowest-price"
    assert task["TargetSpotCapacity"] == 3 and "TargetOnDemandCapacity" not in task
    spot = task["LaunchSpecifications"]["SpotSpecification"]
    assert spot["AllocationStrategy"] == "price-capacity-optimized"
    assert spot["TimeoutAction"] == "SWITCH_TO_ON_DEMAND"
    assert {t["InstanceType"] for t in task["InstanceTypeConfigs"]} == set(profile.fleet_types)
    yarn = _conf_of(request, "yarn-site")
    assert yarn["yarn.node-labels.enabled"] == "true"
    assert yarn["yarn.node-labels.am.default-node-label-expression"] == "CORE"
    assert _conf_of(request, "spark-defaults")["spark.executor.instances"] == "5"  # 2 core + 3 Spot GPUs
    assert SPOT_DECOMMISSION.items() <= _conf_of(request, "spark-defaults").items()  # Spot executors migrate blocks


def test_fleet_without_spot_has_no_task_fleet() -> None:
    request = build_run_job_flow_request(get_profile("p5"), LAYOUT, ClusterSettings("c", "s3://logs/", fleet=True))
    _validate("emr", "RunJobFlow", request)
    assert [f["InstanceFleetType"] for f in request["Instances"]["InstanceFleets"]] == ["MASTER", "CORE"]


@pytest.mark.parametrize("settings, message", [
    (dict(subnet_ids=("subnet-a", "subnet-b")), "instance groups take one subnet; pass --fleet"),
    (dict(spot_task_count=2), "Spot task nodes come with instance fleets"),
    (dict(release_label="emr-6.15.0"), "is not emr-7.x .EMR 7, Spark 3.5. or emr-spark-8.0.x .EMR 8.0, Spark 4.0. "
                                       "or emr-spark-8.1.x .EMR 8.1, Spark 4.1."),
])
def test_settings_refused_before_anything_is_sent(settings: dict, message: str) -> None:
    with pytest.raises(EmrError, match=message) as caught:
        build_run_job_flow_request(get_profile("g5"), LAYOUT, ClusterSettings("c", "s3://logs/", **settings))
    assert caught.value.exit_code == 2


def test_requests_are_new_dicts_each_time() -> None:
    profile = get_profile("g5")
    first = build_run_job_flow_request(profile, LAYOUT, ClusterSettings("c", "s3://logs/"))
    _conf_of(first, "spark-defaults")["spark.executor.cores"] = "99"
    second = build_run_job_flow_request(profile, LAYOUT, ClusterSettings("c", "s3://logs/"))
    assert _conf_of(second, "spark-defaults")["spark.executor.cores"] == "4"


TORCH_INDEX, NVIDIA_INDEX = "https://torch.example.invalid/cu126", "https://nvidia.example.invalid/simple"
GPU_ENV = BootstrapEnv("aws,gpu", TORCH_INDEX, NVIDIA_INDEX)


def test_bootstrap_python_env_installs_the_gpu_stack_then_the_wheel_and_points_spark_at_it() -> None:
    profile = get_profile("p4d")
    request = build_run_job_flow_request(
        profile, LAYOUT, ClusterSettings("c", "s3://logs/", python_env="bootstrap", bootstrap_env=GPU_ENV))
    _validate("emr", "RunJobFlow", request)
    action = request["BootstrapActions"][-1]["ScriptBootstrapAction"]
    assert action["Path"].endswith("/scripts/install-python-env.sh")
    assert action["Args"] == ["s3://deploy/accel/v1/package/", "aws,gpu", "/opt/accel-scoring/venv",
                              "s3://deploy/accel/v1/scripts/gpu-requirements.txt", TORCH_INDEX, NVIDIA_INDEX]
    assert BootstrapEnv.from_script_args(action["Args"]) == GPU_ENV
    assert request["EbsRootVolumeSize"] == profile.root_volume_gib == 100  # room for the venv in /opt
    assert _conf_of(request, "spark-defaults")["spark.pyspark.python"] == "/opt/accel-scoring/venv/bin/python"


def test_bootstrap_without_a_gpu_extra_installs_only_the_wheel() -> None:
    request = build_run_job_flow_request(get_profile("g5"), LAYOUT, ClusterSettings(
        "c", "s3://logs/", python_env="bootstrap", bootstrap_env=BootstrapEnv("aws")))
    assert request["BootstrapActions"][-1]["ScriptBootstrapAction"]["Args"] == \
        ["s3://deploy/accel/v1/package/", "aws", "/opt/accel-scoring/venv"]


def test_bootstrap_with_torch_cuda_installs_the_torch_alone_from_pytorchs_index() -> None:
    """The torch-only environment (--backend torch-cuda): its own requirements file, one index, no NVIDIA's."""
    torch_only = BootstrapEnv("aws,fast,torch-cuda", TORCH_INDEX)
    request = build_run_job_flow_request(get_profile("g5"), LAYOUT, ClusterSettings(
        "c", "s3://logs/", python_env="bootstrap", bootstrap_env=torch_only))
    _validate("emr", "RunJobFlow", request)
    args = request["BootstrapActions"][-1]["ScriptBootstrapAction"]["Args"]
    assert args == ["s3://deploy/accel/v1/package/", "aws,fast,torch-cuda", "/opt/accel-scoring/venv",
                    "s3://deploy/accel/v1/scripts/gpu-torch-requirements.txt", TORCH_INDEX]
    assert BootstrapEnv.from_script_args(args) == torch_only
    info = torch_only.info()
    assert info.modules == ("torch",) and info.distributions["torch"] == "2.13.0+cu126"
    assert "tensorrt-cu12" not in info.distributions
    both = BootstrapEnv("aws,gpu,torch-cuda", TORCH_INDEX, NVIDIA_INDEX)  # gpu's stack holds torch-cuda's torch
    assert both.script_args(LAYOUT)[3:] == ["s3://deploy/accel/v1/scripts/gpu-requirements.txt", TORCH_INDEX,
                                            NVIDIA_INDEX]


@pytest.mark.parametrize("settings, message", [
    ({"python_env": "bootstrap"}, "--pip-extras aws,gpu needs --torch-index-url and --nvidia-index-url"),
    ({"python_env": "bootstrap", "bootstrap_env": BootstrapEnv("aws,gpu", TORCH_INDEX)}, "needs --torch-index-url"),
    ({"python_env": "bootstrap", "bootstrap_env": BootstrapEnv("aws", TORCH_INDEX, NVIDIA_INDEX)},
     "add gpu or torch-cuda to --pip-extras aws"),
    ({"python_env": "bootstrap", "bootstrap_env": BootstrapEnv("aws,torch-cuda")},
     "--pip-extras aws,torch-cuda needs --torch-index-url: the torch-only GPU stack .CUDA 12: torch 2.13.0.cu126, "
     "on an NVIDIA driver R525 or newer. comes from PyTorch's CUDA 12.6 wheel index"),
    ({"python_env": "bootstrap", "bootstrap_env": BootstrapEnv("aws,torch-cuda", TORCH_INDEX, NVIDIA_INDEX)},
     "--nvidia-index-url is not used by the torch-only GPU stack of --pip-extras aws,torch-cuda; add gpu"),
    ({"bootstrap_env": GPU_ENV}, "are for --python-env bootstrap"),
])
def test_bootstrap_gpu_stack_needs_both_indexes(settings: dict, message: str) -> None:
    with pytest.raises(EmrError, match=message) as exc:
        build_run_job_flow_request(get_profile("g5"), LAYOUT, ClusterSettings("c", "s3://logs/", **settings))
    assert exc.value.exit_code == 2


def test_unknown_profile_lists_the_known_ones() -> None:
    with pytest.raises(EmrError, match="unknown cluster profile 'inf2'.*g5"):
        get_profile("inf2")


def test_step_runs_spark_submit_with_archive_and_job_flags() -> None:
    step = build_step(LAYOUT, JOB)
    _validate("emr", "AddJobFlowSteps", {"JobFlowId": "j-1", "Steps": [step]})
    args = step["HadoopJarStep"]["Args"]
    assert step["HadoopJarStep"]["Jar"] == "command-runner.jar"
    assert args[:5] == ["spark-submit", "--deploy-mode", "cluster", "--master", "yarn"]
    assert "spark.archives=s3://deploy/accel/v1/env/accel-scoring-env.tar.gz#environment" in args
    assert "spark.executorEnv.PYSPARK_PYTHON=./environment/bin/python" in args
    assert "spark.yarn.appMasterEnv.PYSPARK_PYTHON=./environment/bin/python" in args
    assert args[args.index("--py-files") + 1] == "s3://deploy/accel/v1/package/accel_scoring.zip"
    entry = args.index("s3://deploy/accel/v1/jobs/duplicates.py")
    assert args[entry + 1:] == ["--input", "s3://data/pairs/", "--output", "s3://data/scores/",
                                "--model", "s3://deploy/accel/v1/models/m/1/", "--run-date", "2026-11-01",
                                "--backend", "tensorrt"]


def test_bootstrap_step_ships_no_archive() -> None:
    args = spark_submit_args(LAYOUT, JOB, python_env="bootstrap")
    assert not any(a.startswith("spark.archives") for a in args)


@pytest.mark.parametrize("bad", ["2026-13", "yesterday", "2026/11/01"])
def test_run_date_must_be_iso(bad: str) -> None:
    with pytest.raises(EmrError, match="--run-date must be YYYY-MM-DD"):
        JobRequest("duplicates", "i", "o", "m", bad)


def test_eks_request_asks_for_one_neuroncore_per_executor() -> None:
    settings = EksSettings("vc123", "arn:aws:iam::123456789012:role/emr-eks-job", "acct.dkr.ecr/neuron:1",
                           log_uri="s3://logs/eks/")
    request = build_start_job_run_request(LAYOUT, JOB, settings, client_token="t-1")
    _validate("emr-containers", "StartJobRun", request)
    conf = request["configurationOverrides"]["applicationConfiguration"][0]["properties"]
    assert conf["spark.executor.resource.neuroncore.amount"] == "1"
    assert conf["spark.executor.resource.neuroncore.vendor"] == "aws.amazon.com"
    assert conf["spark.task.resource.neuroncore.amount"] == "1"
    assert conf["spark.executor.resource.neuroncore.discoveryScript"].endswith("get_neuroncores.py")
    assert conf["spark.kubernetes.executor.podTemplateFile"] == \
        "s3://deploy/accel/v1/eks/executor-pod-template.yaml"
    driver = request["jobDriver"]["sparkSubmitJobDriver"]
    assert driver["entryPoint"] == "s3://deploy/accel/v1/jobs/duplicates.py"
    assert driver["entryPointArguments"][-2:] == ["--backend", "tensorrt"]
    assert request["clientToken"] == "t-1"
