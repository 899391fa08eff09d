"""EMR on EC2 GPU clusters: build the ``RunJobFlow`` request, check roles, create, describe, end.

``build_run_job_flow_request`` is pure (a profile and settings in, a new dict out); the other
functions take a boto3 client.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from emr import layout as L
from emr.errors import EmrError, explain_client_error
from emr.profiles import DEFAULT_RELEASE_LABEL, GpuProfile, gpu_configurations

BOOTSTRAP_VENV = "/opt/accel-scoring/venv"
PYTHON_ENVS = ("archive", "bootstrap")
ACTIVE_STATES = ("STARTING", "BOOTSTRAPPING", "RUNNING", "WAITING")
ENDED_STATES = ("TERMINATING", "TERMINATED", "TERMINATED_WITH_ERRORS")


@dataclass(frozen=True)
class ClusterSettings:
    """Per-environment settings of a cluster; the profile gives the hardware."""

    name: str
    log_uri: str
    release_label: str = DEFAULT_RELEASE_LABEL
    core_instance_count: int | None = None
    subnet_id: str | None = None
    key_name: str | None = None
    instance_profile: str = "EMR_EC2_DefaultRole"
    service_role: str = "EMR_DefaultRole"
    python_env: str = "archive"
    pip_extras: str = "aws,gpu"
    idle_timeout_s: int = 3600
    keep_alive: bool = True
    tags: Mapping[str, str] = field(default_factory=dict)
    extra_spark_defaults: Mapping[str, str] = field(default_factory=dict)


def build_run_job_flow_request(
    profile: GpuProfile, layout: L.Layout, settings: ClusterSettings,
    steps: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The ``RunJobFlow`` request for a GPU cluster of ``profile``.

    The cluster gets YARN GPU isolation, the cgroup v1 bootstrap EMR 7 needs, one GPU per
    executor and, with ``python_env="bootstrap"``, a bootstrap action that installs the project
    wheel (``pip_extras``) into ``/opt/accel-scoring/venv`` on every node.
    """
    if settings.python_env not in PYTHON_ENVS:
        raise EmrError(f"python_env must be one of {PYTHON_ENVS}, got {settings.python_env!r}", 2)
    extra_spark = dict(settings.extra_spark_defaults)
    bootstrap = [
        {
            "Name": "yarn-gpu-cgroup-v1",
            "ScriptBootstrapAction": {"Path": str(layout.script(L.CGROUP_BOOTSTRAP)), "Args": []},
        }
    ]
    if settings.python_env == "bootstrap":
        bootstrap.append(
            {
                "Name": "install-python-env",
                "ScriptBootstrapAction": {
                    "Path": str(layout.script(L.INSTALL_ENV_BOOTSTRAP)),
                    "Args": [str(layout.prefix.join("package").as_prefix()), settings.pip_extras,
                             BOOTSTRAP_VENV],
                },
            }
        )
        extra_spark.setdefault("spark.pyspark.python", f"{BOOTSTRAP_VENV}/bin/python")
        extra_spark.setdefault("spark.pyspark.driver.python", f"{BOOTSTRAP_VENV}/bin/python")
    instances: dict[str, Any] = {
        "InstanceGroups": [
            {
                "Name": "primary",
                "InstanceRole": "MASTER",
                "Market": "ON_DEMAND",
                "InstanceType": profile.master_instance_type,
                "InstanceCount": 1,
            },
            {
                "Name": f"core-{profile.name}",
                "InstanceRole": "CORE",
                "Market": "ON_DEMAND",
                "InstanceType": profile.instance_type,
                "InstanceCount": settings.core_instance_count or profile.core_instance_count,
                "EbsConfiguration": {
                    "EbsBlockDeviceConfigs": [
                        {"VolumeSpecification": {"VolumeType": "gp3", "SizeInGB": profile.ebs_gib},
                         "VolumesPerInstance": 1}
                    ]
                },
            },
        ],
        "KeepJobFlowAliveWhenNoSteps": settings.keep_alive,
        "TerminationProtected": False,
    }
    if settings.subnet_id:
        instances["Ec2SubnetId"] = settings.subnet_id
    if settings.key_name:
        instances["Ec2KeyName"] = settings.key_name
    request: dict[str, Any] = {
        "Name": settings.name,
        "LogUri": settings.log_uri,
        "ReleaseLabel": settings.release_label,
        "Applications": [{"Name": "Spark"}, {"Name": "Hadoop"}],
        "Instances": instances,
        "Configurations": gpu_configurations(profile, extra_spark),
        "BootstrapActions": bootstrap,
        "JobFlowRole": settings.instance_profile,
        "ServiceRole": settings.service_role,
        "VisibleToAllUsers": True,
        "StepConcurrencyLevel": 1,
        "Tags": [{"Key": "accel-scoring:profile", "Value": profile.name}]
        + [{"Key": k, "Value": v} for k, v in sorted(settings.tags.items())],
    }
    if settings.keep_alive and settings.idle_timeout_s:
        # A forgotten cluster ends itself after this long with nothing to do.
        request["AutoTerminationPolicy"] = {"IdleTimeout": settings.idle_timeout_s}
    if steps:
        request["Steps"] = [dict(s) for s in steps]
    return request


def check_roles(iam: Any, instance_profile: str, service_role: str) -> list[str]:
    """Check the EC2 instance profile and the service role exist.

    Returns warnings for checks that could not be made (no IAM read permission).

    Raises:
        EmrError: one of them does not exist.
    """
    from botocore.exceptions import ClientError

    warnings = []
    checks: list[tuple[str, Callable[[], Any], str]] = [
        ("instance profile", lambda: iam.get_instance_profile(InstanceProfileName=instance_profile),
         instance_profile),
        ("service role", lambda: iam.get_role(RoleName=service_role), service_role),
    ]
    for what, call, name in checks:
        try:
            call()
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "NoSuchEntity":
                raise EmrError(
                    f"invalid {what} {name!r}: it does not exist in this account. Create the "
                    "default EMR roles with `aws emr create-default-roles`, or pass an existing "
                    f"one with --{what.replace(' ', '-')}"
                ) from exc
            if code in ("AccessDenied", "AccessDeniedException"):
                warnings.append(f"could not check {what} {name!r} (no iam:Get* permission)")
                continue
            raise explain_client_error(exc, f"checking {what} {name!r}") from exc
    return warnings


def create_cluster(client: Any, request: Mapping[str, Any]) -> str:
    from botocore.exceptions import ClientError

    try:
        return client.run_job_flow(**request)["JobFlowId"]
    except ClientError as exc:
        message = exc.response.get("Error", {}).get("Message", "")
        if "instanceprofile" in message.lower().replace(" ", ""):
            raise EmrError(f"invalid instance profile {request.get('JobFlowRole')!r}: {message}") from exc
        raise explain_client_error(exc, "creating the cluster") from exc


def describe_cluster(client: Any, cluster_id: str) -> dict[str, Any]:
    """``DescribeCluster``; an unknown id is an ``EmrError`` saying so."""
    from botocore.exceptions import ClientError

    try:
        return client.describe_cluster(ClusterId=cluster_id)["Cluster"]
    except ClientError as exc:
        error = exc.response.get("Error", {})
        if error.get("Code") in ("InvalidRequestException", "ValidationException"):
            raise EmrError(
                f"unknown cluster id {cluster_id!r}: {error.get('Message', '')} "
                "(check the id and the region)"
            ) from exc
        raise explain_client_error(exc, f"describing cluster {cluster_id}") from exc


def require_active(client: Any, cluster_id: str) -> dict[str, Any]:
    cluster = describe_cluster(client, cluster_id)
    state = cluster.get("Status", {}).get("State")
    if state not in ACTIVE_STATES:
        reason = cluster.get("Status", {}).get("StateChangeReason", {}).get("Message") or ""
        raise EmrError(f"cluster {cluster_id} is {state}{': ' + reason if reason else ''}; "
                       "steps can only be added to a running cluster")
    return cluster


def wait_for_cluster(
    client: Any, cluster_id: str, *, poll_s: float = 30, timeout_s: float = 3600,
    echo: Callable[[str], None] = print, clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Wait until the cluster is ready (WAITING or RUNNING); return that state."""
    start, last = clock(), None
    while True:
        status = describe_cluster(client, cluster_id).get("Status", {})
        state = status.get("State")
        if state != last:
            echo(f"cluster {cluster_id}: {state} ({clock() - start:.0f}s)")
            last = state
        if state in ("WAITING", "RUNNING"):
            return state
        if state in ENDED_STATES:
            reason = status.get("StateChangeReason", {})
            raise EmrError(f"cluster {cluster_id} ended while starting: {state}: "
                           f"{reason.get('Code', '')} {reason.get('Message', '')}".rstrip())
        if clock() - start > timeout_s:
            raise EmrError(f"cluster {cluster_id} not ready after {timeout_s:.0f}s (state {state})")
        sleep(poll_s)


def terminate(client: Any, cluster_id: str) -> None:
    from botocore.exceptions import ClientError

    describe_cluster(client, cluster_id)  # an unknown id gets a clear message
    try:
        client.terminate_job_flows(JobFlowIds=[cluster_id])
    except ClientError as exc:
        raise explain_client_error(exc, f"terminating cluster {cluster_id}") from exc
