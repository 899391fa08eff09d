"""Fixtures for the EMR tooling and artifact store tests: a moto server on 127.0.0.1."""

from __future__ import annotations

from typing import Iterator

import pytest

from local_aws.moto_server import MotoServer
from tests import moto_support


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    pytest.importorskip("moto.server", reason="moto[server] is not installed")
    server = MotoServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def aws(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """A clean emulator; boto3 in this process (and its children) talks only to it."""
    moto_server.reset()
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for key, value in moto_support.aws_env(moto_server.url).items():
        monkeypatch.setenv(key, value)
    return moto_server


@pytest.fixture
def s3(aws: MotoServer):
    import boto3

    return boto3.client("s3")
