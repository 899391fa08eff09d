"""`make package` output, used the way EMR uses it: spark-submit with --archives ...#environment.

The job runs on a ``local-cluster`` master: executors are separate JVMs in their own working
directories, where Spark unpacks the archive, as YARN does on EMR (plain ``local[*]`` starts
Python workers elsewhere, so ``./environment/bin/python`` would not resolve there).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from emr import packaging

REPO = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).parent / "assets" / "probe_job.py"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("venv_pack", reason="venv-pack is not installed")
    out = tmp_path_factory.mktemp("dist")
    packaging.build_all(REPO, out, echo=lambda line: None)
    return out


def test_pyfiles_zip_holds_the_packages_and_is_reproducible(tmp_path: Path) -> None:
    first = packaging.build_pyfiles_zip(REPO, tmp_path / "a.zip")
    second = packaging.build_pyfiles_zip(REPO, tmp_path / "b.zip")
    assert first.read_bytes() == second.read_bytes()
    names = zipfile.ZipFile(first).namelist()
    for package in packaging.PACKAGES:
        assert f"{package}/__init__.py" in names
    assert "engines/store.py" in names and not any("__pycache__" in n for n in names)


@pytest.mark.spark
def test_package_builds_wheel_zip_and_environment(dist: Path) -> None:
    wheel = next(dist.glob("accel_scoring-*-py3-none-any.whl"))
    assert "engines/store.py" in zipfile.ZipFile(wheel).namelist()
    with tarfile.open(dist / "accel-scoring-env.tar.gz") as tar:
        names = tar.getnames()
    assert "bin/python" in names and "bin/activate" in names
    assert any(n.startswith("lib/python3.11/site-packages/onnxruntime/") for n in names)
    assert any(n.startswith("lib/python3.11/site-packages/boto3/") for n in names)  # the aws extra
    flash = any(n.startswith("lib/python3.11/site-packages/flash_tokenizer/") for n in names)  # the fast extra
    assert flash == (platform.machine() == "x86_64")  # its marker: no wheel for other machines
    assert not any(n.startswith("lib/python3.11/site-packages/pyspark/") for n in names)


@pytest.mark.spark
def test_spark_submit_runs_executors_in_the_packed_environment(dist: Path, tmp_path: Path) -> None:
    spark_submit = shutil.which("spark-submit", path=str(Path(sys.executable).parent))
    if spark_submit is None:
        pytest.skip("spark-submit is not installed next to this Python (pip install pyspark)")
    out = tmp_path / "probe.json"
    env = {
        **os.environ,
        "PYSPARK_PYTHON": "./environment/bin/python",
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    cmd = [spark_submit, "--master", "local-cluster[1,2,1024]",
           "--archives", f"{dist / 'accel-scoring-env.tar.gz'}#environment",
           "--py-files", str(dist / "accel_scoring.zip"),
           "--conf", "spark.ui.enabled=false", str(PROBE), str(out)]
    # local-cluster workers always work under $SPARK_HOME/work: remove what this run leaves there.
    import pyspark

    work = Path(pyspark.__file__).parent / "work"
    before = set(work.glob("app-*"))
    try:
        done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    finally:
        for app_dir in set(work.glob("app-*")) - before:
            shutil.rmtree(app_dir, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2  # one per partition
    for row in rows:
        assert row["executable"].endswith("/environment/bin/python")
        assert row["executable"] == row["cwd"] + "/environment/bin/python"  # unpacked by Spark
        assert row["onnxruntime"].startswith(row["cwd"] + "/environment/lib/python3.11/site-packages/")
        assert row["store"].endswith("accel_scoring.zip/engines/store.py")
