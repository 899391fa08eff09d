"""Which device this task's engine runs on, and how many CPU threads it may use.

Order: the task's Spark resource address (`gpu` / `neuroncore`), then an explicit `--device`,
then the CPU. In local mode Spark assigns no custom resources, so the explicit setting applies.

With a fractional `spark.task.resource.gpu.amount` (0.5: two tasks per GPU) several tasks get
the same address; each Python worker then holds its own engine on that GPU, like Triton's
instance groups (memory: one plan's weights, activations and CUDA context per worker).
"""
from __future__ import annotations

from engines import registry
from engines.base import Device


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


def device_forms() -> str:
    """'cpu, cuda:N or neuron:N': what `--device` accepts, from the kinds the engines run on."""
    *rest, last = [k if k == "cpu" else f"{k}:N" for k in registry.device_kinds()]
    return f"{', '.join(rest)} or {last}" if rest else last


def parse_device(text: str) -> Device:
    """'cpu', 'cuda:1', 'neuron:3' -> Device."""
    kind, _, address = text.partition(":")
    if kind not in registry.device_kinds():
        raise ValueError(f"--device must be {device_forms()}, got {text!r}")
    return Device(kind, address or None) if kind != "cpu" else Device()


def bind_device(backend: str, explicit: str | None, resources: dict[str, list[str]]) -> Device:
    """The task's device for `backend`: its Spark resource address, else `explicit`, else the default.

    A backend on the CPU takes `explicit` as given; an accelerated one refuses a device of
    another kind (but `cpu` where it also runs there) and, with neither, runs on its runtime's
    default device.
    """
    engine = registry.engine_class(backend)
    if engine.spark_resource:
        addresses = resources.get(engine.spark_resource) or []
        if addresses:
            return Device(engine.device_kind, addresses[0])
    if explicit:
        device = parse_device(explicit)
        if engine.spark_resource and device.kind not in (engine.device_kind, "cpu" if engine.runs_on_cpu else None):
            where = f"{engine.device_kind}:N" + (" or cpu" if engine.runs_on_cpu else "")
            raise ValueError(f"--device {explicit} does not fit backend {backend}, which runs on {where}")
        return device
    return Device(engine.device_kind)
