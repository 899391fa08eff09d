"""Fixtures for the EMR tooling and artifact store tests: a moto server on 127.0.0.1."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests import moto_support


@pytest.fixture(scope="session")
def moto_server() -> Iterator[moto_support.MotoServer]:
    pytest.importorskip("moto.server", reason="moto[server] is not installed")
    server = moto_support.MotoServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def aws(moto_server: moto_support.MotoServer, monkeypatch: pytest.MonkeyPatch) -> moto_support.MotoServer:
    """A clean emulator; boto3 in this process (and its children) talks only to it."""
    moto_server.reset()
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for key, value in moto_support.aws_env(moto_server.url).items():
        monkeypatch.setenv(key, value)
    return moto_server


@pytest.fixture
def s3(aws: moto_support.MotoServer):
    import boto3

    return boto3.client("s3")
