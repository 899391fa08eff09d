"""Airflow test set-up: a throw-away AIRFLOW_HOME with a SQLite metadata DB, and moto.

Run these tests with the Airflow venv (`make -f emr/airflow.mk test-airflow`); in an
environment without Airflow every test here is skipped. Airflow reads its configuration when
first imported, so the environment is set at the top of this file, before any test imports it.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from local_aws.moto_server import MotoServer
from tests import moto_support

REPO = Path(__file__).resolve().parents[2]
DAGS = REPO / "emr" / "airflow"

_HOME = tempfile.mkdtemp(prefix="accel-scoring-airflow-")
os.environ.update({
    "AIRFLOW_HOME": _HOME,
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_HOME}/airflow.db",
    "AIRFLOW__LOGGING__LOGGING_LEVEL": "WARNING",
    "ACCEL_SCORING_POKE_SECONDS": "1",
})


@pytest.fixture(scope="session")
def airflow_db() -> None:
    pytest.importorskip("airflow", reason="apache-airflow is not installed (use .venv-airflow)")
    from airflow.utils import db

    db.initdb()


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    pytest.importorskip("moto.server", reason="moto[server] is not installed")
    server = MotoServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def aws(moto_server, monkeypatch) -> MotoServer:
    """Clean emulator; boto3 and the Airflow connection aws_default point at it."""
    moto_server.reset()
    for key, value in moto_support.aws_env(moto_server.url).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AIRFLOW_CONN_AWS_DEFAULT", json.dumps({
        "conn_type": "aws", "login": "testing", "password": "testing",
        "extra": {"endpoint_url": moto_server.url, "region_name": moto_support.REGION},
    }))
    return moto_server


@pytest.fixture
def stage(aws) -> Callable[..., None]:
    """Stage a deployment on moto, as `python -m emr stage` would (moto_support.stage_deployment)."""
    return moto_support.stage_deployment


@pytest.fixture
def set_variable(monkeypatch):
    def set_(value: dict) -> None:
        monkeypatch.setenv("AIRFLOW_VAR_ACCEL_SCORING", json.dumps(value))

    return set_


Outcome = Callable[[Any], dict]  # moto's step or job run -> moto_support.finish_step/finish_job_run kwargs


@pytest.fixture
def end_on_second_look(monkeypatch) -> Callable[..., None]:
    """End each EMR step and EMR on EKS job run when it is described the second time.

    The first DescribeStep / DescribeJobRun answers RUNNING, so every sensor has to wait once
    (defer or reschedule) whatever the timing; the second ends it with ``step_outcome(step)`` or
    ``job_run_outcome(job_run)`` (default: COMPLETED).
    """
    from moto.emr.models import ElasticMapReduceBackend
    from moto.emrcontainers.models import EMRContainersBackend

    looks: Counter = Counter()
    lock = threading.Lock()

    def second_look(resource_id: str) -> bool:
        with lock:
            looks[resource_id] += 1
            return looks[resource_id] == 2

    describe_step, describe_job_run = ElasticMapReduceBackend.describe_step, EMRContainersBackend.describe_job_run

    def install(step_outcome: Outcome = lambda step: {}, job_run_outcome: Outcome = lambda run: {}) -> None:
        def step(self, cluster_id: str, step_id: str):
            if second_look(step_id):
                moto_support.finish_step(cluster_id, step_id,
                                         **step_outcome(moto_support.emr_step(cluster_id, step_id)))
            return describe_step(self, cluster_id, step_id)

        def job_run(self, job_run_id: str, virtual_cluster_id: str):
            if second_look(job_run_id):
                moto_support.finish_job_run(job_run_id, **job_run_outcome(self.job_runs[job_run_id]))
            return describe_job_run(self, job_run_id, virtual_cluster_id)

        monkeypatch.setattr(ElasticMapReduceBackend, "describe_step", step)
        monkeypatch.setattr(EMRContainersBackend, "describe_job_run", job_run)

    return install
