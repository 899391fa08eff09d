"""What `make spark-conf` does to the venv's Spark. Its jobs/conf/spark-env.sh: which Python the
venv's Spark runs, and that it spares pyspark 3.5's distutils import the whole of setuptools only
where Python's own distutils exists. And that Spark's Python processes import the installed
pyspark, not Spark's pyspark.zip."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SPARK_ENV = Path(__file__).resolve().parents[1] / "jobs" / "conf" / "spark-env.sh"


def sourced(venv: Path, python: str, **env: str) -> dict[str, str]:
    """The variables spark-env.sh exports for a Spark home inside `venv`, as Spark's
    load-spark-env.sh sources it (`set -a`), in a shell that set only `env`."""
    home = venv / "lib" / python / "site-packages" / "pyspark"
    home.mkdir(parents=True, exist_ok=True)
    (venv / "bin").mkdir(exist_ok=True)
    script = f'set -a; . "{SPARK_ENV}"; set +a; env -0'
    out = subprocess.run(["bash", "-c", script], env={"PATH": os.environ["PATH"], "SPARK_HOME": str(home), **env},
                         capture_output=True, text=True, check=True).stdout
    return dict(item.split("=", 1) for item in out.split("\0") if "=" in item)


def test_venv_python_runs_driver_and_workers(tmp_path):
    env = sourced(tmp_path / "venv", "python3.11")
    python = str((tmp_path / "venv" / "bin" / "python").resolve())
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == python


@pytest.mark.parametrize("python, user, expected", [
    ("python3.11", {}, "stdlib"),
    ("python3.10", {}, "stdlib"),
    ("python3.12", {}, None),  # no distutils of its own: setuptools' must answer
    ("python3.13", {}, None),
    ("python3.11", {"SETUPTOOLS_USE_DISTUTILS": "local"}, "local"),  # the user's choice wins
    ("python3.11", {"PYSPARK_PYTHON": "/usr/bin/python3"}, None),  # another Python: its version is unknown here
    ("python3.11", {"PYSPARK_DRIVER_PYTHON": "/usr/bin/python3"}, None),
])
def test_distutils_from_python_only_where_it_has_one(tmp_path, python, user, expected):
    assert sourced(tmp_path / "venv", python, **user).get("SETUPTOOLS_USE_DISTUTILS") == expected


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 has no distutils of its own")
def test_pyspark_version_checks_pass_with_python_distutils():
    """What the setting changes: pyspark's pandas and pyarrow checks import Python's distutils,
    not setuptools, and still pass."""
    check = ("import sys\n"
             "from pyspark.sql.pandas.utils import require_minimum_pandas_version, require_minimum_pyarrow_version\n"
             "require_minimum_pandas_version(); require_minimum_pyarrow_version()\n"
             "import distutils; print(distutils.__file__); print('setuptools' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", check], capture_output=True,
                         text=True, check=True, env={**os.environ, "SETUPTOOLS_USE_DISTUTILS": "stdlib"}).stdout.split()
    assert "site-packages" not in out[0] and out[1] == "False"


def test_moved_zip_holds_the_installed_sources():
    """`make spark-conf` moves the venv's Spark's pyspark.zip aside so that Spark's Python processes
    import the installed, byte-compiled package instead: every module in the zip that is not a
    test is in the installed package, byte for byte, so nothing but the import's speed changes."""
    import zipfile

    import pyspark

    package = Path(pyspark.__file__).parent
    (archive,) = (package / "python" / "lib").glob("pyspark.zip*")
    with zipfile.ZipFile(archive) as z:
        modules = [n for n in z.namelist() if n.endswith(".py") and "/tests/" not in n and "/testing/" not in n]
        differ = [n for n in modules if not (package.parent / n).is_file() or (package.parent / n).read_bytes() != z.read(n)]
    assert len(modules) > 200 and not differ


@pytest.mark.spark
def test_spark_python_workers_import_the_installed_pyspark(spark):
    """The venv's Spark after `make spark-conf`: no pyspark.zip first on its workers' path."""
    (where,) = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("pyspark").__file__).collect()
    assert ".zip" not in where and where.endswith("site-packages/pyspark/__init__.py")
