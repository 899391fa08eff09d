"""Scoring on Inferentia through EMR on EKS: one job run per job, one NeuronCore per executor.

BODY  eks_config (the job runs, once their files are staged, as ``python -m emr eks-submit``
      checks: emr/step_policy.py) -> submit_<job> (EmrContainerOperator, no waiting; the job run's tags too) ->
      watch_<job> (EmrContainerSensor, see accel_scoring_sensors.py) for duplicates and
      query_intent, ``--run-date {{ ds }}``.
Settings come from the Variable ``accel_scoring`` (its ``eks`` and ``jobs`` keys). The DAG
renders templates as native objects, so the job driver and configuration built by
``emr.deployment.eks_job_runs`` reach the operator as dicts. Submit tasks are retried
(``SUBMIT_RETRIES``): each passes the operator a ``client_request_token`` derived from the DAG
run, the job and the task's cycle of tries (``emr.deployment.job_run_token``), so a retry after a
lost answer gets the job run the first try started instead of starting a second one.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook
from airflow.providers.amazon.aws.operators.emr import EmrContainerOperator
from airflow.providers.amazon.aws.sensors.emr import EmrContainerSensor
from airflow.sdk import DAG, Variable, task

from accel_scoring_sensors import container_sensor_args, sensor_mode
from emr.deployment import VARIABLE, checked_eks_job_runs, job_run_token, merged
from emr.layout import JOBS

SENSORS = sensor_mode()
SUBMIT_RETRIES = 2


class SubmitJobRun(EmrContainerOperator):
    """EmrContainerOperator for one job, safe to retry, with ``tags`` rendered too.

    The provider renders the other StartJobRun fields but passes ``tags`` as written, and the job
    run's tags come from ``eks_config``. Without a ``client_request_token`` it makes a new one per
    try; this one passes ``job_run_token``, the same for every retry of a cycle of tries.
    """

    template_fields = (*EmrContainerOperator.template_fields, "tags")

    def __init__(self, *, job: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.job = job

    def execute(self, context):
        first_try = context["ti"].max_tries - (self.retries or 0) + 1
        self.client_request_token = job_run_token(self.dag_id, context["run_id"], self.job, first_try)
        return super().execute(context)


with DAG(
    dag_id="accel_scoring_eks",
    description="Score duplicates and query intent on Inferentia (EMR on EKS)",
    schedule="@daily",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 0},
    render_template_as_native_obj=True,
    tags=["accel-scoring", "emr-on-eks", "neuron"],
) as dag:

    @task(multiple_outputs=True)
    def eks_config(run_date: str, params=None) -> dict:
        settings = merged(Variable.get(VARIABLE, deserialize_json=True), params)
        runs = checked_eks_job_runs(settings, run_date, s3=AwsBaseHook(client_type="s3").get_conn())
        return {job: runs[job] for job in JOBS}

    config = eks_config(run_date="{{ ds }}")
    for job in JOBS:
        request = f"ti.xcom_pull(task_ids='eks_config', key='{job}')"
        submit = SubmitJobRun(
            task_id=f"submit_{job}",
            job=job,
            retries=SUBMIT_RETRIES,
            retry_delay=timedelta(minutes=1),
            name=f"{{{{ {request}['name'] }}}}",
            virtual_cluster_id=f"{{{{ {request}['virtualClusterId'] }}}}",
            execution_role_arn=f"{{{{ {request}['executionRoleArn'] }}}}",
            release_label=f"{{{{ {request}['releaseLabel'] }}}}",
            job_driver=f"{{{{ {request}['jobDriver'] }}}}",
            configuration_overrides=f"{{{{ {request}['configurationOverrides'] }}}}",
            tags=f"{{{{ {request}['tags'] }}}}",
            wait_for_completion=False,
        )
        config >> submit >> EmrContainerSensor(
            task_id=f"watch_{job}",
            virtual_cluster_id=f"{{{{ {request}['virtualClusterId'] }}}}",
            job_id=submit.output,
            **container_sensor_args(SENSORS),
        )
