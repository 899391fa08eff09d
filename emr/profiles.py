"""GPU cluster profiles for EMR on EC2, as data, and the Spark/YARN settings they imply.

A profile names the instance type and how its GPUs are shared out: one executor per GPU, and
``tasks_per_gpu`` concurrent tasks on it (each with ``executor_cores / tasks_per_gpu`` CPUs for
tokenizing). Sizes are chosen so that every GPU node holds all its executors *and* one Spark
driver (``spark-submit --deploy-mode cluster`` runs the driver in YARN's application master,
on a core node): ``fits_on_node`` checks that for every profile. ``spark_defaults`` and
``gpu_configurations`` build fresh dicts on each call.

The YARN and container-executor settings follow the EMR release guide's GPU page for 7.x;
EMR offers no Inferentia instances, so Neuron runs on EMR on EKS (see emr/eks.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Mapping

from emr.errors import EmrError
from engines.store import CACHE_ENV  # read by the artifact store and the TensorRT plan cache

DEFAULT_RELEASE_LABEL = "emr-7.14.0"  # the newest EMR 7 release (release guide, September 2026)
GPU_DISCOVERY_SCRIPT = "/usr/lib/spark/scripts/gpu/getGpusResources.sh"  # installed by EMR
CGROUP_ROOT = "/spark-rapids-cgroup"
# EMR mounts the nodes' EBS data volumes under /mnt; the root volume only holds the OS.
PLAN_CACHE_DIR = "/mnt/accel-scoring-cache"
# The driver, in the YARN application master: it reads manifests and plans, it holds no data.
DRIVER_MEMORY_MB = 2048
DRIVER_MEMORY_OVERHEAD_MB = 1024  # the driver's Python process lives outside the JVM heap
DRIVER_CORES = 1
YARN_MEMORY_SHARE = Fraction(3, 4)  # of a node's memory given to YARN; the rest: OS and daemons


@dataclass(frozen=True)
class GpuProfile:
    name: str
    instance_type: str
    gpu: str  # one GPU's model; gpus_per_instance says how many
    gpus_per_instance: int
    vcpus: int
    memory_gib: int
    executor_cores: int
    executor_memory_mb: int
    executor_memory_overhead_mb: int  # Python workers, CUDA context, TensorRT engines
    tasks_per_gpu: int = 2
    core_instance_count: int = 2
    master_instance_type: str = "m5.xlarge"
    ebs_gib: int = 200
    # The CUDA torch + TensorRT stack is several GB; EMR's default root volume (15 GiB) is not
    # enough for it and the OS. 100 GiB is the most EMR allows.
    root_volume_gib: int = 100
    # Bigger siblings with the same GPU, for --fleet: a plan built for one runs on all of them.
    fleet_instance_types: tuple[str, ...] = ()
    description: str = ""
    extra_spark_defaults: Mapping[str, str] = field(default_factory=dict)

    @property
    def task_gpu_amount(self) -> str:
        # Spark 3.5 accepts fractions <= 0.5 or whole numbers.
        return str(float(Fraction(1, self.tasks_per_gpu)))

    @property
    def task_cpus(self) -> int:
        return max(1, self.executor_cores // self.tasks_per_gpu)

    @property
    def yarn_memory_mb(self) -> int:
        """What YARN may hand out on one node (set in yarn-site, so it is known, not guessed)."""
        return int(self.memory_gib * 1024 * YARN_MEMORY_SHARE)

    @property
    def fleet_types(self) -> tuple[str, ...]:
        return (self.instance_type, *self.fleet_instance_types)


def _siblings(family: str, *sizes: str) -> tuple[str, ...]:
    return tuple(f"{family}.{size}" for size in sizes)


def _profiles() -> Mapping[str, GpuProfile]:
    small = {"vcpus": 8, "executor_cores": 4}
    items = [
        GpuProfile("g4dn", "g4dn.2xlarge", "T4 (sm75)", 1, memory_gib=32, **small,
                   executor_memory_mb=14 * 1024, executor_memory_overhead_mb=6 * 1024,
                   fleet_instance_types=_siblings("g4dn", "4xlarge", "8xlarge"),
                   description="cheapest; TensorRT >= 10.5 still supports sm75"),
        GpuProfile("g5", "g5.2xlarge", "A10G (sm86)", 1, memory_gib=32, **small,
                   executor_memory_mb=14 * 1024, executor_memory_overhead_mb=6 * 1024,
                   fleet_instance_types=_siblings("g5", "4xlarge", "8xlarge"),
                   description="default: good price per row"),
        GpuProfile("g6", "g6.2xlarge", "L4 (sm89)", 1, memory_gib=32, **small,
                   executor_memory_mb=14 * 1024, executor_memory_overhead_mb=6 * 1024,
                   fleet_instance_types=_siblings("g6", "4xlarge", "8xlarge"),
                   description="L4, FP8-capable"),
        GpuProfile("g6e", "g6e.2xlarge", "L40S (sm89)", 1, memory_gib=64, **small,
                   executor_memory_mb=32 * 1024, executor_memory_overhead_mb=8 * 1024,
                   fleet_instance_types=_siblings("g6e", "4xlarge", "8xlarge"),
                   description="more GPU memory for long sequences"),
        GpuProfile("p4d", "p4d.24xlarge", "A100 (sm80)", 8, vcpus=96, memory_gib=1152,
                   executor_cores=10, executor_memory_mb=80 * 1024,
                   executor_memory_overhead_mb=24 * 1024,
                   core_instance_count=1, master_instance_type="m5.2xlarge",
                   description="8 executors per node, one per A100"),
        GpuProfile("p5", "p5.48xlarge", "H100 (sm90)", 8, vcpus=192, memory_gib=2048,
                   executor_cores=20, executor_memory_mb=144 * 1024,
                   executor_memory_overhead_mb=36 * 1024,
                   core_instance_count=1, master_instance_type="m5.2xlarge",
                   description="8 executors per node, one per H100"),
    ]
    return MappingProxyType({p.name: p for p in items})


PROFILES: Mapping[str, GpuProfile] = _profiles()


def get_profile(name: str) -> GpuProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise EmrError(
            f"unknown cluster profile {name!r}; choose one of {', '.join(PROFILES)}", exit_code=2
        ) from None


def check_release_label(label: str) -> str:
    """Refuse release labels these profiles are not built for; return ``label``.

    EMR 8 (``emr-spark-8.*``: Spark 4, ``Applications=[Spark]`` only, S3A instead of EMRFS) is
    the Spark 4 issue's work, not a label to try here.
    """
    if label.startswith("emr-spark-"):
        raise EmrError(
            f"release label {label!r} is EMR 8 (Spark 4): these GPU profiles, the cgroup bootstrap "
            f"and the jobs are built for EMR 7 (Spark 3.5); moving to EMR 8 is the Spark 4 issue's "
            f"work. Use an emr-7.x label (default {DEFAULT_RELEASE_LABEL})", exit_code=2)
    if not label.startswith("emr-7."):
        raise EmrError(f"release label {label!r} is not EMR 7: the GPU profiles need emr-7.x "
                       f"(Amazon Linux 2023, YARN GPU isolation with the cgroup v1 bootstrap); "
                       f"default {DEFAULT_RELEASE_LABEL}", exit_code=2)
    return label


def fits_on_node(profile: GpuProfile) -> list[str]:
    """Why a node of ``profile`` could not hold one executor per GPU plus the driver ([] if it can)."""
    gpus = profile.gpus_per_instance
    memory = gpus * (profile.executor_memory_mb + profile.executor_memory_overhead_mb) \
        + DRIVER_MEMORY_MB + DRIVER_MEMORY_OVERHEAD_MB
    cores = gpus * profile.executor_cores + DRIVER_CORES
    problems = []
    if memory > profile.yarn_memory_mb:
        problems.append(f"{profile.name}: {gpus} executors and the driver need {memory} MB, "
                        f"YARN has {profile.yarn_memory_mb} MB on a {profile.instance_type}")
    if cores > profile.vcpus:
        problems.append(f"{profile.name}: {gpus} executors and the driver need {cores} vCPUs, "
                        f"a {profile.instance_type} has {profile.vcpus}")
    return problems


def spark_defaults(profile: GpuProfile, executors: int) -> dict[str, str]:
    """Spark settings for every application on a cluster of this profile with ``executors`` GPUs.

    Dynamic allocation (on by default on EMR) is off: with one GPU per executor it would queue
    executors no GPU is free for, or keep GPUs idle; instead each GPU gets one executor.
    """
    conf = {
        "spark.dynamicAllocation.enabled": "false",
        "spark.executor.instances": str(executors),
        "spark.executor.resource.gpu.amount": "1",
        "spark.executor.resource.gpu.discoveryScript": GPU_DISCOVERY_SCRIPT,
        "spark.task.resource.gpu.amount": profile.task_gpu_amount,
        "spark.executor.cores": str(profile.executor_cores),
        "spark.task.cpus": str(profile.task_cpus),
        "spark.executor.memory": f"{profile.executor_memory_mb}m",
        "spark.executor.memoryOverhead": f"{profile.executor_memory_overhead_mb}m",
        "spark.driver.memory": f"{DRIVER_MEMORY_MB}m",
        "spark.driver.memoryOverhead": f"{DRIVER_MEMORY_OVERHEAD_MB}m",
        "spark.driver.cores": str(DRIVER_CORES),
        f"spark.executorEnv.{CACHE_ENV}": PLAN_CACHE_DIR,
        f"spark.yarn.appMasterEnv.{CACHE_ENV}": PLAN_CACHE_DIR,
        "spark.python.worker.reuse": "true",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }
    conf.update(profile.extra_spark_defaults)
    return conf


def gpu_configurations(
    profile: GpuProfile, *, executors: int, am_on_core: bool = False,
    extra_spark: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """EMR ``Configurations`` for YARN GPU isolation plus ``spark-defaults``.

    ``am_on_core`` turns on YARN node labels so application masters (in cluster mode: the
    drivers) run only on core nodes, never on Spot task nodes that may be taken back. EMR 6
    and later leave node labels off unless asked.
    """
    yarn_site = {
        "yarn.nodemanager.resource-plugins": "yarn.io/gpu",
        "yarn.resource-types": "yarn.io/gpu",
        "yarn.nodemanager.resource-plugins.gpu.allowed-gpu-devices": "auto",
        "yarn.nodemanager.resource-plugins.gpu.path-to-discovery-executables": "/usr/bin",
        "yarn.nodemanager.linux-container-executor.cgroups.mount": "true",
        "yarn.nodemanager.linux-container-executor.cgroups.mount-path": CGROUP_ROOT,
        "yarn.nodemanager.linux-container-executor.cgroups.hierarchy": "yarn",
        "yarn.nodemanager.container-executor.class":
            "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor",
        "yarn.nodemanager.resource.memory-mb": str(profile.yarn_memory_mb),
        "yarn.scheduler.maximum-allocation-mb": str(profile.yarn_memory_mb),
    }
    if am_on_core:
        yarn_site["yarn.node-labels.enabled"] = "true"
        yarn_site["yarn.node-labels.am.default-node-label-expression"] = "CORE"
    spark = {**spark_defaults(profile, executors), **(extra_spark or {})}
    return [
        {"Classification": "yarn-site", "Properties": yarn_site},
        {
            "Classification": "container-executor",
            "Properties": {},
            "Configurations": [
                {"Classification": "gpu", "Properties": {"module.enabled": "true"}},
                {"Classification": "cgroups",
                 "Properties": {"root": CGROUP_ROOT, "yarn-hierarchy": "yarn"}},
            ],
        },
        {
            "Classification": "capacity-scheduler",
            "Properties": {
                "yarn.scheduler.capacity.resource-calculator":
                    "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator",
            },
        },
        {"Classification": "spark-defaults", "Properties": spark},
    ]
