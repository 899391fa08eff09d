"""emr.deployment: the Airflow Variable's settings become the same requests as the CLI's."""

from __future__ import annotations

import pytest

from emr.deployment import cluster_request, eks_job_runs, merged, scoring_steps
from emr.errors import EmrError

JOBS = {
    "duplicates": {"input": "s3://d/p/", "output": "s3://d/o/", "model": "s3://m/dup/", "args": ["--backend", "onnx"]},
    "query_intent": {"input": "s3://d/q/", "output": "s3://d/i/", "model": "s3://m/int/"},
}
SETTINGS = {"prefix": "s3://deploy/v1/", "log_uri": "s3://logs/", "jobs": JOBS}


def test_params_override_the_variable_only_when_set() -> None:
    out = merged({"profile": "g5", "core_count": 2}, {"profile": "p4d", "core_count": None})
    assert out == {"profile": "p4d", "core_count": 2}


def test_cluster_request_uses_profile_and_count() -> None:
    request = cluster_request({**SETTINGS, "profile": "g6e", "core_count": 4}, dag_run="scheduled__2026")
    core = request["Instances"]["InstanceGroups"][1]
    assert (core["InstanceType"], core["InstanceCount"]) == ("g6e.2xlarge", 4)
    assert request["Instances"]["KeepJobFlowAliveWhenNoSteps"] is True
    assert {"Key": "accel-scoring:dag-run", "Value": "scheduled__2026"} in request["Tags"]


def test_cluster_request_takes_fleets_subnet_lists_spot_and_the_v2_role() -> None:
    request = cluster_request({**SETTINGS, "fleet": True, "subnet_id": ["subnet-a", "subnet-b"],
                               "spot_task_count": 2})
    assert request["Instances"]["Ec2SubnetIds"] == ["subnet-a", "subnet-b"]
    assert [f["InstanceFleetType"] for f in request["Instances"]["InstanceFleets"]] == ["MASTER", "CORE", "TASK"]
    assert request["ServiceRole"] == "EMR_DefaultRole_V2"
    assert cluster_request({**SETTINGS, "subnet_id": "subnet-a"})["Instances"]["Ec2SubnetId"] == "subnet-a"


def test_cluster_request_takes_emr_8_and_the_stage_level_fleet() -> None:
    request = cluster_request({**SETTINGS, "release_label": "emr-spark-8.0.0", "fleet": True,
                               "cpu_core_type": "m6i.4xlarge", "gpu_task_count": 3})
    assert request["ReleaseLabel"] == "emr-spark-8.0.0" and request["Applications"] == [{"Name": "Spark"}]
    fleets = {f["InstanceFleetType"]: f for f in request["Instances"]["InstanceFleets"]}
    assert fleets["CORE"]["InstanceTypeConfigs"][0]["InstanceType"] == "m6i.4xlarge"
    assert fleets["TASK"]["TargetOnDemandCapacity"] == 3


def test_cluster_request_installs_the_bootstrap_gpu_stack_from_the_variables_indexes() -> None:
    bootstrap = {**SETTINGS, "python_env": "bootstrap"}
    urls = {"torch_index_url": "https://torch.example.invalid/cu126",
            "nvidia_index_url": "https://nvidia.example.invalid/simple"}
    install = cluster_request({**bootstrap, **urls})["BootstrapActions"][-1]["ScriptBootstrapAction"]
    assert install["Args"][1:] == ["aws,gpu", "/opt/accel-scoring/venv", "s3://deploy/v1/scripts/gpu-requirements.txt",
                                   *urls.values()]
    assert cluster_request({**bootstrap, "pip_extras": "aws"})["BootstrapActions"][-1]["ScriptBootstrapAction"][
        "Args"][1:] == ["aws", "/opt/accel-scoring/venv"]
    with pytest.raises(EmrError, match="needs --torch-index-url and --nvidia-index-url"):
        cluster_request(bootstrap)


def test_cluster_request_installs_the_torch_only_environment_from_the_torch_index_alone() -> None:
    """The Variable's pip_extras with torch-cuda and torch_index_url alone: the environment of --backend torch-cuda."""
    url = "https://torch.example.invalid/cu126"
    settings = {**SETTINGS, "python_env": "bootstrap", "pip_extras": "aws,fast,torch-cuda", "torch_index_url": url}
    install = cluster_request(settings)["BootstrapActions"][-1]["ScriptBootstrapAction"]
    assert install["Args"][1:] == ["aws,fast,torch-cuda", "/opt/accel-scoring/venv",
                                   "s3://deploy/v1/scripts/gpu-torch-requirements.txt", url]
    with pytest.raises(EmrError, match="--nvidia-index-url is not used by the torch-only GPU stack"):
        cluster_request({**settings, "nvidia_index_url": "https://nvidia.example.invalid/simple"})


def test_steps_for_both_jobs_in_order_with_the_run_date() -> None:
    steps = scoring_steps(SETTINGS, "2026-11-01")
    assert [s["Name"] for s in steps] == ["score-duplicates-2026-11-01", "score-query_intent-2026-11-01"]
    args = steps[0]["HadoopJarStep"]["Args"]
    assert args[-4:] == ["--run-date", "2026-11-01", "--backend", "onnx"]


def test_the_jobs_the_variable_configures_run_in_the_job_lists_order() -> None:
    embed = {"input": "s3://d/t/", "output": "s3://d/e/", "model": "s3://m/emb/"}
    steps = scoring_steps({**SETTINGS, "jobs": {"embed_texts": embed, **JOBS}}, "2026-11-01")
    assert [s["Name"] for s in steps] == ["score-duplicates-2026-11-01", "score-query_intent-2026-11-01",
                                          "score-embed_texts-2026-11-01"]
    assert steps[2]["HadoopJarStep"]["Args"][-6:-2] == ["--output", "s3://d/e/", "--model", "s3://m/emb/"]
    assert [s["Name"] for s in scoring_steps({**SETTINGS, "jobs": {"embed_texts": embed}}, "2026-11-01")] == [
        "score-embed_texts-2026-11-01"]
    with pytest.raises(EmrError, match="has no jobs.embed_texts settings"):
        scoring_steps({**SETTINGS, "run_jobs": ["embed_texts"]}, "2026-11-01")


def test_a_configured_cache_gives_each_job_its_own_folder() -> None:
    steps = scoring_steps({**SETTINGS, "cache": "s3://deploy/cache"}, "2026-11-01")
    for step, job in zip(steps, ("duplicates", "query_intent")):
        args = step["HadoopJarStep"]["Args"]
        assert args[args.index("--cache") + 1] == f"s3://deploy/cache/{job}/"
    assert "--cache" not in scoring_steps(SETTINGS, "2026-11-01")[0]["HadoopJarStep"]["Args"]
    eks = {"virtual_cluster_id": "vc", "execution_role_arn": "arn:aws:iam::1:role/r", "image": "img:1"}
    run = eks_job_runs({**SETTINGS, "cache": "s3://deploy/cache/", "eks": eks}, "2026-11-01")["query_intent"]
    argv = run["jobDriver"]["sparkSubmitJobDriver"]["entryPointArguments"]
    assert argv[argv.index("--cache") + 1] == "s3://deploy/cache/query_intent/"


def test_missing_settings_are_named() -> None:
    with pytest.raises(EmrError, match="lacks log_uri"):
        cluster_request({"prefix": "s3://deploy/v1/"})
    with pytest.raises(EmrError, match="lacks model"):
        scoring_steps({**SETTINGS, "jobs": {**JOBS, "duplicates": {"input": "a", "output": "b"}}}, "2026-11-01")
    with pytest.raises(EmrError, match="lacks eks"):
        eks_job_runs(SETTINGS, "2026-11-01")


def test_eks_job_runs_per_job() -> None:
    eks = {"virtual_cluster_id": "vc", "execution_role_arn": "arn:aws:iam::1:role/r", "image": "img:1"}
    runs = eks_job_runs({**SETTINGS, "eks": eks}, "2026-11-01")
    assert list(runs) == ["duplicates", "query_intent"]
    assert runs["query_intent"]["jobDriver"]["sparkSubmitJobDriver"]["entryPoint"] == \
        "s3://deploy/v1/jobs/query_intent.py"


def test_eks_job_runs_take_the_inf2_size_and_scheduler() -> None:
    eks = {"virtual_cluster_id": "vc", "execution_role_arn": "arn:aws:iam::1:role/r", "image": "img:1",
           "instance_type": "inf2.8xlarge", "executor_scheduler": "my-scheduler"}
    props = eks_job_runs({**SETTINGS, "eks": eks}, "2026-11-01")["duplicates"]["configurationOverrides"][
        "applicationConfiguration"][0]["properties"]
    assert props["spark.kubernetes.executor.node.selector.node.kubernetes.io/instance-type"] == "inf2.8xlarge"
    assert props["spark.kubernetes.executor.scheduler.name"] == "my-scheduler"


def test_the_readme_variable_examples_build_the_dags_requests() -> None:
    """emr/README.md, "Before the first run": the Airflow Variable as a new user would paste it."""
    import json
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "emr" / "README.md").read_text()
    section = readme.split("## Before the first run", 1)[1].split("\n## ", 1)[0]
    emr_variable, eks_variable = (json.loads(block) for block in re.findall(r"```json\n(.*?)\n\s*```", section, re.S))
    request = cluster_request(emr_variable, dag_run="manual__2026-11-01")
    assert request["Instances"]["InstanceGroups"][1]["InstanceType"] == "g5.2xlarge"
    steps = scoring_steps(emr_variable, "2026-11-01")
    assert len(steps) == 2
    assert "--cache" in steps[0]["HadoopJarStep"]["Args"]
    runs = eks_job_runs(eks_variable, "2026-11-01")
    assert sorted(runs) == ["duplicates", "query_intent"]
    assert runs["duplicates"]["virtualClusterId"] == "VC_ID"


# --- the checks add-step makes, before a DAG creates a cluster or adds a step (emr/step_policy.py) ---

GPU_JOBS = {job: {**spec, "args": ["--backend", "tensorrt"]} for job, spec in JOBS.items()}


def test_checked_steps_are_the_steps_once_the_staged_archive_runs_their_backend(aws) -> None:
    from emr.deployment import checked_scoring_steps
    from tests import moto_support

    moto_support.stage_deployment(SETTINGS["prefix"])
    settings = {**SETTINGS, "jobs": GPU_JOBS}
    assert checked_scoring_steps(settings, "2026-11-01", s3=_s3(), emr=None) == scoring_steps(settings, "2026-11-01")


def test_checked_steps_give_add_steps_refusal_for_an_archive_without_tensorrt(aws) -> None:
    from emr.deployment import checked_scoring_steps
    from tests import moto_support

    moto_support.stage_deployment(SETTINGS["prefix"], stack={})
    with pytest.raises(EmrError) as refused:
        checked_scoring_steps({**SETTINGS, "jobs": GPU_JOBS}, "2026-11-01", s3=_s3(), emr=None)
    assert (str(refused.value), refused.value.exit_code) == (
        "--backend tensorrt needs torch and tensorrt, which s3://deploy/v1/env/accel-scoring-env.tar.gz lacks (it "
        "has Python 3.11); build the GPU environment with `make package-gpu` and stage it", 2)


def test_checked_steps_read_the_bootstrap_environment_the_run_will_create(aws) -> None:
    """Without a cluster yet, the Variable's pip_extras say what the executors' Python will hold."""
    from emr.deployment import checked_scoring_steps
    from tests import moto_support

    moto_support.stage_deployment(SETTINGS["prefix"], stack={})  # the archive is not used
    settings = {**SETTINGS, "jobs": GPU_JOBS, "python_env": "bootstrap", "pip_extras": "aws"}
    with pytest.raises(EmrError, match=r"^--backend tensorrt needs torch and tensorrt, which the bootstrap "
                                       r"environment of --pip-extras aws lacks .*create the cluster with "
                                       r"--python-env bootstrap --pip-extras aws,fast,gpu"):
        checked_scoring_steps(settings, "2026-11-01", s3=_s3(), emr=None)
    gpu = {**settings, "pip_extras": "aws,fast,gpu", "torch_index_url": "https://t.invalid/cu126",
           "nvidia_index_url": "https://n.invalid/simple"}
    assert len(checked_scoring_steps(gpu, "2026-11-01", s3=_s3(), emr=None)) == 2


def test_checked_steps_and_job_runs_need_their_files_staged(aws) -> None:
    from emr.deployment import checked_eks_job_runs, checked_scoring_steps
    from tests import moto_support

    moto_support.stage_deployment(SETTINGS["prefix"], leave_out=("duplicates.py",))
    with pytest.raises(EmrError, match=r"^s3://deploy/v1/jobs/duplicates.py does not exist; stage it first"):
        checked_scoring_steps(SETTINGS, "2026-11-01", s3=_s3(), emr=None)
    aws.reset()
    moto_support.stage_deployment(SETTINGS["prefix"], leave_out=("executor-pod-template.yaml",))
    eks = {**SETTINGS, "eks": {"virtual_cluster_id": "vc", "execution_role_arn": "arn:aws:iam::1:role/r",
                               "image": "img"}}
    with pytest.raises(EmrError, match=r"executor-pod-template.yaml does not exist; stage it first"):
        checked_eks_job_runs(eks, "2026-11-01", s3=_s3())


def _s3():
    import boto3

    return boto3.client("s3")


def test_the_variable_names_an_iceberg_table_its_runs_folder_and_the_glue_warehouse() -> None:
    """The Airflow DAGs pass a table output through the same Variable as a folder output: the step
    and the EKS job run get the table, its runs folder and the Glue-backed Iceberg catalog."""
    jobs = {**JOBS, "duplicates": {**JOBS["duplicates"], "output": "iceberg:glue.scores.duplicates",
                                   "runs_dir": "s3://d/runs/duplicates/"}}
    settings = {**SETTINGS, "jobs": jobs, "iceberg_warehouse": "s3://d/warehouse/",
                "eks": {"virtual_cluster_id": "vc", "execution_role_arn": "arn:aws:iam::1:role/r", "image": "i"}}
    step, intent = scoring_steps(settings, "2026-11-01")
    args = step["HadoopJarStep"]["Args"]
    assert "spark.sql.catalog.glue.warehouse=s3://d/warehouse/" in args and "--jars" in args
    assert args[args.index("--runs-dir") + 1] == "s3://d/runs/duplicates/"
    assert "--jars" not in intent["HadoopJarStep"]["Args"]  # a folder output needs no Iceberg
    run = eks_job_runs(settings, "2026-11-01")["duplicates"]
    assert "iceberg-spark3-runtime.jar" in run["jobDriver"]["sparkSubmitJobDriver"]["sparkSubmitParameters"]
    with pytest.raises(EmrError, match="needs a runs folder"):
        scoring_steps({**settings, "iceberg_warehouse": None}, "2026-11-01")
