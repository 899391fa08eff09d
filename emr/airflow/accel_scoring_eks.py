"""Scoring on Inferentia through EMR on EKS: one job run per job, one NeuronCore per executor.

BODY  eks_config -> submit_<job> (EmrContainerOperator, no waiting; the job run's tags too) ->
      watch_<job> (EmrContainerSensor, see accel_scoring_sensors.py) for duplicates and
      query_intent, ``--run-date {{ ds }}``.
Settings come from the Variable ``accel_scoring`` (its ``eks`` and ``jobs`` keys). The DAG
renders templates as native objects, so the job driver and configuration built by
``emr.deployment.eks_job_runs`` reach the operator as dicts. Submit tasks are not retried: the
operator makes a new idempotency token per attempt, so a retry would start a second job run.
"""

from __future__ import annotations

from datetime import datetime

from airflow.providers.amazon.aws.operators.emr import EmrContainerOperator
from airflow.providers.amazon.aws.sensors.emr import EmrContainerSensor
from airflow.sdk import DAG, Variable, task

from accel_scoring_sensors import container_sensor_args, sensor_mode
from emr.deployment import VARIABLE, eks_job_runs, merged
from emr.layout import JOBS

SENSORS = sensor_mode()


class TaggedEmrContainerOperator(EmrContainerOperator):
    """EmrContainerOperator with ``tags`` rendered too: the provider renders the other StartJobRun
    fields but passes ``tags`` as written, and the job run's tags come from ``eks_config``."""

    template_fields = (*EmrContainerOperator.template_fields, "tags")


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
        runs = eks_job_runs(settings, run_date)
        return {job: runs[job] for job in JOBS}

    config = eks_config(run_date="{{ ds }}")
    for job in JOBS:
        request = f"ti.xcom_pull(task_ids='eks_config', key='{job}')"
        submit = TaggedEmrContainerOperator(
            task_id=f"submit_{job}",
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
