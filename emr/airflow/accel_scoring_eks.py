"""Scoring on Inferentia through EMR on EKS: one job run per job, one NeuronCore per executor.

BODY  eks_config (the job runs, once their files are staged, as ``python -m emr eks-submit``
      checks: emr/step_policy.py) -> submit_<job> (EmrContainerOperator, no waiting; the job run's tags too) ->
      watch_<job> (EmrContainerSensor, see accel_scoring_sensors.py) for each job of emr.layout.JOBS
      that the Variable configures (the others are skipped), ``--run-date {{ ds }}``.
Settings come from the Variable ``accel_scoring`` (its ``eks`` and ``jobs`` keys); each submit
task reads its job's request, as ``emr.deployment.eks_job_runs`` built it, from ``eks_config``.
Submit tasks are retried (``SUBMIT_RETRIES``): each passes the operator a ``client_request_token``
derived from the DAG run, the job and the task's cycle of tries (``emr.deployment.job_run_token``),
so a retry after a lost answer gets the job run the first try started instead of starting a
second one.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
from airflow.providers.amazon.aws.operators.emr import EmrContainerOperator
from airflow.providers.amazon.aws.sensors.emr import EmrContainerSensor
from airflow.sdk import DAG, Variable, task
from airflow.sdk.exceptions import AirflowSkipException

from accel_scoring_sensors import container_sensor_args, sensor_mode
from emr.deployment import VARIABLE, checked_eks_job_runs, job_run_token, merged
from emr.layout import JOBS

SENSORS = sensor_mode()
SUBMIT_RETRIES = 2


class SubmitJobRun(EmrContainerOperator):
    """EmrContainerOperator for one job of ``emr.layout.JOBS``, safe to retry.

    Its StartJobRun request is the one ``eks_config`` built for the job (tags included, which the
    provider would not render from a template); where the Variable configures no such job, it is
    skipped, and its sensor with it. Without a ``client_request_token`` the provider makes a new
    one per try; this one passes ``job_run_token``, the same for every retry of a cycle of tries.
    """

    def __init__(self, *, job: str, config_task: str, **kwargs) -> None:
        super().__init__(name=job, virtual_cluster_id="", execution_role_arn="", release_label="", job_driver={},
                         **kwargs)
        self.job, self.config_task = job, config_task

    def execute(self, context):
        request = context["ti"].xcom_pull(task_ids=self.config_task, key=self.job)
        if not request:
            raise AirflowSkipException(f"Variable {VARIABLE!r} configures no {self.job} job")
        self.name, self.virtual_cluster_id = request["name"], request["virtualClusterId"]
        self.execution_role_arn, self.release_label = request["executionRoleArn"], request["releaseLabel"]
        self.job_driver = request["jobDriver"]
        self.configuration_overrides = request.get("configurationOverrides") or {}
        self.tags = request.get("tags")
        first_try = context["ti"].max_tries - (self.retries or 0) + 1
        self.client_request_token = job_run_token(self.dag_id, context["run_id"], self.job, first_try)
        return super().execute(context)


with DAG(
    dag_id="accel_scoring_eks",
    description="Score the configured jobs on Inferentia (EMR on EKS)",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},
    tags=["accel-scoring", "emr-on-eks", "neuron"],
) as dag:

    @task(multiple_outputs=True)
    def eks_config(run_date: str, params=None) -> dict:
        settings = merged(Variable.get(VARIABLE, deserialize_json=True), params)
        runs = checked_eks_job_runs(settings, run_date, s3=AwsBaseHook(client_type="s3").get_conn())
        return {job: runs.get(job) for job in JOBS}  # None: a job the Variable does not configure

    config = eks_config(run_date="{{ ds }}")
    for job in JOBS:
        submit = SubmitJobRun(
            task_id=f"submit_{job}", job=job, config_task="eks_config", retries=SUBMIT_RETRIES,
            retry_delay=timedelta(minutes=1), wait_for_completion=False,
        )
        config >> submit >> EmrContainerSensor(
            task_id=f"watch_{job}",
            virtual_cluster_id=f"{{{{ ti.xcom_pull(task_ids='eks_config', key='{job}')['virtualClusterId'] }}}}",
            job_id=submit.output,
            **container_sensor_args(SENSORS),
        )
