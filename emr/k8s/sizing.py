"""How big a Neuron executor pod is on each inf2 size, so that one fits per NeuronCore.

An executor holds one NeuronCore, so an inf2 node runs as many executors as it has cores, and
each executor pod's requests must fit the node's allocatable share: capacity minus what the
EKS AMI reserves for the kubelet and the system (``kube-reserved`` and the eviction threshold,
computed below as the AMI's bootstrap computes them) minus the DaemonSets every node runs
(kube-proxy, aws-node, the Neuron device plugin). Spark turns these into the pod's resources:
CPU request ``spark.kubernetes.executor.request.cores``; memory request and limit
``spark.executor.memory`` + ``spark.executor.memoryOverhead``. The overhead is explicit and
large because the Python worker (torch, torch-neuronx), the Neuron runtime and the loaded NEFFs
all live outside the JVM heap; the pod is OOMKilled (exit 137) when they outgrow it.
"""

from __future__ import annotations

from dataclasses import dataclass

CORES_PER_DEVICE = 2  # NeuronCore-v2: two per Inferentia2 device
MAX_PODS = 250  # the most pods EKS configures a node for; kube-reserved memory grows with it
EVICTION_HARD_MIB = 100  # kubelet evictionHard memory.available on the EKS AMI
DAEMONSET_CPU_M = 250  # kube-proxy 100m, aws-node 25m, the Neuron device plugin, headroom
DAEMONSET_MEMORY_MIB = 512


def kube_reserved_cpu_m(vcpus: int) -> float:
    """The EKS AMI's CPU reserve: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% after."""
    shares = [(1, 60), (1, 10), (2, 5), (max(vcpus - 4, 0), 2.5)]
    left, reserved = vcpus, 0.0
    for cores, millicores in shares:
        used = min(cores, left)
        reserved, left = reserved + used * millicores, left - used
    return reserved


def kube_reserved_memory_mib() -> int:
    """The EKS AMI's memory reserve: 255 MiB + 11 MiB per pod the node may run."""
    return 255 + 11 * MAX_PODS


@dataclass(frozen=True)
class Inf2Node:
    """One inf2 size and the executor pod sized for it (one pod per NeuronCore)."""

    instance_type: str
    vcpus: int
    memory_gib: int
    neuron_devices: int
    executor_cpu_m: int  # spark.kubernetes.executor.request.cores, in millicores
    executor_memory_mib: int  # spark.executor.memory (the JVM heap)
    executor_overhead_mib: int  # spark.executor.memoryOverhead (Python worker, runtime, NEFFs)

    @property
    def neuron_cores(self) -> int:
        return self.neuron_devices * CORES_PER_DEVICE

    @property
    def executors_per_node(self) -> int:
        return self.neuron_cores

    @property
    def allocatable_cpu_m(self) -> float:
        return self.vcpus * 1000 - kube_reserved_cpu_m(self.vcpus) - DAEMONSET_CPU_M

    @property
    def allocatable_memory_mib(self) -> int:
        return (self.memory_gib * 1024 - kube_reserved_memory_mib() - EVICTION_HARD_MIB
                - DAEMONSET_MEMORY_MIB)

    @property
    def executor_pod_memory_mib(self) -> int:
        return self.executor_memory_mib + self.executor_overhead_mib

    def spark_conf(self) -> dict[str, str]:
        """The executor sizing as Spark settings; the node selector pins executors to this size."""
        return {
            "spark.kubernetes.executor.node.selector.node.kubernetes.io/instance-type": self.instance_type,
            "spark.kubernetes.executor.request.cores": f"{self.executor_cpu_m}m",
            "spark.executor.memory": f"{self.executor_memory_mib}m",
            "spark.executor.memoryOverhead": f"{self.executor_overhead_mib}m",
        }


# Instance size, vCPUs, memory (GiB) and Inferentia2 chips as the Neuron documentation's Inf2
# architecture page lists them (aws-neuron/aws-neuron-sdk about-neuron/arch/neuron-hardware/
# inf2-arch.rst, read 2026-12-03); the executor requests after them are this project's sizing.
INF2 = {node.instance_type: node for node in (
    Inf2Node("inf2.xlarge", 4, 16, 1, 1500, 2048, 3584),
    Inf2Node("inf2.8xlarge", 32, 128, 1, 14000, 8192, 16384),
    Inf2Node("inf2.24xlarge", 96, 384, 6, 7500, 4096, 8192),
    Inf2Node("inf2.48xlarge", 192, 768, 12, 7500, 4096, 8192),
)}
DEFAULT_INSTANCE_TYPE = "inf2.xlarge"
