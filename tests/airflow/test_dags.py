"""The DAGs in emr/airflow/ with the real Airflow and Amazon provider, run by dag.test() on moto.

moto keeps EMR steps RUNNING and EMR on EKS job runs RUNNING; ``end_on_second_look`` ends them
(COMPLETED or FAILED) as EMR would, after a sensor has seen them RUNNING once. Every run test
runs in both sensor modes (emr/airflow/accel_scoring_sensors.py): deferred, dag.test() runs the
provider's trigger inline, on aiobotocore against moto; rescheduled, it runs the sensor again.
"""

from __future__ import annotations

import json
from collections import Counter
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
EMBED_TEXTS = {"input": "s3://data/catalogue/", "output": "s3://data/embeddings/",
               "model": PREFIX + "models/minilm/1.0/"}
MODES = ("deferrable", "reschedule")
WATCH = ["watch_duplicates", "watch_query_intent"]  # the sensors of the jobs JOBS_SETTINGS configures
SENSORS = [*WATCH, "watch_embed_texts"]  # every DAG's, one per job of emr.layout.JOBS
TWELVE_HOURS = 12 * 3600
POKE_SECONDS = 1  # ACCEL_SCORING_POKE_SECONDS in conftest.py


def _parse(variable: dict | None):
    """The DAG folder as the DAG processor parses it (on sys.path), with this Variable then."""
    from airflow.dag_processing.dagbag import BundleDagBag

    with pytest.MonkeyPatch.context() as patch:
        if variable is None:
            patch.delenv("AIRFLOW_VAR_ACCEL_SCORING", raising=False)
        else:
            patch.setenv("AIRFLOW_VAR_ACCEL_SCORING", json.dumps(variable))
        return BundleDagBag(dag_folder=str(DAGS), bundle_path=DAGS)


@pytest.fixture(scope="module")
def dagbags(airflow_db) -> dict:
    """One parse per sensor mode; deferrable is the default, so that parse has no Variable."""
    return {"deferrable": _parse(None), "reschedule": _parse({"sensors": "reschedule"})}


@pytest.fixture(params=MODES)
def mode(request) -> str:
    return request.param


@pytest.fixture
def dagbag(dagbags, mode):
    return dagbags[mode]


@pytest.fixture
def inline_triggers(monkeypatch) -> Counter:
    """Counts the triggers dag.test() runs inline for deferred tasks, by class name (it wraps
    dag.test()'s own ``_run_inline_trigger`` in airflow.sdk.definitions.dag, Airflow 3.3)."""
    from airflow.sdk.definitions import dag as dag_module

    counts: Counter = Counter()
    run_inline = dag_module._run_inline_trigger

    def counting(trigger, ti):
        counts[type(trigger).__name__] += 1
        return run_inline(trigger, ti)

    monkeypatch.setattr(dag_module, "_run_inline_trigger", counting)
    return counts


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


def _reschedules(run, task_id: str) -> int:
    from airflow.models import TaskInstance
    from airflow.models.taskreschedule import TaskReschedule
    from airflow.utils.session import create_session

    with create_session() as session:
        ti = session.query(TaskInstance).filter_by(dag_id=run.dag_id, run_id=run.run_id,
                                                   task_id=task_id).one()
        return session.query(TaskReschedule).filter(TaskReschedule.ti_id == ti.id).count()


def _waited(run, mode: str, inline_triggers: Counter, trigger: str, sensors: list[str]) -> None:
    """Each sensor waited the mode's way: its trigger ran inline, or it was rescheduled."""
    if mode == "deferrable":
        assert inline_triggers == {trigger: len(sensors)}
    else:
        assert not inline_triggers
        assert all(_reschedules(run, task_id) >= 1 for task_id in sensors)


def _only_cluster() -> str:
    (cluster_id,) = moto_support.emr_clusters()
    return cluster_id


def test_dags_import_without_errors(dagbag) -> None:
    assert dagbag.import_errors == {}
    assert {"accel_scoring_emr", "accel_scoring_emr_existing", "accel_scoring_eks"} <= set(dagbag.dag_ids)


def test_an_unknown_sensor_mode_fails_the_import(airflow_db) -> None:
    errors = _parse({"sensors": "poke"}).import_errors
    assert len(errors) == 3 and all("sensors is 'poke'" in e for e in errors.values()), errors


@pytest.mark.parametrize("dag_id", ["accel_scoring_emr", "accel_scoring_emr_existing"])
def test_step_sensors_free_the_worker_for_12_hours(dagbag, mode, dag_id) -> None:
    from airflow.providers.amazon.aws.sensors.emr import EmrStepSensor

    sensors = [_dag(dagbag, dag_id).task_dict[task_id] for task_id in SENSORS]
    for sensor in sensors:
        assert isinstance(sensor, EmrStepSensor)
        assert (sensor.poke_interval, sensor.timeout) == (POKE_SECONDS, TWELVE_HOURS)
        if mode == "deferrable":
            assert sensor.deferrable and sensor.mode == "poke"  # poke: its one check before deferring
            assert sensor.max_attempts * sensor.poke_interval == TWELVE_HOURS  # the trigger's reach
        else:
            assert not sensor.deferrable and sensor.mode == "reschedule"


def test_eks_sensors_free_the_worker_for_12_hours(dagbag, mode) -> None:
    from airflow.providers.amazon.aws.sensors.emr import EmrContainerSensor

    sensors = [_dag(dagbag, "accel_scoring_eks").task_dict[task_id] for task_id in SENSORS]
    for sensor in sensors:
        assert isinstance(sensor, EmrContainerSensor)
        assert sensor.timeout == TWELVE_HOURS
        if mode == "deferrable":
            assert sensor.deferrable
            assert sensor.poll_interval == POKE_SECONDS
            assert sensor.max_retries * sensor.poll_interval == TWELVE_HOURS  # the trigger's reach
        else:
            assert not sensor.deferrable and sensor.mode == "reschedule"
            assert sensor.poke_interval == POKE_SECONDS
            assert sensor.max_retries == 1  # else one poke loops until the job run ends


def test_transient_cluster_dag_shape(dagbag) -> None:
    from airflow.sdk import TriggerRule

    dag = _dag(dagbag, "accel_scoring_emr")
    tasks = dag.task_dict
    assert set(tasks) == {"cluster_config", "create_cluster", "step_config", "add_steps", *SENSORS,
                          "terminate_cluster", "watcher"}
    assert tasks["terminate_cluster"].trigger_rule == TriggerRule.ALL_DONE
    assert tasks["watcher"].trigger_rule == TriggerRule.ONE_FAILED
    assert tasks["terminate_cluster"].upstream_task_ids >= set(SENSORS)
    assert tasks["add_steps"].upstream_task_ids == {"create_cluster", "step_config"}
    assert "create_cluster" in tasks["cluster_config"].downstream_task_ids


def test_transient_cluster_dag_runs_both_jobs_and_terminates(dagbag, mode, aws, stage, set_variable,
                                                             end_on_second_look, inline_triggers) -> None:
    import boto3

    stage(PREFIX)
    set_variable({"prefix": PREFIX, "log_uri": "s3://deploy/logs/", "profile": "g6", "jobs": JOBS_SETTINGS,
                  "cache": "s3://deploy/cache/"})
    end_on_second_look()
    run = _dag(dagbag, "accel_scoring_emr").test(logical_date=RUN_DATE)
    states = _states(run)
    assert str(run.state) == "success", states
    assert states["watcher"] == "skipped"
    assert states["watch_embed_texts"] == "skipped"  # the Variable configures two of the three jobs
    _waited(run, mode, inline_triggers, "EmrStepSensorTrigger", WATCH)
    cluster_id = _only_cluster()
    assert moto_support.cluster_state(cluster_id) == "TERMINATED"
    emr = boto3.client("emr")
    tags = {t["Key"]: t["Value"] for t in emr.describe_cluster(ClusterId=cluster_id)["Cluster"]["Tags"]}
    assert tags["accel-scoring:dag-run"] == run.run_id
    groups = emr.list_instance_groups(ClusterId=cluster_id)["InstanceGroups"]
    assert any(g["InstanceType"] == "g6.2xlarge" for g in groups)  # the Variable's profile
    steps = emr.list_steps(ClusterId=cluster_id)["Steps"]
    args = {s["Name"]: s["Config"]["Args"] for s in steps}
    assert set(args) == {"score-duplicates-2026-11-01", "score-query_intent-2026-11-01"}
    for name, argv in args.items():
        assert argv[0] == "spark-submit"
        assert argv[argv.index("--run-date") + 1] == "2026-11-01"  # {{ ds }}
        assert argv[argv.index("--cache") + 1] == f"s3://deploy/cache/{name.split('-')[1]}/"


def test_transient_cluster_dag_installs_the_torch_only_environment(dagbags, aws, stage, set_variable,
                                                                   end_on_second_look) -> None:
    """A Variable for --backend torch-cuda on a bootstrap environment: the cluster installs the CUDA torch
    alone from the torch index (no NVIDIA index), and its steps run torch-cuda."""
    import boto3

    url = "https://torch.example.invalid/cu126"
    jobs = {job: {**spec, "args": ["--backend", "torch-cuda"]} for job, spec in JOBS_SETTINGS.items()}
    stage(PREFIX, stack={})  # a CPU archive: the steps run on the bootstrap environment, not on it
    set_variable({"prefix": PREFIX, "log_uri": "s3://deploy/logs/", "jobs": jobs, "python_env": "bootstrap",
                  "pip_extras": "aws,fast,torch-cuda", "torch_index_url": url})
    end_on_second_look()
    run = _dag(dagbags["reschedule"], "accel_scoring_emr").test(logical_date=RUN_DATE)
    assert str(run.state) == "success", _states(run)
    cluster_id = _only_cluster()
    emr = boto3.client("emr")
    actions = emr.list_bootstrap_actions(ClusterId=cluster_id)["BootstrapActions"]
    install = [a for a in actions if a["Name"] == "install-python-env"][0]
    assert install["Args"] == [PREFIX + "package/", "aws,fast,torch-cuda", "/opt/accel-scoring/venv",
                               PREFIX + "scripts/gpu-torch-requirements.txt", url]
    for step in emr.list_steps(ClusterId=cluster_id)["Steps"]:
        assert step["Config"]["Args"][-2:] == ["--backend", "torch-cuda"]


def test_failed_step_still_terminates_cluster_and_fails_the_run(dagbag, mode, aws, stage, set_variable,
                                                                end_on_second_look, inline_triggers) -> None:
    stage(PREFIX)
    set_variable({"prefix": PREFIX, "log_uri": "s3://deploy/logs/", "jobs": JOBS_SETTINGS})

    def outcome(step) -> dict:
        if "duplicates" in step.name:
            return {"state": "FAILED", "reason": "Unknown Error.", "message": "exit 1",
                    "log_file": "s3://deploy/logs/stderr.gz"}
        return {}

    end_on_second_look(outcome)
    run = _dag(dagbag, "accel_scoring_emr").test(logical_date=RUN_DATE)
    states = _states(run)
    assert str(run.state) == "failed", states
    _waited(run, mode, inline_triggers, "EmrStepSensorTrigger", WATCH)
    assert states["watch_duplicates"] == "failed"
    assert states["watch_query_intent"] == "success"
    assert states["terminate_cluster"] == "success"
    assert states["watcher"] == "failed"
    assert moto_support.cluster_state(_only_cluster()) == "TERMINATED"


def test_existing_cluster_dag_adds_steps_and_leaves_cluster_running(dagbag, mode, aws, stage, set_variable,
                                                                    end_on_second_look, inline_triggers) -> None:
    import boto3

    from emr.deployment import cluster_request

    stage(PREFIX)
    settings = {"prefix": PREFIX, "log_uri": "s3://deploy/logs/", "jobs": JOBS_SETTINGS}
    cluster_id = boto3.client("emr").run_job_flow(**cluster_request(settings))["JobFlowId"]
    set_variable({**settings, "cluster_id": cluster_id})
    end_on_second_look()
    run = _dag(dagbag, "accel_scoring_emr_existing").test(logical_date=RUN_DATE)
    assert str(run.state) == "success", _states(run)
    _waited(run, mode, inline_triggers, "EmrStepSensorTrigger", WATCH)
    assert moto_support.cluster_state(cluster_id) in ("WAITING", "RUNNING")
    assert len(boto3.client("emr").list_steps(ClusterId=cluster_id)["Steps"]) == 2


def test_existing_cluster_dag_runs_all_three_jobs_and_watches_each_ones_step(dagbags, aws, stage, set_variable,
                                                                             end_on_second_look) -> None:
    """With embed_texts configured too: three steps, and each sensor watches its own job's step
    (the embeddings step fails; its sensor alone fails)."""
    import boto3

    from emr.deployment import cluster_request

    stage(PREFIX)
    settings = {"prefix": PREFIX, "log_uri": "s3://deploy/logs/", "jobs": {**JOBS_SETTINGS, "embed_texts": EMBED_TEXTS}}
    cluster_id = boto3.client("emr").run_job_flow(**cluster_request(settings))["JobFlowId"]
    set_variable({**settings, "cluster_id": cluster_id})
    end_on_second_look(lambda step: {"state": "FAILED", "reason": "Unknown Error.", "message": "exit 1",
                                     "log_file": "s3://deploy/logs/stderr.gz"} if "embed_texts" in step.name else {})
    run = _dag(dagbags["reschedule"], "accel_scoring_emr_existing").test(logical_date=RUN_DATE)
    states = _states(run)
    assert [states[t] for t in SENSORS] == ["success", "success", "failed"], states
    steps = boto3.client("emr").list_steps(ClusterId=cluster_id)["Steps"]
    assert sorted(s["Name"] for s in steps) == ["score-duplicates-2026-11-01", "score-embed_texts-2026-11-01",
                                                "score-query_intent-2026-11-01"]


def test_transient_cluster_dag_creates_no_cluster_for_steps_the_archive_cannot_run(dagbags, aws, stage,
                                                                                  set_variable) -> None:
    """--backend tensorrt on a staged archive without TensorRT: add-step's refusal, before any
    cluster exists (emr/step_policy.py; tests/emr/test_deployment.py checks the message)."""
    stage(PREFIX, stack={})
    set_variable({"prefix": PREFIX, "log_uri": "s3://deploy/logs/", "jobs": JOBS_SETTINGS})
    run = _dag(dagbags["reschedule"], "accel_scoring_emr").test(logical_date=RUN_DATE)
    states = _states(run)
    assert str(run.state) == "failed", states
    assert (states["step_config"], states["create_cluster"], states["add_steps"]) == (
        "failed", "upstream_failed", "upstream_failed")
    assert moto_support.emr_clusters() == {}  # nothing was paid for


def test_existing_cluster_dag_adds_no_step_whose_entry_file_is_not_staged(dagbags, aws, stage, set_variable) -> None:
    import boto3

    from emr.deployment import cluster_request

    stage(PREFIX, leave_out=("query_intent.py",))
    settings = {"prefix": PREFIX, "log_uri": "s3://deploy/logs/", "jobs": JOBS_SETTINGS}
    cluster_id = boto3.client("emr").run_job_flow(**cluster_request(settings))["JobFlowId"]
    set_variable({**settings, "cluster_id": cluster_id})
    run = _dag(dagbags["reschedule"], "accel_scoring_emr_existing").test(logical_date=RUN_DATE)
    states = _states(run)
    assert (str(run.state), states["step_config"], states["add_steps"]) == ("failed", "failed", "upstream_failed")
    assert boto3.client("emr").list_steps(ClusterId=cluster_id)["Steps"] == []  # not even the staged job's


def test_eks_dag_starts_no_job_run_without_the_pod_template(dagbags, aws, stage, set_variable) -> None:
    stage(PREFIX, leave_out=("executor-pod-template.yaml",))
    set_variable(_eks_settings())
    run = _dag(dagbags["reschedule"], "accel_scoring_eks").test(logical_date=RUN_DATE)
    states = _states(run)
    assert (str(run.state), states["eks_config"]) == ("failed", "failed"), states
    assert moto_support.job_runs() == {}


def _eks_settings() -> dict:
    """The Variable for a virtual cluster created on moto now."""
    import boto3

    vc = boto3.client("emr-containers").create_virtual_cluster(
        name="inf2", containerProvider={"id": "scoring-eks", "type": "EKS",
                                        "info": {"eksInfo": {"namespace": "spark"}}})["id"]
    # moto 5.2's StartJobRun knows only emr-N.N.0-... labels, not the default emr-spark-8.1.0-latest
    return {"prefix": PREFIX, "jobs": JOBS_SETTINGS, "eks": {
        "virtual_cluster_id": vc, "execution_role_arn": "arn:aws:iam::123456789012:role/emr-eks-job",
        "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/accel-neuron:1",
        "release_label": "emr-7.14.0-latest", "log_uri": "s3://deploy/eks-logs/"}}


def test_eks_dag_runs_both_jobs_on_neuroncores(dagbag, mode, aws, stage, set_variable,
                                               end_on_second_look, inline_triggers) -> None:
    from emr.deployment import eks_job_runs, job_run_token

    stage(PREFIX)
    settings = _eks_settings()
    set_variable(settings)
    end_on_second_look()
    run = _dag(dagbag, "accel_scoring_eks").test(logical_date=RUN_DATE)
    states = _states(run)
    assert str(run.state) == "success", states
    assert (states["submit_embed_texts"], states["watch_embed_texts"]) == ("skipped", "skipped")  # not configured
    _waited(run, mode, inline_triggers, "EmrContainerTrigger", WATCH)
    runs = moto_support.job_runs()
    assert len(runs) == 2
    requested = {r["name"]: r["tags"] for r in eks_job_runs(settings, "2026-11-01").values()}
    assert all(requested.values())
    assert {job.name: job.tags for job in runs.values()} == requested  # the operator passed them on
    tokens = {job.name.split("-")[2]: job.client_token for job in runs.values()}
    assert tokens == {job: job_run_token("accel_scoring_eks", run.run_id, job, 1) for job in ("duplicates", "query_intent")}
    for job in runs.values():
        driver = job.job_driver["sparkSubmitJobDriver"]
        assert driver["entryPointArguments"][driver["entryPointArguments"].index("--run-date") + 1] == "2026-11-01"
        props = job.configuration_overrides["applicationConfiguration"][0]["properties"]
        assert props["spark.executor.resource.neuroncore.vendor"] == "aws.amazon.com"


def test_failed_eks_job_run_fails_its_sensor_and_the_run(dagbag, mode, aws, stage, set_variable,
                                                         end_on_second_look, inline_triggers) -> None:
    stage(PREFIX)
    set_variable(_eks_settings())
    end_on_second_look(job_run_outcome=lambda job_run: {"state": "FAILED", "reason": "USER_ERROR"}
                       if "duplicates" in job_run.name else {})
    run = _dag(dagbag, "accel_scoring_eks").test(logical_date=RUN_DATE)
    states = _states(run)
    assert str(run.state) == "failed", states
    _waited(run, mode, inline_triggers, "EmrContainerTrigger", WATCH)
    assert (states["watch_duplicates"], states["watch_query_intent"]) == ("failed", "success")


@pytest.fixture
def idempotent_start_job_run(monkeypatch) -> Counter:
    """StartJobRun as EMR on EKS documents it: a token seen before returns that job run. The first
    call per token also loses its answer (the run is started, the caller gets an error), as a
    timeout would. Counts the calls per token."""
    from moto.emrcontainers.models import EMRContainersBackend
    from moto.emrcontainers.exceptions import ResourceNotFoundException

    calls: Counter = Counter()
    start = EMRContainersBackend.start_job_run

    def start_job_run(self, **kwargs):
        token = kwargs["client_token"]
        calls[token] += 1
        seen = [run for run in self.job_runs.values() if run.client_token == token]
        if seen:
            return seen[0]
        start(self, **kwargs)
        raise ResourceNotFoundException("the answer was lost")  # any error: the operator fails this try

    monkeypatch.setattr(EMRContainersBackend, "start_job_run", start_job_run)
    return calls


def test_a_retried_submit_gets_the_job_run_its_first_try_started(dagbags, aws, stage, set_variable, end_on_second_look,
                                                                 idempotent_start_job_run) -> None:
    """Each submit's first try starts its job run and fails; the retry sends the same token and
    gets that run, so each job runs once and the DAG run succeeds."""
    from datetime import timedelta

    stage(PREFIX)
    set_variable(_eks_settings())
    end_on_second_look()
    dag = _dag(dagbags["reschedule"], "accel_scoring_eks")
    for job in ("duplicates", "query_intent"):
        dag.task_dict[f"submit_{job}"].retry_delay = timedelta(0)
    run = dag.test(logical_date=RUN_DATE)
    assert str(run.state) == "success", _states(run)
    assert sorted(job.name for job in moto_support.job_runs().values()) == [
        "accel-scoring-duplicates-2026-11-01", "accel-scoring-query_intent-2026-11-01"]
    assert sorted(idempotent_start_job_run.values()) == [2, 2]  # a lost answer, then the same run again
