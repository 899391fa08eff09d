"""``python -m emr`` end to end against a local moto server (S3, EMR, EMR on EKS, IAM).

moto accepts the requests and keeps state; where it does not move a step or job run on by
itself, tests/moto_support.py does (finish_step / finish_job_run), from a background thread
while the CLI waits.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from emr import gpu_envs, layout, packaging
from emr.cli import main
from tests import moto_support

REPO = Path(__file__).resolve().parents[2]
PREFIX = "s3://deploy/accel/v1/"
LOGS = "s3://deploy/logs/"


@pytest.fixture
def sources(tmp_path: Path) -> dict[str, Path]:
    """Stand-ins for what `make package` builds and the jobs (only their bytes matter here)."""
    dist, jobs, model = tmp_path / "dist", tmp_path / "jobs", tmp_path / "model"
    for d in (dist, jobs, model / "tokenizer"):
        d.mkdir(parents=True)
    (dist / "accel_scoring.zip").write_bytes(b"PK zip of engines, udfs, jobs, emr")
    (dist / "accel_scoring-0.1.0-py3-none-any.whl").write_bytes(b"PK wheel")
    for env in gpu_envs.ENVS:
        packaging.write_gpu_requirements(dist, env)
    with tarfile.open(dist / "accel-scoring-env.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("bin/python")
        tar.addfile(info)
    for job in layout.JOBS:
        (jobs / f"{job}.py").write_text(f"# {job} entry point\n")
    files = {"model.onnx": b"onnx" * 100, "tokenizer/tokenizer.json": b"{}"}
    for rel, data in files.items():
        (model / rel).write_bytes(data)
    manifest = {"name": "minilm-dup", "version": "1.0",
                "files": {rel: hashlib.sha256(d).hexdigest() for rel, d in files.items()}}
    (model / "manifest.json").write_text(json.dumps(manifest))
    return {"dist": dist, "jobs": jobs, "model": model}


@pytest.fixture
def staged(aws, s3, sources) -> dict[str, Path]:
    s3.create_bucket(Bucket="deploy")
    assert main(["stage", "--prefix", PREFIX, "--dist", str(sources["dist"]), "--jobs-dir",
                 str(sources["jobs"]), "--model", str(sources["model"])]) == 0
    return sources


@pytest.fixture
def roles(aws) -> None:
    import boto3

    iam = boto3.client("iam")
    iam.create_role(RoleName="EMR_DefaultRole_V2", AssumeRolePolicyDocument="{}")
    iam.create_role(RoleName="EMR_EC2_DefaultRole", AssumeRolePolicyDocument="{}")
    iam.create_instance_profile(InstanceProfileName="EMR_EC2_DefaultRole")


def _create_cluster(capsys, *extra: str) -> str:
    assert main(["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", LOGS,
                 "--name", "nightly", *extra]) == 0
    return capsys.readouterr().out.strip().splitlines()[-1]


def _add_step_args(cluster_id: str, *extra: str) -> list[str]:
    return ["add-step", "--cluster-id", cluster_id, "--prefix", PREFIX, "--job", "duplicates",
            "--input", "s3://data/pairs/", "--output", "s3://data/scores/",
            "--model", PREFIX + "models/minilm-dup/1.0/", "--run-date", "2026-11-01",
            "--poll", "0.05", *extra]


def _step_run_to_completion(cluster_id: str, capsys) -> tuple[int, str]:
    """`add-step --wait` with moto finishing the step once it is added: exit code and stdout."""
    stop = threading.Event()
    moto_support.finish_steps_when_added(lambda: cluster_id, lambda step: {}, stop=stop)
    try:
        code = main(_add_step_args(cluster_id, "--wait", "--", "--backend", "onnx"))
    finally:
        stop.set()
    return code, capsys.readouterr().out


# --- staging -------------------------------------------------------------------------------------

def test_stage_uploads_with_checksums_then_skips_unchanged(staged, s3, aws, capsys) -> None:
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket="deploy")["Contents"]}
    assert {"accel/v1/jobs/duplicates.py", "accel/v1/jobs/query_intent.py", "accel/v1/jobs/embed_texts.py",
            "accel/v1/package/accel_scoring.zip", "accel/v1/package/accel_scoring-0.1.0-py3-none-any.whl",
            "accel/v1/env/accel-scoring-env.tar.gz", "accel/v1/scripts/gpu-cgroup-bootstrap.sh",
            "accel/v1/scripts/get_neuroncores.py", "accel/v1/eks/executor-pod-template.yaml",
            "accel/v1/models/minilm-dup/1.0/model.onnx", "accel/v1/models/minilm-dup/1.0/manifest.json",
            "accel/v1/models/minilm-dup/1.0/tokenizer/tokenizer.json"} <= keys
    zip_bytes = (staged["dist"] / "accel_scoring.zip").read_bytes()
    head = s3.head_object(Bucket="deploy", Key="accel/v1/package/accel_scoring.zip", ChecksumMode="ENABLED")
    assert head["Metadata"]["sha256"] == hashlib.sha256(zip_bytes).hexdigest()
    assert head["ChecksumSHA256"]
    capsys.readouterr()
    aws.recorder.clear()

    assert main(["stage", "--prefix", PREFIX, "--dist", str(staged["dist"]), "--jobs-dir",
                 str(staged["jobs"]), "--model", str(staged["model"])]) == 0
    out = capsys.readouterr().out
    assert "uploaded" not in out and out.count("unchanged") == len(keys)
    assert aws.recorder.count("PUT", "") == 0


def test_stage_replaces_a_changed_file(staged, s3, capsys) -> None:
    (staged["jobs"] / "duplicates.py").write_text("# changed\n")
    capsys.readouterr()
    assert main(["stage", "--prefix", PREFIX, "--dist", str(staged["dist"]), "--jobs-dir",
                 str(staged["jobs"])]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("uploaded")] == [
        line for line in out.splitlines() if "jobs/duplicates.py" in line]
    assert s3.get_object(Bucket="deploy", Key="accel/v1/jobs/duplicates.py")["Body"].read() == b"# changed\n"


def test_stage_refuses_to_replace_another_model_of_the_same_name_and_version(staged, s3, capsys) -> None:
    """models/<name>/<version>/ names one artifact (a model compiled without --name is `model`
    version 1 whatever it is): another one there is refused, the staged one left whole."""
    def objects() -> dict[str, bytes]:
        listed = s3.list_objects_v2(Bucket="deploy", Prefix="accel/v1/models/minilm-dup/1.0/")["Contents"]
        return {o["Key"]: s3.get_object(Bucket="deploy", Key=o["Key"])["Body"].read() for o in listed}

    before = objects()
    model = staged["model"]
    (model / "model.onnx").write_bytes(b"another model")
    manifest = json.loads((model / "manifest.json").read_text())
    manifest["files"]["model.onnx"] = hashlib.sha256(b"another model").hexdigest()
    (model / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    argv = ["stage", "--prefix", PREFIX, "--dist", str(staged["dist"]), "--jobs-dir", str(staged["jobs"]),
            "--model", str(model)]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: {PREFIX}models/minilm-dup/1.0/ already holds another artifact") and "--force" in err
    assert objects() == before
    assert main(argv + ["--force"]) == 0
    assert objects()[f"accel/v1/models/minilm-dup/1.0/model.onnx"] == b"another model"


def test_multipart_upload_verifies_composite_checksum(aws, s3, tmp_path) -> None:
    from emr.s3 import S3Uri, upload

    s3.create_bucket(Bucket="deploy")
    big = tmp_path / "env.tar.gz"
    big.write_bytes(os.urandom(11 * 1024 * 1024))
    result = upload(s3, big, S3Uri("deploy", "env/big.tar.gz"), part_size=5 * 1024 * 1024,
                    multipart_threshold=5 * 1024 * 1024)
    assert not result.skipped
    assert aws.recorder.count("PUT", "env/big.tar.gz") == 3  # three UploadPart calls
    head = s3.head_object(Bucket="deploy", Key="env/big.tar.gz", ChecksumMode="ENABLED")
    data, part = big.read_bytes(), 5 * 1024 * 1024
    digests = b"".join(hashlib.sha256(data[i:i + part]).digest() for i in range(0, len(data), part))
    composite = base64.b64encode(hashlib.sha256(digests).digest()).decode()
    assert head["ChecksumSHA256"] in (composite, f"{composite}-3")  # S3 adds "-3"; moto may not
    assert head["Metadata"]["sha256"] == hashlib.sha256(big.read_bytes()).hexdigest()
    assert upload(s3, big, S3Uri("deploy", "env/big.tar.gz"), multipart_threshold=5 * 1024 * 1024).skipped


def test_stage_without_package_says_how_to_build_it(aws, s3, sources, capsys) -> None:
    s3.create_bucket(Bucket="deploy")
    (sources["dist"] / "accel_scoring.zip").unlink()
    assert main(["stage", "--prefix", PREFIX, "--dist", str(sources["dist"]),
                 "--jobs-dir", str(sources["jobs"])]) == 2
    assert "accel_scoring.zip (run `make package`)" in capsys.readouterr().err


def test_stage_into_another_accounts_bucket_is_access_denied(aws, sources, capsys, monkeypatch) -> None:
    moto_support.foreign_s3_client(aws.url).create_bucket(Bucket="their-bucket")
    monkeypatch.setenv("MOTO_S3_ALLOW_CROSSACCOUNT_ACCESS", "false")
    code = main(["stage", "--prefix", "s3://their-bucket/accel/", "--dist", str(sources["dist"]),
                 "--jobs-dir", str(sources["jobs"])])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("error: reading s3://their-bucket/accel/jobs/duplicates.py failed: access denied")
    assert "another account" in err and "Traceback" not in err


def test_stage_checks_an_s3_model_and_reports_a_missing_file(staged, s3, capsys) -> None:
    s3.delete_object(Bucket="deploy", Key="accel/v1/models/minilm-dup/1.0/model.onnx")
    capsys.readouterr()
    code = main(["stage", "--prefix", PREFIX, "--dist", str(staged["dist"]), "--jobs-dir",
                 str(staged["jobs"]), "--model", PREFIX + "models/minilm-dup/1.0/"])
    err = capsys.readouterr().err
    assert code == 1
    assert "s3://deploy/accel/v1/models/minilm-dup/1.0/model.onnx does not exist" in err


def test_stage_model_prefix_without_manifest(staged, capsys) -> None:
    code = main(["stage", "--prefix", PREFIX, "--dist", str(staged["dist"]), "--jobs-dir",
                 str(staged["jobs"]), "--model", "s3://deploy/nothing-here/"])
    assert code == 1
    assert "reading s3://deploy/nothing-here/manifest.json failed: no such object" in capsys.readouterr().err


# --- clusters and steps --------------------------------------------------------------------------

def test_create_cluster_sends_the_gpu_profile(staged, roles, capsys) -> None:
    import boto3

    cluster_id = _create_cluster(capsys, "--core-count", "3", "--tag", "team=search")
    cluster = boto3.client("emr").describe_cluster(ClusterId=cluster_id)["Cluster"]
    assert cluster["Name"] == "nightly" and cluster["ReleaseLabel"] == "emr-spark-8.1.0"  # the newest LTS release
    assert cluster["ServiceRole"] == "EMR_DefaultRole_V2"
    assert cluster["EbsRootVolumeSize"] == 100
    assert {"Key": "for-use-with-amazon-emr-managed-policies", "Value": "true"} in cluster["Tags"]
    classifications = {c["Classification"]: c for c in cluster["Configurations"]}
    assert classifications["spark-defaults"]["Properties"]["spark.task.resource.gpu.amount"] == "0.5"
    assert classifications["yarn-site"]["Properties"]["yarn.resource-types"] == "yarn.io/gpu"
    groups = boto3.client("emr").list_instance_groups(ClusterId=cluster_id)["InstanceGroups"]
    core = [g for g in groups if g["InstanceGroupType"] == "CORE"][0]
    assert core["InstanceType"] == "g5.2xlarge" and core["RequestedInstanceCount"] == 3
    actions = boto3.client("emr").list_bootstrap_actions(ClusterId=cluster_id)["BootstrapActions"]
    assert actions[0]["ScriptPath"] == PREFIX + "scripts/gpu-cgroup-bootstrap.sh"
    assert [a["ScriptPath"] for a in actions if a["Name"] == "gpu-driver-check"] == [PREFIX + "scripts/get_gpus.sh"]
    spark = classifications["spark-defaults"]["Properties"]
    assert (spark["spark.yarn.dist.files"], spark["spark.executor.resource.gpu.discoveryScript"]) == \
        (PREFIX + "scripts/get_gpus.sh", "./get_gpus.sh")
    staged_script = boto3.client("s3").get_object(Bucket="deploy", Key="accel/v1/scripts/get_gpus.sh")["Body"].read()
    assert staged_script == (REPO / "emr" / "scripts" / "get_gpus.sh").read_bytes()  # staged with the jobs
    assert {"Key": "team", "Value": "search"} in cluster["Tags"]


def test_create_cluster_with_fleets_over_subnets_and_spot_tasks(staged, roles, capsys) -> None:
    """moto accepts the fleet request but does not model fleets: the request is checked as sent."""
    import boto3

    fleet = ["--fleet", "--subnet-id", "subnet-a", "--subnet-id", "subnet-b", "--spot-task-count", "2"]
    cluster_id = _create_cluster(capsys, *fleet)
    cluster = boto3.client("emr").describe_cluster(ClusterId=cluster_id)["Cluster"]
    assert {"Key": "for-use-with-amazon-emr-managed-policies", "Value": "true"} in cluster["Tags"]
    assert main(["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", LOGS, "--dry-run",
                 *fleet]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    sent = [x["params"] for x in lines if x["operation"] == "RunJobFlow"][0]
    fleets = {f["InstanceFleetType"]: f for f in sent["Instances"]["InstanceFleets"]}
    assert sent["Instances"]["Ec2SubnetIds"] == ["subnet-a", "subnet-b"]
    assert fleets["CORE"]["TargetOnDemandCapacity"] == 2 and fleets["TASK"]["TargetSpotCapacity"] == 2
    assert [t["InstanceType"] for t in fleets["CORE"]["InstanceTypeConfigs"]] == \
        ["g5.2xlarge", "g5.4xlarge", "g5.8xlarge"]
    yarn = {c["Classification"]: c for c in sent["Configurations"]}["yarn-site"]["Properties"]
    assert yarn["yarn.node-labels.am.default-node-label-expression"] == "CORE"


def test_emr_8_cluster_runs_a_step(staged, roles, capsys) -> None:
    import boto3

    cluster_id = _create_cluster(capsys, "--release-label", "emr-spark-8.0.0")
    cluster = boto3.client("emr").describe_cluster(ClusterId=cluster_id)["Cluster"]
    assert cluster["ReleaseLabel"] == "emr-spark-8.0.0"
    assert [a["Name"] for a in cluster["Applications"]] == ["Spark"]
    classifications = {c["Classification"]: c for c in cluster["Configurations"]}
    assert classifications["yarn-site"]["Properties"]["yarn.nodemanager.resource-plugins"] == "yarn.io/gpu"
    code, out = _step_run_to_completion(cluster_id, capsys)
    assert code == 0, out
    step = boto3.client("emr").describe_step(ClusterId=cluster_id, StepId=out.strip().splitlines()[-1])["Step"]
    assert step["Status"]["State"] == "COMPLETED"
    assert "spark.archives=s3://deploy/accel/v1/env/accel-scoring-env.tar.gz#environment" in step["Config"]["Args"]


STAGE_LEVEL = ["--release-label", "emr-spark-8.0.0", "--fleet", "--subnet-id", "subnet-a", "--subnet-id",
               "subnet-b", "--cpu-core-type", "m6i.2xlarge", "--core-count", "2", "--gpu-task-count", "2",
               "--spot-task-count", "2"]


def test_stage_level_fleet_cluster_is_created(staged, roles, capsys) -> None:
    """moto does not model fleets: the cluster exists, and the dry run shows the fleets as sent."""
    import boto3

    cluster_id = _create_cluster(capsys, *STAGE_LEVEL)
    cluster = boto3.client("emr").describe_cluster(ClusterId=cluster_id)["Cluster"]
    assert cluster["ReleaseLabel"] == "emr-spark-8.0.0"
    spark = {c["Classification"]: c for c in cluster["Configurations"]}["spark-defaults"]["Properties"]
    assert spark["spark.dynamicAllocation.enabled"] == "true"
    assert main(["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", LOGS, "--dry-run",
                 *STAGE_LEVEL]) == 0
    captured = capsys.readouterr()
    assert "(g5: 2 x m6i.2xlarge + 2 x g5.2xlarge/g5.4xlarge/g5.8xlarge task + 2 Spot)" in captured.err  # prose
    lines = [json.loads(x) for x in captured.out.splitlines()]  # the requests alone
    sent = [x["params"] for x in lines if x["operation"] == "RunJobFlow"][0]
    fleets = {f["InstanceFleetType"]: f for f in sent["Instances"]["InstanceFleets"]}
    assert fleets["CORE"]["InstanceTypeConfigs"][0]["InstanceType"] == "m6i.2xlarge"
    assert (fleets["TASK"]["TargetOnDemandCapacity"], fleets["TASK"]["TargetSpotCapacity"]) == (2, 2)


def test_stage_level_fleet_on_emr_7_is_refused_before_sending(aws, roles, capsys) -> None:
    aws.recorder.clear()
    code = main(["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", LOGS, "--fleet",
                 "--release-label", "emr-7.14.0", "--cpu-core-type", "m6i.2xlarge", "--gpu-task-count", "2"])
    assert code == 2
    assert "--cpu-core-type needs Spark 4" in capsys.readouterr().err
    assert aws.recorder.requests == []


def test_emr_6_release_label_is_refused_before_sending(aws, roles, capsys) -> None:
    aws.recorder.clear()
    code = main(["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", LOGS,
                 "--release-label", "emr-6.15.0"])
    assert code == 2
    assert "EMR 6.x ships Spark 3.0-3.4" in capsys.readouterr().err
    assert aws.recorder.requests == []


def test_create_cluster_bootstrap_installs_the_staged_gpu_requirements_from_both_indexes(staged, roles, capsys) -> None:
    import boto3

    urls = ["https://torch.example.invalid/cu126", "https://nvidia.example.invalid/simple"]
    cluster_id = _create_cluster(capsys, "--python-env", "bootstrap", "--torch-index-url", urls[0],
                                 "--nvidia-index-url", urls[1])
    actions = boto3.client("emr").list_bootstrap_actions(ClusterId=cluster_id)["BootstrapActions"]
    install = [a for a in actions if a["Name"] == "install-python-env"][0]
    assert install["ScriptPath"] == PREFIX + "scripts/install-python-env.sh"
    assert install["Args"] == [PREFIX + "package/", "aws,fast,gpu", "/opt/accel-scoring/venv",
                               PREFIX + "scripts/gpu-requirements.txt", *urls]
    requirements = boto3.client("s3").get_object(Bucket="deploy", Key="accel/v1/scripts/gpu-requirements.txt")
    assert requirements["Body"].read() == (staged["dist"] / "gpu-requirements.txt").read_bytes()


def test_create_cluster_bootstrap_torch_cuda_installs_the_staged_torch_alone(staged, roles, capsys) -> None:
    import boto3

    url = "https://torch.example.invalid/cu126"
    cluster_id = _create_cluster(capsys, "--python-env", "bootstrap", "--pip-extras", "aws,fast,torch-cuda",
                                 "--torch-index-url", url)
    actions = boto3.client("emr").list_bootstrap_actions(ClusterId=cluster_id)["BootstrapActions"]
    install = [a for a in actions if a["Name"] == "install-python-env"][0]
    assert install["Args"] == [PREFIX + "package/", "aws,fast,torch-cuda", "/opt/accel-scoring/venv",
                               PREFIX + "scripts/gpu-torch-requirements.txt", url]
    staged_pins = boto3.client("s3").get_object(Bucket="deploy", Key="accel/v1/scripts/gpu-torch-requirements.txt")
    assert staged_pins["Body"].read() == (staged["dist"] / "gpu-torch-requirements.txt").read_bytes()


def test_create_cluster_bootstrap_gpu_without_indexes_is_refused_before_sending(aws, roles, capsys) -> None:
    aws.recorder.clear()
    code = main(["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", LOGS,
                 "--python-env", "bootstrap", "--nvidia-index-url", "https://nvidia.example.invalid/simple"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("error: --pip-extras aws,fast,gpu needs --torch-index-url and --nvidia-index-url")
    assert aws.recorder.requests == []


def test_create_cluster_with_an_invalid_instance_profile(staged, roles, capsys) -> None:
    code = main(["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", LOGS,
                 "--instance-profile", "NoSuchProfile"])
    err = capsys.readouterr().err
    assert code == 1
    assert "invalid instance profile 'NoSuchProfile'" in err and "create-default-roles" in err
    assert moto_support.emr_clusters() == {}  # nothing was created


def test_unknown_profile_is_a_usage_error(capsys) -> None:
    assert main(["create-cluster", "--profile", "inf2", "--prefix", PREFIX, "--log-uri", LOGS]) == 2
    assert "unknown cluster profile 'inf2'" in capsys.readouterr().err


def test_add_step_and_wait_until_completed(staged, roles, capsys) -> None:
    import boto3

    cluster_id = _create_cluster(capsys)
    code, out = _step_run_to_completion(cluster_id, capsys)
    assert code == 0
    step_id = out.strip().splitlines()[-1]
    assert f"step {step_id} COMPLETED; logs: {LOGS}{cluster_id}/steps/{step_id}/" in out
    assert "RUNNING" in out  # progress was printed while it ran
    step = boto3.client("emr").describe_step(ClusterId=cluster_id, StepId=step_id)["Step"]
    args = step["Config"]["Args"]
    assert step["Config"]["Jar"] == "command-runner.jar" and args[0] == "spark-submit"
    assert args[-4:] == ["--run-date", "2026-11-01", "--backend", "onnx"]


def test_failed_step_prints_reason_log_path_and_stderr_tail(staged, roles, s3, capsys) -> None:
    cluster_id = _create_cluster(capsys)

    def fail(step) -> dict:
        key = f"logs/{cluster_id}/steps/{step.id}/stderr.gz"
        s3.put_object(Bucket="deploy", Key=key,
                      Body=gzip.compress(b"starting\nValueError: column left_title missing\n"))
        return {"state": "FAILED", "reason": "Unknown Error.", "message": "spark-submit exited 2",
                "log_file": f"s3://deploy/{key}"}

    stop = threading.Event()
    moto_support.finish_steps_when_added(lambda: cluster_id, fail, stop=stop)
    try:
        code = main(_add_step_args(cluster_id, "--wait"))
    finally:
        stop.set()
    err = capsys.readouterr().err
    assert code == 1
    assert "ended FAILED" in err and "reason: Unknown Error." in err
    assert "message: spark-submit exited 2" in err
    assert f"step logs: {LOGS}{cluster_id}/steps/" in err
    assert "ValueError: column left_title missing" in err
    assert "Traceback" not in err


def test_add_step_to_an_unknown_cluster(staged, capsys) -> None:
    assert main(_add_step_args("j-NOSUCHCLUSTER")) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: unknown cluster id 'j-NOSUCHCLUSTER'") and "Traceback" not in err


def test_add_step_to_a_terminated_cluster(staged, roles, capsys) -> None:
    cluster_id = _create_cluster(capsys)
    assert main(["terminate", "--cluster-id", cluster_id]) == 0
    assert moto_support.cluster_state(cluster_id) == "TERMINATED"
    assert main(_add_step_args(cluster_id)) == 1
    assert f"cluster {cluster_id} is TERMINATED" in capsys.readouterr().err


@pytest.mark.parametrize("swap, message", [
    ({"--output": "s3a://data/pairs/scores/"}, "--output s3a://data/pairs/scores/ is inside --input s3://data/pairs/"),
    ({"--cache-root": "s3://data/scores/"}, "--cache s3://data/scores/duplicates/ is inside --output s3://data/scores/"),
])
def test_add_step_whose_folders_overlap_is_refused_before_anything_is_sent(aws, swap, message, capsys) -> None:
    argv = _add_step_args("j-ANY")
    for flag, value in swap.items():
        argv = argv[:argv.index(flag) + 1] + [value] + argv[argv.index(flag) + 2:] if flag in argv else argv + [flag, value]
    aws.recorder.clear()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {message}: a run would write into what it reads"), err
    assert aws.recorder.requests == []


def test_terminate_refuses_while_steps_run_unless_forced(staged, roles, capsys) -> None:
    cluster_id = _create_cluster(capsys)
    assert main(_add_step_args(cluster_id)) == 0
    capsys.readouterr()
    assert main(["terminate", "--cluster-id", cluster_id]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: cluster {cluster_id} has 1 step(s) running or waiting: ")
    assert "--force" in err and moto_support.cluster_state(cluster_id) != "TERMINATED"
    assert main(["terminate", "--cluster-id", cluster_id, "--force"]) == 0
    assert moto_support.cluster_state(cluster_id) == "TERMINATED"


def test_add_step_before_staging_says_so(aws, s3, roles, capsys) -> None:
    s3.create_bucket(Bucket="deploy")
    cluster_id = _create_cluster(capsys)
    assert main(_add_step_args(cluster_id)) == 1
    assert "jobs/duplicates.py does not exist; stage it first" in capsys.readouterr().err


def test_dry_run_prints_requests_and_sends_nothing(aws, capsys, monkeypatch) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key)  # a dry run needs no credentials
    aws.recorder.clear()
    assert main(["create-cluster", "--profile", "p4d", "--prefix", PREFIX, "--log-uri", LOGS,
                 "--dry-run"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    operations = [(x["service"], x["operation"]) for x in lines]
    assert operations == [("iam", "GetInstanceProfile"), ("iam", "GetRole"), ("emr", "RunJobFlow")]
    run = lines[-1]["params"]
    assert run["Instances"]["InstanceGroups"][1]["InstanceType"] == "p4d.24xlarge"
    assert aws.recorder.requests == []


def test_dry_run_add_step_prints_the_spark_submit(aws, capsys) -> None:
    assert main(_add_step_args("j-ANY", "--dry-run")) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    add = [x for x in lines if x["operation"] == "AddJobFlowSteps"][0]
    assert add["params"]["Steps"][0]["HadoopJarStep"]["Args"][0] == "spark-submit"
    assert moto_support.emr_clusters() == {}


def test_profiles_count_each_gpu_once(capsys) -> None:
    assert main(["profiles"]) == 0
    out = capsys.readouterr().out
    assert "8 x A100 (sm80)" in out and "1 x T4 (sm75)" in out and "x 8x" not in out


def test_profiles_say_which_environment_runs_which_gpu_backend(capsys) -> None:
    assert main(["profiles"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == [
        "every profile runs --backend tensorrt on the GPU environment (make package-gpu, or --python-env bootstrap "
        "with gpu in --pip-extras): CUDA 12: torch 2.13.0+cu126, tensorrt-cu12 10.16.1.11, on an NVIDIA driver R525 "
        "or newer",
        "every profile runs --backend torch-cuda on the torch-only GPU environment (make package-gpu-torch, or "
        "--python-env bootstrap with torch-cuda in --pip-extras): CUDA 12: torch 2.13.0+cu126, on an NVIDIA driver "
        "R525 or newer"]
    assert "g4dn.2xlarge" in lines[0] and lines[0].endswith("fp16 only (bf16 needs sm80)")


def _dry_runs(sources: dict[str, Path]) -> dict[str, list[str]]:
    """One invocation of every sub-command, as a new user would type it from emr/README.md."""
    vc = "vc0000000000000000000000a"
    return {
        "profiles": ["profiles"],
        "package": ["package", "--dist", str(sources["dist"])],
        "preflight": ["preflight", "--profile", "g5", "--env-archive", str(sources["dist"] / "accel-scoring-env.tar.gz")],
        "stage": ["stage", "--prefix", PREFIX, "--dist", str(sources["dist"]), "--jobs-dir",
                  str(sources["jobs"]), "--model", str(sources["model"])],
        "create-cluster": ["create-cluster", "--profile", "g5", "--prefix", PREFIX, "--log-uri", LOGS, "--wait"],
        "add-step": _add_step_args("j-ANY", "--wait"),
        "wait": ["wait", "--cluster-id", "j-ANY", "--step-id", "s-ANY"],
        "terminate": ["terminate", "--cluster-id", "j-ANY"],
        "eks-submit": _eks_args(vc, "--wait"),
        "eks-wait": ["eks-wait", "--virtual-cluster-id", vc, "--job-run-id", "run-ANY"],
    }


def test_dry_run_covers_every_sub_command(sources) -> None:
    from emr.cli import COMMANDS

    assert set(_dry_runs(sources)) == set(COMMANDS)


@pytest.mark.parametrize("command", ["profiles", "package", "preflight", "stage", "create-cluster", "add-step", "wait",
                                     "terminate", "eks-submit", "eks-wait"])
def test_every_sub_command_has_a_dry_run(command, aws, sources) -> None:
    """`python -m emr <command> … --dry-run`: exit 0, no traceback, nothing sent, nothing built."""
    env = {**os.environ, **moto_support.aws_env(aws.url), "PYTHONPATH": str(REPO)}
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.pop(key)  # a dry run needs no credentials
    before = sorted(p.name for p in sources["dist"].iterdir())
    aws.recorder.clear()
    argv = _dry_runs(sources)[command]
    if "--" in argv:  # job flags come last
        i = argv.index("--")
        argv = argv[:i] + ["--dry-run"] + argv[i:]
    else:
        argv = argv + ["--dry-run"]
    done = subprocess.run([sys.executable, "-m", "emr", *argv], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "error:" not in done.stderr
    assert "dry run:" in done.stderr
    assert aws.recorder.requests == []
    assert sorted(p.name for p in sources["dist"].iterdir()) == before
    # stdout is the requests alone, one JSON object a line, so that `| jq` reads it (issue #25)
    assert all(json.loads(line)["dry_run"] is True for line in done.stdout.splitlines()), done.stdout
    if command not in ("profiles", "package", "preflight"):  # those send nothing, so print no request
        assert done.stdout.strip(), done.stderr


# --- EMR on EKS ----------------------------------------------------------------------------------

def _virtual_cluster() -> str:
    import boto3

    return boto3.client("emr-containers").create_virtual_cluster(
        name="inf2", containerProvider={"id": "scoring-eks", "type": "EKS",
                                        "info": {"eksInfo": {"namespace": "spark"}}})["id"]


def _eks_args(vc: str, *extra: str) -> list[str]:
    """eks-submit on EMR 7's EKS label: moto 5.2's StartJobRun knows only emr-N.N.0-... labels, not the
    default emr-spark-8.1.0-latest (a later --release-label in ``extra`` wins)."""
    return ["eks-submit", "--release-label", "emr-7.14.0-latest", "--virtual-cluster-id", vc, "--execution-role-arn",
            "arn:aws:iam::123456789012:role/emr-eks-job", "--image", "123456789012.dkr.ecr.us-east-1.amazonaws.com/accel-neuron:1",
            "--prefix", PREFIX, "--log-uri", "s3://deploy/eks-logs/", "--job", "query_intent",
            "--input", "s3://data/queries/", "--output", "s3://data/intents/",
            "--model", PREFIX + "models/minilm-dup/1.0/", "--run-date", "2026-11-01", "--poll", "0.05",
            *extra]


def _finish_job_runs(outcome) -> threading.Event:
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            for run_id, job in moto_support.job_runs().items():
                if job.state == "RUNNING":
                    moto_support.finish_job_run(run_id, **outcome)
            stop.wait(0.05)

    threading.Thread(target=run, daemon=True).start()
    return stop


def test_eks_submit_requests_neuroncores_and_waits(staged, capsys) -> None:
    vc = _virtual_cluster()
    stop = _finish_job_runs({})
    try:
        code = main(_eks_args(vc, "--wait", "--instance-type", "inf2.24xlarge", "--executors", "12",
                              "--executor-scheduler", "my-scheduler", "--", "--backend", "neuronx", "--top-k", "3"))
    finally:
        stop.set()
    out = capsys.readouterr().out
    assert code == 0, out
    run_id = out.strip().splitlines()[-1]
    assert f"job run {run_id} COMPLETED" in out
    job = moto_support.job_runs()[run_id]
    props = job.configuration_overrides["applicationConfiguration"][0]["properties"]
    assert props["spark.executor.resource.neuroncore.vendor"] == "aws.amazon.com"
    assert props["spark.kubernetes.executor.node.selector.node.kubernetes.io/instance-type"] == "inf2.24xlarge"
    assert props["spark.executor.instances"] == "12" and props["spark.executor.memoryOverhead"] == "8192m"
    assert props["spark.kubernetes.executor.scheduler.name"] == "my-scheduler"
    assert job.job_driver["sparkSubmitJobDriver"]["entryPointArguments"][-4:] == \
        ["--backend", "neuronx", "--top-k", "3"]


@pytest.mark.parametrize("label", ["emr-spark-8.0.0-latest", "emr-spark-8.1.0-latest"])
def test_eks_submit_on_the_spark_8_release(staged, capsys, label) -> None:
    """A dry run: moto 5.2's StartJobRun knows only emr-N.N.0-... labels, not emr-spark-8.x.0-latest."""
    vc = _virtual_cluster()
    assert main(_eks_args(vc, "--release-label", label, "--dry-run", "--", "--backend", "neuronx")) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    sent = [x["params"] for x in lines if x["operation"] == "StartJobRun"][0]
    assert sent["releaseLabel"] == label and sent["virtualClusterId"] == vc
    assert moto_support.job_runs() == {}  # nothing was sent


def test_eks_submit_with_a_label_of_no_line_is_refused(staged, capsys) -> None:
    assert main(_eks_args(_virtual_cluster(), "--release-label", "emr-6.15.0-latest")) == 2
    assert "release label 'emr-6.15.0-latest' is not emr-7.x" in capsys.readouterr().err


def test_eks_failed_job_run_prints_reason_and_logs(staged, capsys) -> None:
    vc = _virtual_cluster()
    stop = _finish_job_runs({"state": "FAILED", "reason": "USER_ERROR",
                             "details": "Neuron runtime: no NeuronCore available"})
    try:
        code = main(_eks_args(vc, "--wait"))
    finally:
        stop.set()
    err = capsys.readouterr().err
    assert code == 1
    assert "ended FAILED" in err and "reason: USER_ERROR" in err
    assert "no NeuronCore available" in err and f"s3://deploy/eks-logs/{vc}/jobs/" in err


def test_eks_submit_to_an_unknown_virtual_cluster(staged, capsys) -> None:
    assert main(_eks_args("vcnosuchcluster000000000")) == 1
    err = capsys.readouterr().err
    assert "cannot start the job run" in err and "vcnosuchcluster000000000" in err


# --- the module entry point in a subprocess ------------------------------------------------------

def test_module_entry_point_uses_aws_endpoint_url(aws) -> None:
    env = {**os.environ, **moto_support.aws_env(aws.url), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "emr", "terminate", "--cluster-id", "j-UNKNOWN"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith("error: unknown cluster id 'j-UNKNOWN'")
    assert "Traceback" not in done.stderr
    assert aws.recorder.count("POST", "/") >= 1  # it reached the emulator, not AWS


def test_unreachable_endpoint_is_a_clear_error(capsys, monkeypatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    code = main(["terminate", "--cluster-id", "j-1", "--endpoint-url", "http://127.0.0.1:9",
                 "--region", "us-east-1"])
    err = capsys.readouterr().err
    assert code == 1 and "cannot reach the AWS endpoint" in err


ICEBERG_ARGS = ["--output", "iceberg:glue.scores.duplicates", "--runs-dir", "s3://data/runs/duplicates/",
                "--iceberg-warehouse", "s3://data/warehouse/"]


def _with(args: list[str], replaced: list[str]) -> list[str]:
    """`args` with the flags of `replaced` (flag, value pairs) set to its values."""
    out = list(args)
    for flag, value in zip(replaced[::2], replaced[1::2]):
        if flag in out:
            out[out.index(flag) + 1] = value
        else:
            out[1:1] = [flag, value]
    return out


def test_dry_run_add_step_writing_an_iceberg_table_in_glue(aws, capsys) -> None:
    """The step's spark-submit takes the cluster's Iceberg runtime and a Glue-backed catalog, and the
    job its table and runs folder (emr/tables.py)."""
    assert main(_with(_add_step_args("j-ANY", "--dry-run"), ICEBERG_ARGS)) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    args = [x for x in lines if x["operation"] == "AddJobFlowSteps"][0]["params"]["Steps"][0]["HadoopJarStep"]["Args"]
    assert args[args.index("--jars") + 1] == "/usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar"
    confs = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--conf")
    assert confs["spark.sql.catalog.glue"] == "org.apache.iceberg.spark.SparkCatalog"
    assert confs["spark.sql.catalog.glue.catalog-impl"] == "org.apache.iceberg.aws.glue.GlueCatalog"
    assert confs["spark.sql.catalog.glue.io-impl"] == "org.apache.iceberg.aws.s3.S3FileIO"
    assert confs["spark.sql.catalog.glue.warehouse"] == "s3://data/warehouse/"
    job = args[args.index(next(a for a in args if a.endswith("duplicates.py"))) + 1:]
    assert job[job.index("--output") + 1] == "iceberg:glue.scores.duplicates"
    assert job[job.index("--runs-dir") + 1] == "s3://data/runs/duplicates/"


def test_dry_run_add_step_registering_parquet_in_glue(aws, capsys) -> None:
    assert main(_add_step_args("j-ANY", "--dry-run", "--", "--register-table", "scores.duplicates")) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    args = [x for x in lines if x["operation"] == "AddJobFlowSteps"][0]["params"]["Steps"][0]["HadoopJarStep"]["Args"]
    assert "spark.sql.catalogImplementation=hive" in args and "--jars" not in args
    assert ("spark.hadoop.hive.metastore.client.factory.class="
            "com.amazonaws.glue.catalog.metastore.AWSGlueDataCatalogHiveClientFactory") in args


@pytest.mark.parametrize("drop, message", [
    ("--runs-dir", "needs a runs folder (--runs-dir"), ("--iceberg-warehouse", "the Glue catalog's warehouse")])
def test_an_iceberg_step_without_its_runs_folder_or_warehouse_is_refused_before_sending(aws, drop, message, capsys):
    args = _with(_add_step_args("j-ANY", "--dry-run"), ICEBERG_ARGS)
    i = args.index(drop)
    assert main(args[:i] + args[i + 2:]) == 2
    out = capsys.readouterr()
    assert message in out.err and "AddJobFlowSteps" not in out.out


def test_dry_run_eks_submit_writing_an_iceberg_table_in_glue(aws, capsys) -> None:
    vc = "vc0000000000000000000000a"
    assert main(_with(_eks_args(vc, "--dry-run"), ICEBERG_ARGS)) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    request = [x for x in lines if x["operation"] == "StartJobRun"][0]["params"]
    driver = request["jobDriver"]["sparkSubmitJobDriver"]
    assert "--jars local:///usr/share/aws/iceberg/lib/iceberg-spark3-runtime.jar" in driver["sparkSubmitParameters"]
    assert driver["entryPointArguments"][driver["entryPointArguments"].index("--runs-dir") + 1] == "s3://data/runs/duplicates/"
    (defaults,) = [c for c in request["configurationOverrides"]["applicationConfiguration"]
                   if c["classification"] == "spark-defaults"]
    assert defaults["properties"]["spark.sql.catalog.glue.catalog-impl"] == "org.apache.iceberg.aws.glue.GlueCatalog"
    assert defaults["properties"]["spark.sql.catalog.glue.warehouse"] == "s3://data/warehouse/"
