"""local_aws/s3a_jars.py keeps only jars whose sha256 matches its pins, and only the two it pins.

pip is replaced by a stand-in that writes a source archive laid out like sagemaker-pyspark's,
so these tests download nothing."""
from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from local_aws import pinned_jars, s3a_jars

CONTENT = {name: f"bytes of {name}".encode() for name in s3a_jars.JARS}


@pytest.fixture
def fake_pip(monkeypatch):
    """`pip download` that saves an archive holding `served` under deps/jars/, plus a jar not pinned."""
    served = dict(CONTENT)
    calls = []

    def run(cmd, **kw):
        calls.append(cmd)
        dest = Path(cmd[cmd.index("-d") + 1])
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(dest / "sagemaker_pyspark-1.4.5.tar.gz", "w:gz") as tar:
            for name, data in {**served, "aws-java-sdk-s3-1.12.262.jar": b"not wanted"}.items():
                info = tarfile.TarInfo(s3a_jars.MEMBER_DIR + name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(pinned_jars.subprocess, "run", run)
    monkeypatch.setattr(s3a_jars, "JARS", {n: hashlib.sha256(d).hexdigest() for n, d in CONTENT.items()})
    return served, calls


def test_the_pinned_jars_are_extracted_once_and_nothing_else(tmp_path, fake_pip):
    _, calls = fake_pip
    folder = tmp_path / "s3a-jars"
    jars = s3a_jars.fetch(folder)
    assert [p.name for p in jars] == list(CONTENT) and all(p.read_bytes() == CONTENT[p.name] for p in jars)
    assert sorted(p.name for p in folder.iterdir()) == sorted(CONTENT)  # not the archive, not the other jars
    assert s3a_jars.fetch(folder) == jars and len(calls) == 1  # cached: pip runs once
    assert calls[0][-1] == s3a_jars.SDIST and list(tmp_path.iterdir()) == [folder]  # no temporary left


def test_a_jar_that_does_not_match_its_pin_is_refused_and_nothing_is_kept(tmp_path, fake_pip):
    served, _ = fake_pip
    served["hadoop-aws-3.3.1.jar"] = b"tampered"
    with pytest.raises(RuntimeError, match=r"hadoop-aws-3\.3\.1\.jar from sagemaker-pyspark==1\.4\.5 has sha256 "
                                           r"[0-9a-f]{64}; local_aws/s3a_jars.py pins"):
        s3a_jars.fetch(tmp_path / "s3a-jars")
    assert list(tmp_path.iterdir()) == [] and s3a_jars.cached(tmp_path / "s3a-jars") is None


@pytest.mark.parametrize("bundled, usable", [("3.3.4", True), ("3.4.1", False)])
def test_the_jars_serve_only_a_spark_on_their_hadoop_line(tmp_path, bundled, usable):
    """Spark 3.5 bundles Hadoop 3.3.4, Spark 4.0 Hadoop 3.4.1: only the first may load hadoop-aws 3.3.1."""
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / f"hadoop-client-api-{bundled}.jar").write_bytes(b"")
    assert s3a_jars.spark_hadoop_version(tmp_path) == bundled
    reason = s3a_jars.unusable_reason(tmp_path)
    assert (reason is None) == usable
    if not usable:
        assert f"bundles Hadoop {bundled}" in reason and "are for Hadoop 3.3" in reason
