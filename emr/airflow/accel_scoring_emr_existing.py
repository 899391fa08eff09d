"""Scoring steps on an existing (long-running) EMR GPU cluster.

BODY  step_config (the steps, once what ``python -m emr add-step`` checks holds: emr/step_policy.py)
      -> add_steps (the jobs the Variable configures, ``--run-date {{ ds }}``) -> one sensor per job of
      emr.layout.JOBS (JobStepSensor, waiting as accel_scoring_sensors.py says; skipped for a job the
      Variable does not configure).
No cluster is created or terminated. The cluster id comes from the run's ``cluster_id`` param or
the Variable ``accel_scoring``'s ``cluster_id``; the cluster must have been created with a GPU
profile (``python -m emr create-cluster``), which sets the GPU settings in spark-defaults.
"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
from airflow.providers.amazon.aws.operators.emr import EmrAddStepsOperator
from airflow.sdk import DAG, Param, Variable, task

from accel_scoring_sensors import JobStepSensor, sensor_mode, step_sensor_args
from emr.deployment import VARIABLE, checked_scoring_steps, merged, selected_jobs
from emr.layout import JOBS

SENSORS = sensor_mode()

with DAG(
    dag_id="accel_scoring_emr_existing",
    description="Score the configured jobs on an existing EMR GPU cluster",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},
    params={"cluster_id": Param(None, type=["null", "string"], description="EMR cluster id (j-...)")},
    tags=["accel-scoring", "emr"],
) as dag:

    @task(multiple_outputs=True)
    def step_config(run_date: str, params=None) -> dict:
        settings = merged(Variable.get(VARIABLE, deserialize_json=True), params)
        if not settings.get("cluster_id"):
            raise ValueError(f"set cluster_id in the Variable {VARIABLE!r} or the run's params")
        clients = {service: AwsBaseHook(client_type=service).get_conn() for service in ("s3", "emr")}
        return {"cluster_id": settings["cluster_id"],
                "steps": checked_scoring_steps(settings, run_date, cluster_id=settings["cluster_id"], **clients),
                "jobs": selected_jobs(settings)}

    config = step_config(run_date="{{ ds }}")
    add_steps = EmrAddStepsOperator(task_id="add_steps", job_flow_id=config["cluster_id"],
                                    steps=config["steps"])
    for job in JOBS:
        add_steps >> JobStepSensor(job=job, config_task="step_config", job_flow_id=config["cluster_id"],
                                   **step_sensor_args(SENSORS))
