"""Nightly scoring on a transient EMR GPU cluster.

SETUP    step_config (the steps, once what ``python -m emr add-step`` checks holds:
         emr/step_policy.py) -> create_cluster (a GPU profile, kept alive for the steps)
BODY     add_steps (the jobs the Variable configures, ``--run-date {{ ds }}``) -> one sensor per job
         of emr.layout.JOBS (JobStepSensor, waiting as accel_scoring_sensors.py says; skipped for
         a job the Variable does not configure)
TEARDOWN terminate_cluster (trigger_rule ALL_DONE: runs when a step failed too)
         -> watcher (fails the run if anything upstream failed, since a successful teardown
            would otherwise leave the run green)

Settings come from the Airflow Variable ``accel_scoring`` (see emr/deployment.py for its keys)
and the run's params; nothing about the deployment is written in this file. The AWS connection
is ``aws_default``. Install the accel-scoring wheel (``pip install --no-deps``) and numpy where the
DAG is parsed and run, so ``emr.deployment`` can be imported and the checks can read the backend
registry (engines/registry.py).
"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
from airflow.providers.amazon.aws.operators.emr import (EmrAddStepsOperator, EmrCreateJobFlowOperator,
                                                        EmrTerminateJobFlowOperator)
from airflow.sdk import DAG, Param, TriggerRule, Variable, task

from accel_scoring_sensors import JobStepSensor, sensor_mode, step_sensor_args
from emr.deployment import VARIABLE, checked_scoring_steps, cluster_request, merged, selected_jobs
from emr.layout import JOBS

SENSORS = sensor_mode()

with DAG(
    dag_id="accel_scoring_emr",
    description="Score the configured jobs on a transient EMR GPU cluster",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},
    params={
        "profile": Param(None, type=["null", "string"], description="GPU profile (g4dn, g5, g6, g6e, p4d, p5)"),
        "core_count": Param(None, type=["null", "integer"], description="GPU core nodes"),
    },
    tags=["accel-scoring", "emr"],
) as dag:

    @task
    def cluster_config(params=None, run_id=None) -> dict:
        settings = merged(Variable.get(VARIABLE, deserialize_json=True), params)
        return cluster_request(settings, dag_run=run_id or "")

    @task(multiple_outputs=True)
    def step_config(run_date: str, params=None) -> dict:
        """The steps, once add-step's checks hold: a cluster is created only for steps that can run."""
        settings = merged(Variable.get(VARIABLE, deserialize_json=True), params)
        s3 = AwsBaseHook(client_type="s3").get_conn()
        return {"steps": checked_scoring_steps(settings, run_date, s3=s3, emr=None), "jobs": selected_jobs(settings)}

    # [START accel_scoring_emr_tasks]
    job_flow = cluster_config()
    config = step_config(run_date="{{ ds }}")
    create_cluster = EmrCreateJobFlowOperator(
        task_id="create_cluster", job_flow_overrides=job_flow, emr_conn_id=None,
    )
    config >> create_cluster  # no cluster is created for steps that cannot run
    add_steps = EmrAddStepsOperator(
        task_id="add_steps", job_flow_id=create_cluster.output, steps=config["steps"],
    )
    watchers = [
        JobStepSensor(job=job, config_task="step_config", job_flow_id=create_cluster.output,
                      **step_sensor_args(SENSORS))
        for job in JOBS
    ]
    terminate_cluster = EmrTerminateJobFlowOperator(
        task_id="terminate_cluster", job_flow_id=create_cluster.output,
        trigger_rule=TriggerRule.ALL_DONE,
    )
    # [END accel_scoring_emr_tasks]

    @task(trigger_rule=TriggerRule.ONE_FAILED, retries=0)
    def watcher() -> None:
        raise RuntimeError("a task upstream failed (see its log); the cluster was terminated")

    add_steps >> watchers >> terminate_cluster
    [create_cluster, add_steps, *watchers, terminate_cluster] >> watcher()
