"""Which device this task's engine runs on, and how many CPU threads it may use.

Order: the task's Spark resource address (`gpu` / `neuroncore`), then an explicit `--device`,
then the CPU. In local mode Spark assigns no custom resources, so the explicit setting applies.

With a fractional `spark.task.resource.gpu.amount` (0.5: two tasks per GPU) several tasks get
the same address; each Python worker then holds its own engine on that GPU, like Triton's
instance groups (memory: one plan's weights, activations and CUDA context per worker).
"""
from __future__ import annotations

from engines.base import Device

# Spark resource name -> engine device kind, per backend that needs an accelerator.
ACCELERATOR_RESOURCE = {"tensorrt": ("gpu", "cuda"), "neuronx": ("neuroncore", "neuron"),
                        "neuron": ("neuroncore", "neuron")}


def task_resources() -> dict[str, list[str]]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return {}
    return {name: list(info.addresses) for name, info in ctx.resources().items()}


def task_cpus(default: int = 1) -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    try:
        return int(ctx.cpus()) if ctx is not None else default
    except Exception:  # noqa: BLE001 - older Spark without TaskContext.cpus()
        return default


def parse_device(text: str) -> Device:
    """'cpu', 'cuda:1', 'neuron:3' -> Device."""
    kind, _, address = text.partition(":")
    if kind not in ("cpu", "cuda", "neuron"):
        raise ValueError(f"--device must be cpu, cuda:N or neuron:N, got {text!r}")
    return Device(kind, address or None) if kind != "cpu" else Device()


def bind_device(backend: str, explicit: str | None, resources: dict[str, list[str]]) -> Device:
    if backend in ACCELERATOR_RESOURCE:
        resource, kind = ACCELERATOR_RESOURCE[backend]
        addresses = resources.get(resource) or []
        if addresses:
            return Device(kind, addresses[0])
    if explicit:
        device = parse_device(explicit)
        if backend in ACCELERATOR_RESOURCE and device.kind != ACCELERATOR_RESOURCE[backend][1]:
            want = ACCELERATOR_RESOURCE[backend][1]
            raise ValueError(f"--device {explicit} does not fit backend {backend}, which runs on {want}:N")
        return device
    if backend in ACCELERATOR_RESOURCE:
        return Device(ACCELERATOR_RESOURCE[backend][1])  # the runtime's default device
    return Device()
