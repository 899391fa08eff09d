"""GPU cluster profiles for EMR on EC2, as data.

A profile names the instance type and how its GPUs are shared out: one executor per GPU, and
``tasks_per_gpu`` concurrent tasks on it (each with ``executor_cores / tasks_per_gpu`` CPUs for
tokenizing). ``spark_defaults`` and ``gpu_configurations`` build fresh dicts on each call.

The YARN and container-executor settings follow the EMR release guide's GPU page for 7.x;
EMR offers no Inferentia instances, so Neuron runs on EMR on EKS (see emr/eks.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Mapping

from emr.errors import EmrError

DEFAULT_RELEASE_LABEL = "emr-7.13.0"
GPU_DISCOVERY_SCRIPT = "/usr/lib/spark/scripts/gpu/getGpusResources.sh"  # installed by EMR
CGROUP_ROOT = "/spark-rapids-cgroup"


@dataclass(frozen=True)
class GpuProfile:
    name: str
    instance_type: str
    gpu: str  # one GPU's model; gpus_per_instance says how many
    gpus_per_instance: int
    executor_cores: int
    executor_memory: str
    executor_memory_overhead: str
    tasks_per_gpu: int = 2
    core_instance_count: int = 2
    master_instance_type: str = "m5.xlarge"
    ebs_gib: int = 200
    description: str = ""
    extra_spark_defaults: Mapping[str, str] = field(default_factory=dict)

    @property
    def task_gpu_amount(self) -> str:
        # Spark 3.5 accepts fractions <= 0.5 or whole numbers.
        return str(float(Fraction(1, self.tasks_per_gpu)))

    @property
    def task_cpus(self) -> int:
        return max(1, self.executor_cores // self.tasks_per_gpu)


def _profiles() -> Mapping[str, GpuProfile]:
    items = [
        GpuProfile("g4dn", "g4dn.2xlarge", "T4 (sm75)", 1, 4, "16g", "6g",
                   description="cheapest; TensorRT >= 10.5 still supports sm75"),
        GpuProfile("g5", "g5.2xlarge", "A10G (sm86)", 1, 4, "16g", "6g",
                   description="default: good price per row"),
        GpuProfile("g6", "g6.2xlarge", "L4 (sm89)", 1, 4, "16g", "6g",
                   description="L4, FP8-capable"),
        GpuProfile("g6e", "g6e.2xlarge", "L40S (sm89)", 1, 4, "32g", "8g",
                   description="more GPU memory for long sequences"),
        GpuProfile("p4d", "p4d.24xlarge", "A100 (sm80)", 8, 10, "96g", "24g",
                   core_instance_count=1, master_instance_type="m5.2xlarge",
                   description="8 executors per node, one per A100"),
        GpuProfile("p5", "p5.48xlarge", "H100 (sm90)", 8, 20, "192g", "48g",
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


def spark_defaults(profile: GpuProfile) -> dict[str, str]:
    """Spark settings for every application on a cluster of this profile."""
    conf = {
        "spark.executor.resource.gpu.amount": "1",
        "spark.executor.resource.gpu.discoveryScript": GPU_DISCOVERY_SCRIPT,
        "spark.task.resource.gpu.amount": profile.task_gpu_amount,
        "spark.executor.cores": str(profile.executor_cores),
        "spark.task.cpus": str(profile.task_cpus),
        "spark.executor.memory": profile.executor_memory,
        "spark.executor.memoryOverhead": profile.executor_memory_overhead,
        "spark.python.worker.reuse": "true",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }
    conf.update(profile.extra_spark_defaults)
    return conf


def gpu_configurations(profile: GpuProfile, extra_spark: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """EMR ``Configurations`` for YARN GPU isolation plus ``spark-defaults``."""
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
    }
    spark = {**spark_defaults(profile), **(extra_spark or {})}
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
