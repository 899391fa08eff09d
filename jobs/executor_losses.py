"""The executors that left during a run, for its summary: a Spot node reclaimed or decommissioned,
an executor killed. Spark's status store keeps every executor with when and why it was removed
(what its UI and REST API show); its task scheduler knows which were told to decommission (they
take no more tasks, migrate their blocks, and exit once idle, often after the run's last job)."""
from __future__ import annotations


def left_since(spark, started: float) -> list[dict]:
    """[{"id", "host", "decommissioned", "removed", "reason"}] of the executors decommissioned or
    removed after `started` (seconds since the epoch)."""
    sc = spark.sparkContext._jsc.sc()
    scheduler = sc.taskScheduler()
    executors = sc.statusStore().executorList(False)
    left = []
    for i in range(executors.size()):
        e = executors.apply(i)
        removed = e.removeTime().isDefined() and e.removeTime().get().getTime() / 1000 >= started
        state = scheduler.getExecutorDecommissionState(e.id())
        decommissioned = state.isDefined() and state.get().startTime() / 1000 >= started
        if removed or decommissioned:
            reason = e.removeReason()
            left.append({"id": e.id(), "host": e.hostPort().rsplit(":", 1)[0], "decommissioned": decommissioned,
                         "removed": removed, "reason": reason.get() if reason.isDefined() else None})
    return sorted(left, key=lambda x: x["id"])
