"""Airflow test set-up: a throw-away AIRFLOW_HOME with a SQLite metadata DB, and moto.

Run these tests with the Airflow venv (`make -f emr/airflow.mk test-airflow`); in an
environment without Airflow every test here is skipped. Airflow reads its configuration when
first imported, so the environment is set at the top of this file, before any test imports it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

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
def moto_server() -> Iterator[moto_support.MotoServer]:
    pytest.importorskip("moto.server", reason="moto[server] is not installed")
    server = moto_support.MotoServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def aws(moto_server, monkeypatch) -> moto_support.MotoServer:
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
def set_variable(monkeypatch):
    def set_(value: dict) -> None:
        monkeypatch.setenv("AIRFLOW_VAR_ACCEL_SCORING", json.dumps(value))

    return set_
