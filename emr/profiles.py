"""GPU cluster profiles for EMR on EC2, as data, and the Spark/YARN settings they imply.

A profile names the instance type and how its GPUs are shared out: one executor per GPU, and
``tasks_per_gpu`` concurrent tasks on it (each with ``executor_cores / tasks_per_gpu`` CPUs for
tokenizing). Sizes are chosen so that every GPU node holds all its executors *and* one Spark
driver (``spark-submit --deploy-mode cluster`` runs the driver in YARN's application master,
on a core node): ``fits_on_node`` checks that for every profile. ``spark_defaults`` and
``gpu_configurations`` build fresh dicts on each call.

The YARN and container-executor settings follow the EMR release guide's GPU page for 7.x, and
EMR 8 clusters get the same (emr/releases.py says why). The GPU discovery script is the
project's own (emr/scripts/get_gpus.sh), staged with the jobs and shipped with every
application, so nothing depends on what EMR installs under /usr/lib/spark. ``stage_level_configurations`` is the
other layout: CPU core nodes, GPUs only on task nodes, dynamic allocation on, for jobs that put
a GPU ResourceProfile on their scoring stage (Spark 4). EMR offers no Inferentia instances, so
Neuron runs on EMR on EKS (see emr/eks.py).

Every profile runs both GPU backends, each on its environment (emr/gpu_envs.py): ``--backend
tensorrt`` on the full GPU stack (`make package-gpu`), ``--backend torch-cuda`` on that stack's
CUDA torch alone (`make package-gpu-torch`); the same driver minimum holds for both. What a
profile's GPU cannot run (bf16 below compute capability 8.0) emr/preflight.py refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Mapping

from emr import layout as L
from emr.errors import EmrError
from emr.releases import DEFAULT
from emr.stacks import GPU
from engines.store import CACHE_ENV  # read by the artifact store and the TensorRT plan cache
from jobs.stage_resources import SCORING_PREFIX  # the keys the jobs' --scoring-resources reads

DEFAULT_RELEASE_LABEL = DEFAULT.default_label  # emr/releases.py holds it; this name for importers
# Where executors find the staged discovery script: YARN localizes spark.yarn.dist.files into
# every container's working directory (executable), so the path is relative.
GPU_DISCOVERY_SCRIPT = f"./{L.GPU_DISCOVERY}"
# Read by emr/scripts/get_gpus.sh: the oldest NVIDIA driver branch the executors' CUDA stack runs on.
DRIVER_MIN_ENV = "ACCEL_SCORING_MIN_DRIVER"
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
        # Spark 3.5 and 4.0 accept fractions <= 0.5 or whole numbers.
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
    """The profiles. Instance type, GPU model and count, vCPUs and memory (GiB) are EC2's facts, as
    its instance type pages list them (https://aws.amazon.com/ec2/instance-types/, checked
    2026-12-03); compute capabilities are NVIDIA's; the executor sizes are this project's."""
    small = {"vcpus": 8, "executor_cores": 4}
    items = [
        GpuProfile("g4dn", "g4dn.2xlarge", "T4 (sm75)", 1, memory_gib=32, **small,
                   executor_memory_mb=14 * 1024, executor_memory_overhead_mb=6 * 1024,
                   fleet_instance_types=_siblings("g4dn", "4xlarge", "8xlarge"),
                   description="cheapest; TensorRT >= 10.5 still supports sm75; fp16 only (bf16 needs sm80)"),
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


def _common_spark_defaults(discovery_script: str) -> dict[str, str]:
    """What every application on either layout gets: the driver, the plan cache, Arrow, overwrite,
    and the GPU discovery script (``discovery_script``: its staged URI) with the driver it checks."""
    return {
        "spark.yarn.dist.files": discovery_script,
        f"spark.executorEnv.{DRIVER_MIN_ENV}": str(GPU.driver_min),
        "spark.driver.memory": f"{DRIVER_MEMORY_MB}m",
        "spark.driver.memoryOverhead": f"{DRIVER_MEMORY_OVERHEAD_MB}m",
        "spark.driver.cores": str(DRIVER_CORES),
        f"spark.executorEnv.{CACHE_ENV}": PLAN_CACHE_DIR,
        f"spark.yarn.appMasterEnv.{CACHE_ENV}": PLAN_CACHE_DIR,
        "spark.python.worker.reuse": "true",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }


def spark_defaults(profile: GpuProfile, executors: int, discovery_script: str) -> dict[str, str]:
    """Spark settings for every application on a cluster of this profile with ``executors`` GPUs.

    Dynamic allocation (on by default on EMR) is off: with one GPU per executor it would queue
    executors no GPU is free for, or keep GPUs idle; instead each GPU gets one executor.
    """
    conf = {
        **_common_spark_defaults(discovery_script),
        "spark.dynamicAllocation.enabled": "false",
        "spark.executor.instances": str(executors),
        "spark.executor.resource.gpu.amount": "1",
        "spark.executor.resource.gpu.discoveryScript": GPU_DISCOVERY_SCRIPT,
        "spark.task.resource.gpu.amount": profile.task_gpu_amount,
        "spark.executor.cores": str(profile.executor_cores),
        "spark.task.cpus": str(profile.task_cpus),
        "spark.executor.memory": f"{profile.executor_memory_mb}m",
        "spark.executor.memoryOverhead": f"{profile.executor_memory_overhead_mb}m",
    }
    conf.update(profile.extra_spark_defaults)
    return conf


def _gpu_node_yarn_site(profile: GpuProfile) -> dict[str, str]:
    """A GPU NodeManager: the GPU resource plugin, cgroups isolation, and YARN's share of memory."""
    return {
        "yarn.nodemanager.resource-plugins": "yarn.io/gpu",
        "yarn.nodemanager.resource-plugins.gpu.allowed-gpu-devices": "auto",
        "yarn.nodemanager.resource-plugins.gpu.path-to-discovery-executables": "/usr/bin",
        "yarn.nodemanager.linux-container-executor.cgroups.mount": "true",
        "yarn.nodemanager.linux-container-executor.cgroups.mount-path": CGROUP_ROOT,
        "yarn.nodemanager.linux-container-executor.cgroups.hierarchy": "yarn",
        "yarn.nodemanager.container-executor.class":
            "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor",
        "yarn.nodemanager.resource.memory-mb": str(profile.yarn_memory_mb),
    }


# What Spot task nodes' executors need to leave gracefully when their node is decommissioned:
# take no more tasks, move their persisted (DISK_ONLY) blocks and shuffle files to the executors
# that stay, then exit. Spark's settings, off by default (source: the EMR on EKS best practices
# guide, "Node Decommission", https://aws.github.io/aws-emr-containers-best-practices/, read
# 2026-12-04); tests/test_cluster.py decommissions a standalone worker with them.
SPOT_DECOMMISSION = {"spark.decommission.enabled": "true", "spark.storage.decommission.enabled": "true",
                     "spark.storage.decommission.rddBlocks.enabled": "true",
                     "spark.storage.decommission.shuffleBlocks.enabled": "true"}


def _cluster_yarn_site(max_allocation_mb: int, am_on_core: bool) -> dict[str, str]:
    """The ResourceManager's side: the GPU resource type, the largest container, node labels.

    ``am_on_core`` turns on YARN node labels so application masters (in cluster mode: the
    drivers) run only on core nodes, never on (Spot) task nodes that may be taken back. EMR 6
    and later leave node labels off unless asked.
    """
    site = {"yarn.resource-types": "yarn.io/gpu",
            "yarn.scheduler.maximum-allocation-mb": str(max_allocation_mb)}
    if am_on_core:
        site["yarn.node-labels.enabled"] = "true"
        site["yarn.node-labels.am.default-node-label-expression"] = "CORE"
    return site


def _gpu_container_executor() -> dict[str, Any]:
    return {
        "Classification": "container-executor",
        "Properties": {},
        "Configurations": [
            {"Classification": "gpu", "Properties": {"module.enabled": "true"}},
            {"Classification": "cgroups", "Properties": {"root": CGROUP_ROOT, "yarn-hierarchy": "yarn"}},
        ],
    }


def _capacity_scheduler() -> dict[str, Any]:
    """Schedule by memory, vcores and GPUs together (the default calculator counts memory only)."""
    return {"Classification": "capacity-scheduler",
            "Properties": {"yarn.scheduler.capacity.resource-calculator":
                           "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator"}}


def gpu_configurations(
    profile: GpuProfile, *, executors: int, discovery_script: str, am_on_core: bool = False,
    extra_spark: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """EMR ``Configurations`` for YARN GPU isolation on every node plus ``spark-defaults``."""
    yarn_site = {**_gpu_node_yarn_site(profile), **_cluster_yarn_site(profile.yarn_memory_mb, am_on_core)}
    spark = _with_extra(spark_defaults(profile, executors, discovery_script), extra_spark)
    return [
        {"Classification": "yarn-site", "Properties": yarn_site},
        _gpu_container_executor(),
        _capacity_scheduler(),
        {"Classification": "spark-defaults", "Properties": spark},
    ]


@dataclass(frozen=True)
class CpuNode:
    """A CPU instance type for the core fleet of the stage-level layout."""

    instance_type: str
    vcpus: int
    memory_gib: int

    @property
    def yarn_memory_mb(self) -> int:
        return int(self.memory_gib * 1024 * YARN_MEMORY_SHARE)


# vCPUs and memory (GiB) as EC2's instance type pages list them (checked 2026-12-03).
CPU_NODES: Mapping[str, CpuNode] = MappingProxyType({n.instance_type: n for n in (
    CpuNode("m6i.2xlarge", 8, 32), CpuNode("m6i.4xlarge", 16, 64), CpuNode("m7i.2xlarge", 8, 32),
    CpuNode("m7i.4xlarge", 16, 64), CpuNode("r6i.2xlarge", 8, 64),
)})
# The default ResourceProfile's executors in the stage-level layout: reading, tokenizing and
# writing on CPUs; small enough that one fits beside a GPU executor on most GPU nodes.
CPU_EXECUTOR_CORES = 4
CPU_EXECUTOR_MEMORY_MB = 6 * 1024
CPU_EXECUTOR_MEMORY_OVERHEAD_MB = 2 * 1024


def get_cpu_node(instance_type: str) -> CpuNode:
    try:
        return CPU_NODES[instance_type]
    except KeyError:
        raise EmrError(f"no sizing for CPU core type {instance_type!r}; choose one of {', '.join(CPU_NODES)} "
                       "(emr/profiles.py CPU_NODES)", exit_code=2) from None


def _with_extra(defaults: dict[str, str], extra: Mapping[str, str] | None) -> dict[str, str]:
    """``extra`` over ``defaults``, except that files to ship are added to the discovery script, not
    put in its place (an executor without it cannot start)."""
    merged = {**defaults, **(extra or {})}
    key = "spark.yarn.dist.files"
    if extra and key in extra and defaults[key] not in extra[key].split(","):
        merged[key] = f"{extra[key]},{defaults[key]}"
    return merged


def stage_level_spark_defaults(profile: GpuProfile, discovery_script: str) -> dict[str, str]:
    """Spark settings for the stage-level layout: CPU executors by default, YARN starts GPU ones on demand.

    Dynamic allocation is on (a ResourceProfile with executor resources needs it on YARN) with
    EMR's external shuffle service, so the GPU executors the scoring stage's profile asks for
    are started only for that stage and released when idle. The default executors take no GPU,
    and no ``spark.executor.resource.gpu.*`` key is set at all: Spark reads any such key as a
    request of the default profile and refuses one without an amount. The scoring stage's
    executors get the profile's sizing under ``SCORING_PREFIX``, which only that stage reads.
    """
    scoring = {
        "executor.resource.gpu.amount": "1",
        "executor.resource.gpu.discoveryScript": GPU_DISCOVERY_SCRIPT,
        "task.resource.gpu.amount": profile.task_gpu_amount,
        "executor.cores": str(profile.executor_cores),
        "task.cpus": str(profile.task_cpus),
        "executor.memory": f"{profile.executor_memory_mb}m",
        "executor.memoryOverhead": f"{profile.executor_memory_overhead_mb}m",
    }
    conf = {
        **_common_spark_defaults(discovery_script),
        "spark.dynamicAllocation.enabled": "true",
        "spark.shuffle.service.enabled": "true",
        "spark.executor.cores": str(CPU_EXECUTOR_CORES),
        "spark.executor.memory": f"{CPU_EXECUTOR_MEMORY_MB}m",
        "spark.executor.memoryOverhead": f"{CPU_EXECUTOR_MEMORY_OVERHEAD_MB}m",
        **{SCORING_PREFIX + key: value for key, value in scoring.items()},
    }
    conf.update(profile.extra_spark_defaults)
    return conf


def stage_level_configurations(
    profile: GpuProfile, cpu: CpuNode, *, discovery_script: str, extra_spark: Mapping[str, str] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """``Configurations`` for the cluster, each CPU core instance type and each GPU task instance type.

    Only the GPU task nodes get the GPU resource plugin, the LinuxContainerExecutor and the
    container-executor GPU module (a NodeManager with the GPU plugin and no GPU would not
    start); the ResourceManager knows the ``yarn.io/gpu`` resource type cluster-wide. A
    container asking for ``yarn.io/gpu`` (a GPU executor of the scoring stage's profile) can
    only be placed on a NodeManager that advertises GPUs, so no node label is needed for it.
    """
    cluster = [
        {"Classification": "yarn-site",
         "Properties": _cluster_yarn_site(max(cpu.yarn_memory_mb, profile.yarn_memory_mb), am_on_core=True)},
        _capacity_scheduler(),
        {"Classification": "spark-defaults",
         "Properties": _with_extra(stage_level_spark_defaults(profile, discovery_script), extra_spark)},
    ]
    cpu_node = [{"Classification": "yarn-site",
                 "Properties": {"yarn.nodemanager.resource.memory-mb": str(cpu.yarn_memory_mb)}}]
    gpu_node = [{"Classification": "yarn-site", "Properties": _gpu_node_yarn_site(profile)},
                _gpu_container_executor()]
    return cluster, cpu_node, gpu_node
