"""The DAGs in emr/airflow/ with the real Airflow and Amazon provider, run by dag.test() on moto.

moto keeps EMR steps RUNNING and EMR on EKS job runs RUNNING; a background thread here ends
them (COMPLETED or FAILED) as EMR would, while the sensors poll.
"""

from __future__ import annotations

import threading
from datetime import datetime, timezone

import pytest

pytest.importorskip("airflow", reason="apache-airflow is not installed (use .venv-airflow)")
pytest.importorskip("airflow.providers.amazon", reason="apache-airflow-providers-amazon is not installed")

from tests import moto_support  # noqa: E402
from tests.airflow.conftest import DAGS  # noqa: E402

RUN_DATE = datetime(2026, 11, 1, tzinfo=timezone.utc)
PREFIX = "s3://deploy/accel/v1/"
JOBS_SETTINGS = {
    "duplicates": {"input": "s3://data/pairs/", "output": "s3://data/duplicates/",
                   "model": PREFIX + "models/minilm-dup/1.0/", "args": ["--backend", "tensorrt"]},
    "query_intent": {"input": "s3://data/queries/", "output": "s3://data/intents/",
                     "model": PREFIX + "models/minilm-intent/1.0/", "args": ["--top-k", "3"]},
}


@pytest.fixture(scope="module")
def dagbag(airflow_db):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


def _dag(dagbag, dag_id):
    dag = dagbag.get_dag(dag_id)
    assert dag is not None, dagbag.import_errors
    return dag


def _states(run) -> dict[str, str]:
    from airflow.utils.session import create_session
    from airflow.models import TaskInstance

    with create_session() as session:
        tis = session.query(TaskInstance).filter(TaskInstance.run_id == run.run_id,
                                                 TaskInstance.dag_id == run.dag_id).all()
        return {ti.task_id: str(ti.state) for ti in tis}


def _only_cluster() -> str | None:
    clusters = moto_support.emr_clusters()
    return next(iter(clusters)) if len(clusters) == 1 else None


def test_dags_import_without_errors(dagbag) -> None:
    assert dagbag.import_errors == {}
    assert {"accel_scoring_emr", "accel_scoring_emr_existing", "accel_scoring_eks"} <= set(dagbag.dag_ids)


def test_transient_cluster_dag_shape(dagbag) -> None:
    from airflow.sdk import TriggerRule

    dag = _dag(dagbag, "accel_scoring_emr")
    tasks = dag.task_dict
    assert set(tasks) == {"cluster_config", "create_cluster", "step_config", "add_steps",
                          "watch_duplicates", "watch_query_intent", "terminate_cluster", "watcher"}
    assert tasks["terminate_cluster"].trigger_rule == TriggerRule.ALL_DONE
    assert tasks["watcher"].trigger_rule == TriggerRule.ONE_FAILED
    assert tasks["terminate_cluster"].upstream_task_ids >= {"watch_duplicates", "watch_query_intent"}
    assert tasks["add_steps"].upstream_task_ids == {"create_cluster", "step_config"}
    assert "create_cluster" in tasks["cluster_config"].downstream_task_ids


def test_transient_cluster_dag_runs_both_jobs_and_terminates(dagbag, aws, set_variable) -> None:
    import boto3

    set_variable({"prefix": PREFIX, "log_uri": "s3://deploy/logs/", "profile": "g6", "jobs": JOBS_SETTINGS})
    stop = threading.Event()
    moto_support.finish_steps_when_added(_only_cluster, lambda step: {}, stop=stop)
    try:
        run = _dag(dagbag, "accel_scoring_emr").test(logical_date=RUN_DATE)
    finally:
        stop.set()
    states = _states(run)
    assert str(run.state) == "success", states
    assert states["watcher"] == "skipped"
    cluster_id = _only_cluster()
    assert moto_support.cluster_state(cluster_id) == "TERMINATED"
    emr = boto3.client("emr")
    groups = emr.list_instance_groups(ClusterId=cluster_id)["InstanceGroups"]
    assert any(g["InstanceType"] == "g6.2xlarge" for g in groups)  # the Variable's profile
    steps = emr.list_steps(ClusterId=cluster_id)["Steps"]
    args = {s["Name"]: s["Config"]["Args"] for s in steps}
    assert set(args) == {"score-duplicates-2026-11-01", "score-query_intent-2026-11-01"}
    for name, argv in args.items():
        assert argv[0] == "spark-submit"
        assert argv[argv.index("--run-date") + 1] == "2026-11-01"  # {{ ds }}


def test_failed_step_still_terminates_cluster_and_fails_the_run(dagbag, aws, set_variable) -> None:
    set_variable({"prefix": PREFIX, "log_uri": "s3://deploy/logs/", "jobs": JOBS_SETTINGS})

    def outcome(step) -> dict:
        if "duplicates" in step.name:
            return {"state": "FAILED", "reason": "Unknown Error.", "message": "exit 1",
                    "log_file": "s3://deploy/logs/stderr.gz"}
        return {}

    stop = threading.Event()
    moto_support.finish_steps_when_added(_only_cluster, outcome, stop=stop)
    try:
        run = _dag(dagbag, "accel_scoring_emr").test(logical_date=RUN_DATE)
    finally:
        stop.set()
    states = _states(run)
    assert str(run.state) == "failed", states
    assert states["watch_duplicates"] == "failed"
    assert states["watch_query_intent"] == "success"
    assert states["terminate_cluster"] == "success"
    assert states["watcher"] == "failed"
    assert moto_support.cluster_state(_only_cluster()) == "TERMINATED"


def test_existing_cluster_dag_adds_steps_and_leaves_cluster_running(dagbag, aws, set_variable) -> None:
    import boto3

    from emr.deployment import cluster_request

    settings = {"prefix": PREFIX, "log_uri": "s3://deploy/logs/", "jobs": JOBS_SETTINGS}
    cluster_id = boto3.client("emr").run_job_flow(**cluster_request(settings))["JobFlowId"]
    set_variable({**settings, "cluster_id": cluster_id})
    stop = threading.Event()
    moto_support.finish_steps_when_added(lambda: cluster_id, lambda step: {}, stop=stop)
    try:
        run = _dag(dagbag, "accel_scoring_emr_existing").test(logical_date=RUN_DATE)
    finally:
        stop.set()
    assert str(run.state) == "success", _states(run)
    assert moto_support.cluster_state(cluster_id) in ("WAITING", "RUNNING")
    assert len(boto3.client("emr").list_steps(ClusterId=cluster_id)["Steps"]) == 2


def test_eks_dag_runs_both_jobs_on_neuroncores(dagbag, aws, set_variable) -> None:
    import boto3

    vc = boto3.client("emr-containers").create_virtual_cluster(
        name="inf2", containerProvider={"id": "scoring-eks", "type": "EKS",
                                        "info": {"eksInfo": {"namespace": "spark"}}})["id"]
    set_variable({"prefix": PREFIX, "jobs": JOBS_SETTINGS, "eks": {
        "virtual_cluster_id": vc, "execution_role_arn": "arn:aws:iam::123456789012:role/emr-eks-job",
        "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/accel-neuron:1",
        "log_uri": "s3://deploy/eks-logs/"}})
    stop = threading.Event()

    def finish_runs() -> None:
        while not stop.is_set():
            for run_id, job in moto_support.job_runs().items():
                if job.state == "RUNNING":
                    moto_support.finish_job_run(run_id)
            stop.wait(0.2)

    threading.Thread(target=finish_runs, daemon=True).start()
    try:
        run = _dag(dagbag, "accel_scoring_eks").test(logical_date=RUN_DATE)
    finally:
        stop.set()
    assert str(run.state) == "success", _states(run)
    runs = moto_support.job_runs()
    assert len(runs) == 2
    for job in runs.values():
        driver = job.job_driver["sparkSubmitJobDriver"]
        assert driver["entryPointArguments"][driver["entryPointArguments"].index("--run-date") + 1] == "2026-11-01"
        props = job.configuration_overrides["applicationConfiguration"][0]["properties"]
        assert props["spark.executor.resource.neuroncore.vendor"] == "aws.amazon.com"
