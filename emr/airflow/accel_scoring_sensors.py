"""How the accel_scoring DAGs wait for EMR steps and EMR on EKS job runs without holding a worker.

A step or a job run takes hours; a sensor in poke mode would hold a worker slot all that time.
Every sensor here gives the slot back between checks, in one of two ways, picked by the field
``sensors`` of the Variable ``accel_scoring``:

- ``"deferrable"`` (the default): the sensor hands the wait to the provider's trigger, which
  polls from the triggerer (``airflow triggerer``, with the provider's ``aiobotocore`` extra
  installed there); no task process runs while it waits.
- ``"reschedule"``: for deployments without a triggerer. Each check is a short task run, and the
  scheduler starts the next one ``POKE_SECONDS`` later: a task process and a parse of the DAG
  file per check, 60 an hour per sensor at the default interval, which is why it is not the
  default.

The field is read when the DAG file is parsed, because the mode is part of the task: the DAG
processor and the workers must see the same value. Every sensor gives up after ``TIMEOUT``.
"""

from __future__ import annotations

import math
import os
from datetime import timedelta
from typing import Any

from airflow.providers.amazon.aws.sensors.emr import EmrStepSensor
from airflow.sdk import Variable
from airflow.sdk.exceptions import AirflowSkipException

from emr.deployment import VARIABLE

MODES = ("deferrable", "reschedule")
TIMEOUT = timedelta(hours=12)
POKE_SECONDS = int(os.environ.get("ACCEL_SCORING_POKE_SECONDS", "60"))
_CHECKS = math.ceil(TIMEOUT.total_seconds() / POKE_SECONDS)  # checks POKE_SECONDS apart that fill TIMEOUT


def sensor_mode() -> str:
    """The Variable's ``sensors`` field; a DAG with a wrong one fails to import, visibly."""
    settings = Variable.get(VARIABLE, default=None, deserialize_json=True) or {}
    mode = settings.get("sensors") or MODES[0]
    if mode not in MODES:
        raise ValueError(f"Variable {VARIABLE!r}: sensors is {mode!r}, expected one of {', '.join(MODES)}")
    return mode


def step_sensor_args(mode: str) -> dict[str, Any]:
    """EmrStepSensor's waiting arguments: deferred unless the Variable says otherwise, since a
    step runs for hours and its trigger costs the triggerer one DescribeStep per interval.

    Deferred, it checks once itself and then its trigger checks at most ``max_attempts`` times,
    ``poke_interval`` apart, under a deferral timeout of their product; the provider's default of
    60 attempts would end a 60 s wait after an hour, so the attempts are sized to TIMEOUT.
    Rescheduled, each run checks once and ``timeout`` counts from the first.
    """
    wait = {"poke_interval": POKE_SECONDS, "timeout": TIMEOUT.total_seconds()}
    if mode == "deferrable":
        return {**wait, "deferrable": True, "max_attempts": _CHECKS}
    return {**wait, "mode": "reschedule"}


def container_sensor_args(mode: str) -> dict[str, Any]:
    """EmrContainerSensor's waiting arguments: deferred unless the Variable says otherwise, as
    for steps (one DescribeJobRun per interval in the triggerer) and because its poke blocks.

    Its poke loops inside the hook's ``poll_query_status``, ``max_retries`` times
    ``poll_interval`` apart, and without ``max_retries`` until the job run ends, ignoring
    ``timeout``; so rescheduled it must check once per run. Deferred, its trigger checks
    ``max_retries`` times ``poll_interval`` apart (deferral timeout: their product + 60 s), and
    cancels the job run when a user marks the task failed or successful or clears it.
    """
    wait = {"timeout": TIMEOUT.total_seconds()}
    if mode == "deferrable":
        return {**wait, "deferrable": True, "poll_interval": POKE_SECONDS, "max_retries": _CHECKS}
    return {**wait, "mode": "reschedule", "poke_interval": POKE_SECONDS, "max_retries": 1}


class JobStepSensor(EmrStepSensor):
    """EmrStepSensor for one job of ``emr.layout.JOBS``: its step is the one ``add_steps`` added for
    the job, found by the job's place in the list ``config_task`` returned (key ``jobs``, in
    ``add_steps``' order); where the Variable configures no such job it is skipped, so one DAG
    serves deployments that run any of the jobs."""

    def __init__(self, *, job: str, config_task: str, **kwargs) -> None:
        super().__init__(task_id=f"watch_{job}", step_id="", **kwargs)
        self.job, self.config_task = job, config_task

    def execute(self, context):
        ti = context["ti"]
        jobs = ti.xcom_pull(task_ids=self.config_task, key="jobs") or []
        if self.job not in jobs:
            raise AirflowSkipException(f"Variable {VARIABLE!r} configures no {self.job} job")
        self.step_id = ti.xcom_pull(task_ids="add_steps")[jobs.index(self.job)]
        return super().execute(context)
