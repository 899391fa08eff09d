"""EMR on EC2 GPU clusters: build the ``RunJobFlow`` request, check roles, create, describe, end.

``build_run_job_flow_request`` is pure (a profile and settings in, a new dict out); the other
functions take a boto3 client. Capacity comes as instance groups (one core type, one subnet)
or, with ``fleet=True``, instance fleets (several types and subnets, optional Spot task nodes).
With ``cpu_core_type`` as well, the fleets take the stage-level layout: CPU core nodes and the
profile's GPUs on task nodes only (emr/profiles.py ``stage_level_configurations``). The
release line (emr/releases.py) gives the applications and whether that layout is possible.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from emr import layout as L
from emr.bootstrap_env import ACTION_NAME, VENV, BootstrapEnv
from emr.errors import EmrError, explain_client_error
from emr.profiles import (PLAN_CACHE_DIR, SPOT_DECOMMISSION, CpuNode, GpuProfile, get_cpu_node,
                          gpu_configurations, stage_level_configurations)
from emr.releases import DEFAULT, ReleaseLine, require_line
from emr.stacks import GPU
from emr.steps import STEP_ACTIVE_STATES

PYTHON_ENVS = ("archive", "bootstrap")
ACTIVE_STATES = ("STARTING", "BOOTSTRAPPING", "RUNNING", "WAITING")
ENDED_STATES = ("TERMINATING", "TERMINATED", "TERMINATED_WITH_ERRORS")
# The current default roles: EMR_DefaultRole_V2 carries AmazonEMRServicePolicy_v2, which acts
# only on resources tagged MANAGED_POLICY_TAG (emr/README.md, "Roles and IAM policies").
DEFAULT_SERVICE_ROLE = "EMR_DefaultRole_V2"
DEFAULT_INSTANCE_PROFILE = "EMR_EC2_DefaultRole"
MANAGED_POLICY_TAG = ("for-use-with-amazon-emr-managed-policies", "true")
SPOT_TIMEOUT_MINUTES = 20  # then the task fleet takes On-Demand instances instead


@dataclass(frozen=True)
class ClusterSettings:
    """Per-environment settings of a cluster; the profile gives the hardware."""

    name: str
    log_uri: str
    release_label: str = DEFAULT.default_label
    core_instance_count: int | None = None
    subnet_ids: tuple[str, ...] = ()
    key_name: str | None = None
    instance_profile: str = DEFAULT_INSTANCE_PROFILE
    service_role: str = DEFAULT_SERVICE_ROLE
    python_env: str = "archive"
    bootstrap_env: BootstrapEnv = field(default_factory=BootstrapEnv)  # with python_env="bootstrap"
    idle_timeout_s: int = 3600
    keep_alive: bool = True
    fleet: bool = False
    spot_task_count: int = 0
    # The stage-level layout (with fleet): core nodes of this CPU type, GPUs on task nodes only.
    cpu_core_type: str | None = None
    gpu_task_count: int = 0  # On-Demand GPU task nodes, with cpu_core_type
    tags: Mapping[str, str] = field(default_factory=dict)
    extra_spark_defaults: Mapping[str, str] = field(default_factory=dict)

    def core_count(self, profile: GpuProfile) -> int:
        return self.core_instance_count or profile.core_instance_count

    @property
    def cpu_core(self) -> CpuNode | None:
        return get_cpu_node(self.cpu_core_type) if self.cpu_core_type else None


def _check_stage_level(settings: ClusterSettings, line: ReleaseLine) -> None:
    if settings.gpu_task_count < 0:
        raise EmrError(f"--gpu-task-count must be 0 or more, got {settings.gpu_task_count}", 2)
    if settings.cpu_core_type is None:
        if settings.gpu_task_count:
            raise EmrError("--gpu-task-count is for the stage-level layout: add --fleet --cpu-core-type TYPE", 2)
        return
    if not settings.fleet:
        raise EmrError("--cpu-core-type is an instance fleet layout: add --fleet", 2)
    if not line.stage_level_scoring:
        raise EmrError(f"--cpu-core-type needs Spark 4 (the jobs' --scoring-resources profile); "
                       f"{settings.release_label} is {line.name} (Spark {line.spark}): use an "
                       f"emr-spark-8 label", 2)
    get_cpu_node(settings.cpu_core_type)  # refuses a type with no sizing
    if not settings.gpu_task_count + settings.spot_task_count:
        raise EmrError("--cpu-core-type puts every GPU on task nodes: add --gpu-task-count N "
                       "and/or --spot-task-count N", 2)


def _check(settings: ClusterSettings) -> ReleaseLine:
    """Refuse settings EMR would reject or that would not give the cluster we mean, before sending."""
    if settings.python_env not in PYTHON_ENVS:
        raise EmrError(f"python_env must be one of {PYTHON_ENVS}, got {settings.python_env!r}", 2)
    line = require_line(settings.release_label)
    if settings.python_env == "bootstrap":
        settings.bootstrap_env.check()
    elif settings.bootstrap_env.torch_index_url or settings.bootstrap_env.nvidia_index_url:
        raise EmrError("--torch-index-url and --nvidia-index-url are for --python-env bootstrap; "
                       "an archive brings its own stack (`make package-gpu` or `make package-gpu-torch`)", 2)
    if not settings.fleet and len(settings.subnet_ids) > 1:
        raise EmrError("instance groups take one subnet; pass --fleet to let EMR choose among "
                       f"{len(settings.subnet_ids)} subnets", 2)
    if settings.spot_task_count < 0:
        raise EmrError(f"--spot-task-count must be 0 or more, got {settings.spot_task_count}", 2)
    if settings.spot_task_count and not settings.fleet:
        raise EmrError("Spot task nodes come with instance fleets: add --fleet", 2)
    _check_stage_level(settings, line)
    return line


def _bootstrap_actions(layout: L.Layout, settings: ClusterSettings) -> list[dict[str, Any]]:
    def action(name: str, script: str, *args: str) -> dict[str, Any]:
        return {"Name": name, "ScriptBootstrapAction": {"Path": str(layout.script(script)), "Args": list(args)}}

    actions = [action("yarn-gpu-cgroup-v1", L.CGROUP_BOOTSTRAP),
               action("plan-cache-on-mnt", L.CACHE_DIR_BOOTSTRAP, PLAN_CACHE_DIR),
               # Prints each node's NVIDIA driver and fails a GPU node whose driver the stack cannot use.
               action("gpu-driver-check", L.GPU_DISCOVERY, "--check-driver", str(GPU.driver_min), GPU.describe())]
    if settings.python_env == "bootstrap":
        actions.append(action(ACTION_NAME, L.INSTALL_ENV_BOOTSTRAP, *settings.bootstrap_env.script_args(layout)))
    return actions


def _data_volume(profile: GpuProfile) -> dict[str, Any]:
    return {"EbsBlockDeviceConfigs": [
        {"VolumeSpecification": {"VolumeType": "gp3", "SizeInGB": profile.ebs_gib}, "VolumesPerInstance": 1}]}


def _instance_groups(profile: GpuProfile, settings: ClusterSettings) -> dict[str, Any]:
    """One On-Demand primary and one On-Demand core group of the profile's instance type."""
    groups = [
        {"Name": "primary", "InstanceRole": "MASTER", "Market": "ON_DEMAND",
         "InstanceType": profile.master_instance_type, "InstanceCount": 1},
        {"Name": f"core-{profile.name}", "InstanceRole": "CORE", "Market": "ON_DEMAND",
         "InstanceType": profile.instance_type, "InstanceCount": settings.core_count(profile),
         "EbsConfiguration": _data_volume(profile)},
    ]
    out: dict[str, Any] = {"InstanceGroups": groups}
    if settings.subnet_ids:
        out["Ec2SubnetId"] = settings.subnet_ids[0]
    return out


def _on_demand() -> dict[str, Any]:
    return {"OnDemandSpecification": {"AllocationStrategy": "lowest-price"}}


def _spot() -> dict[str, Any]:
    """Spot, falling back to On-Demand after SPOT_TIMEOUT_MINUTES without capacity."""
    return {"SpotSpecification": {"AllocationStrategy": "price-capacity-optimized",
                                  "TimeoutDurationMinutes": SPOT_TIMEOUT_MINUTES,
                                  "TimeoutAction": "SWITCH_TO_ON_DEMAND"}}


def _instance_fleets(profile: GpuProfile, settings: ClusterSettings,
                     node_configurations: tuple[list, list] | None = None) -> dict[str, Any]:
    """Primary and On-Demand core fleets, plus a GPU task fleet when asked for.

    Core and task fleets may take any of ``profile.fleet_types`` (same GPU, one unit per node)
    in any of the subnets, so one type or zone short of capacity (InsufficientInstanceCapacity,
    common for g5/p4d/p5) does not stop the cluster. Core nodes stay On-Demand: they hold the
    application masters (the drivers) and HDFS. In the stage-level layout
    (``node_configurations``: the CPU and GPU instance types' own Configurations) the core fleet
    is ``settings.cpu_core_type`` and the GPUs are task nodes, On-Demand and/or Spot.
    """
    cpu_configs, gpu_configs = node_configurations or ([], [])
    gpu_types = [{"InstanceType": t, "WeightedCapacity": 1, "EbsConfiguration": _data_volume(profile),
                  **({"Configurations": gpu_configs} if gpu_configs else {})}
                 for t in profile.fleet_types]
    core_types = gpu_types
    if settings.cpu_core_type:
        core_types = [{"InstanceType": settings.cpu_core_type, "WeightedCapacity": 1,
                       "EbsConfiguration": _data_volume(profile), "Configurations": cpu_configs}]
    fleets = [
        {"Name": "primary", "InstanceFleetType": "MASTER", "TargetOnDemandCapacity": 1,
         "InstanceTypeConfigs": [{"InstanceType": profile.master_instance_type}],
         "LaunchSpecifications": _on_demand()},
        {"Name": f"core-{settings.cpu_core_type or profile.name}", "InstanceFleetType": "CORE",
         "TargetOnDemandCapacity": settings.core_count(profile), "InstanceTypeConfigs": core_types,
         "LaunchSpecifications": _on_demand()},
    ]
    on_demand, spot = settings.gpu_task_count, settings.spot_task_count
    if on_demand or spot:
        task: dict[str, Any] = {"Name": f"task-{profile.name}{'-spot' if spot and not on_demand else ''}",
                                "InstanceFleetType": "TASK", "LaunchSpecifications": {}}
        if on_demand:
            task["TargetOnDemandCapacity"] = on_demand
            task["LaunchSpecifications"].update(_on_demand())
        if spot:
            task["TargetSpotCapacity"] = spot
            task["LaunchSpecifications"].update(_spot())
            gpu_types = [{**t, "BidPriceAsPercentageOfOnDemandPrice": 100.0} for t in gpu_types]
        task["InstanceTypeConfigs"] = gpu_types
        fleets.append(task)
    out: dict[str, Any] = {"InstanceFleets": fleets}
    if settings.subnet_ids:
        out["Ec2SubnetIds"] = list(settings.subnet_ids)
    return out


def build_run_job_flow_request(
    profile: GpuProfile, layout: L.Layout, settings: ClusterSettings,
    steps: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The ``RunJobFlow`` request for a GPU cluster of ``profile``.

    The cluster gets the applications of its release line, YARN GPU isolation, the cgroup v1
    bootstrap EMR 7 needs (and EMR 8 gets), the staged GPU discovery script shipped with every
    application and run once per node as a bootstrap action that checks the NVIDIA driver, one
    executor per GPU (dynamic allocation off; in the
    stage-level layout dynamic allocation on and GPU settings on the GPU task nodes only), a root volume big enough for a CUDA stack, the plan cache on
    /mnt, the managed-policy tag and, with ``python_env="bootstrap"``, a bootstrap action that
    installs the project wheel into ``/opt/accel-scoring/venv`` on every node, after the CUDA torch
    and TensorRT when ``bootstrap_env`` has a gpu extra, or the CUDA torch alone for a torch-cuda
    extra (emr/bootstrap_env.py).

    Raises:
        EmrError: (exit 2) settings refused by ``_check``; nothing has been sent.
    """
    line = _check(settings)
    extra_spark = dict(settings.extra_spark_defaults)
    if settings.spot_task_count:  # a reclaimed Spot node's executors hand their blocks over as they go
        for key, value in SPOT_DECOMMISSION.items():
            extra_spark.setdefault(key, value)
    if settings.python_env == "bootstrap":
        extra_spark.setdefault("spark.pyspark.python", f"{VENV}/bin/python")
        extra_spark.setdefault("spark.pyspark.driver.python", f"{VENV}/bin/python")
    cpu = settings.cpu_core
    discovery = str(layout.script(L.GPU_DISCOVERY))
    if cpu is not None:
        configurations, cpu_node, gpu_node = stage_level_configurations(
            profile, cpu, discovery_script=discovery, extra_spark=extra_spark)
        instances = _instance_fleets(profile, settings, (cpu_node, gpu_node))
    else:
        nodes = settings.core_count(profile) + settings.spot_task_count
        configurations = gpu_configurations(profile, executors=nodes * profile.gpus_per_instance,
                                            discovery_script=discovery, am_on_core=settings.fleet,
                                            extra_spark=extra_spark)
        instances = _instance_fleets(profile, settings) if settings.fleet else _instance_groups(profile, settings)
    instances.update(KeepJobFlowAliveWhenNoSteps=settings.keep_alive, TerminationProtected=False)
    if settings.key_name:
        instances["Ec2KeyName"] = settings.key_name
    tags = {"accel-scoring:profile": profile.name, **dict(sorted(settings.tags.items())),
            MANAGED_POLICY_TAG[0]: MANAGED_POLICY_TAG[1]}
    request: dict[str, Any] = {
        "Name": settings.name,
        "LogUri": settings.log_uri,
        "ReleaseLabel": settings.release_label,
        "Applications": [{"Name": name} for name in line.applications],
        "Instances": instances,
        "EbsRootVolumeSize": profile.root_volume_gib,
        "Configurations": configurations,
        "BootstrapActions": _bootstrap_actions(layout, settings),
        "JobFlowRole": settings.instance_profile,
        "ServiceRole": settings.service_role,
        "VisibleToAllUsers": True,
        "StepConcurrencyLevel": 1,
        "Tags": [{"Key": k, "Value": v} for k, v in tags.items()],
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
    checks: list[tuple[str, Callable[[], Any], str, str]] = [
        ("instance profile", lambda: iam.get_instance_profile(InstanceProfileName=instance_profile),
         instance_profile, "`aws emr create-default-roles` creates EMR_EC2_DefaultRole"),
        ("service role", lambda: iam.get_role(RoleName=service_role), service_role,
         f"create {DEFAULT_SERVICE_ROLE} as emr/README.md 'Roles and IAM policies' shows"),
    ]
    for what, call, name, fix in checks:
        try:
            call()
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "NoSuchEntity":
                raise EmrError(
                    f"invalid {what} {name!r}: it does not exist in this account ({fix}), or "
                    f"pass an existing one with --{what.replace(' ', '-')}"
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


def terminate(client: Any, cluster_id: str, *, force: bool = False) -> None:
    """Terminate a cluster, unless steps are running or waiting on it and `force` is not given:
    terminating ends them, and a step ended mid-write leaves its run_date to be run again."""
    from botocore.exceptions import ClientError

    describe_cluster(client, cluster_id)  # an unknown id gets a clear message
    if not force:
        active = client.list_steps(ClusterId=cluster_id, StepStates=list(STEP_ACTIVE_STATES)).get("Steps", [])
        if active:
            named = ", ".join(f"{s.get('Id')} ({s.get('Name')}, {s.get('Status', {}).get('State')})" for s in active[:5])
            raise EmrError(f"cluster {cluster_id} has {len(active)} step(s) running or waiting: {named}; terminating "
                           f"would end them; wait for them (python -m emr wait), or pass --force", exit_code=2)
    try:
        client.terminate_job_flows(JobFlowIds=[cluster_id])
    except ClientError as exc:
        raise explain_client_error(exc, f"terminating cluster {cluster_id}") from exc
