"""A --model the artifact store cannot read ends a job with exit 2 and one line naming the URI and
the cause: no traceback and nothing written. The driver checks the artifact before Spark starts,
so none of these tests starts a SparkSession."""

from __future__ import annotations

import pytest

from jobs.duplicates import main
from tests import moto_support
from tests.emr.test_store import BUCKET, PREFIX, _publish
from tests.jobhelpers import run_job

URI = f"s3://{BUCKET}/{PREFIX}"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ACCEL_SCORING_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _one_line_error(tmp_path, capsys, cache, model: str) -> str:
    rc, summary, err = run_job(main, capsys, input=tmp_path / "in.parquet", output=tmp_path / "out", model=model)
    lines = err.strip().splitlines()
    assert rc == 2 and summary is None, err
    assert len(lines) == 1 and lines[0].startswith(f"error: --model {model}: "), err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists() and not cache.exists()  # nothing written, nothing downloaded
    return lines[0]


def test_unsupported_scheme(tmp_path, capsys, cache):
    line = _one_line_error(tmp_path, capsys, cache, "gs://bucket/model/")
    assert "unsupported scheme 'gs://'; an artifact is a local path, file:// or s3://" in line


def test_missing_manifest_key(s3, tmp_path, capsys, cache):
    s3.create_bucket(Bucket=BUCKET)
    line = _one_line_error(tmp_path, capsys, cache, URI)
    assert f"{URI}manifest.json does not exist: not an artifact, or not published yet" in line


def test_access_denied_by_iam(s3, aws, tmp_path, capsys, cache, monkeypatch):
    import boto3

    _publish(s3)
    reader = moto_support.iam_user_env("lister", {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{BUCKET}"}]})
    for key, value in reader.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # it caches the credentials it first found
    with moto_support.iam_enforced(aws.url):
        # The user's key is valid and may list the bucket: the denial below is IAM's, for s3:GetObject.
        assert boto3.client("s3").list_objects_v2(Bucket=BUCKET)["KeyCount"] == 3
        line = _one_line_error(tmp_path, capsys, cache, URI)
    assert f"access denied reading {URI}manifest.json" in line
