"""jobs/conf/spark-env.sh, which `make spark-conf` copies into the venv's Spark: which Python the
venv's Spark runs, and that it spares pyspark 3.5's distutils import the whole of setuptools only
where the venv's base Python has distutils of its own."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SPARK_ENV = Path(__file__).resolve().parents[1] / "jobs" / "conf" / "spark-env.sh"


def sourced(venv: Path, python: str, base_distutils: bool = True, **env: str) -> dict[str, str]:
    """The variables spark-env.sh exports for a Spark home inside `venv`, as Spark's
    load-spark-env.sh sources it (`set -a`), in a shell that set only `env`. The venv's base
    Python (pyvenv.cfg's home) has distutils/version.py in its stdlib where `base_distutils`."""
    home = venv / "lib" / python / "site-packages" / "pyspark"
    home.mkdir(parents=True, exist_ok=True)
    base = venv.parent / "base-python"
    stdlib = base / "lib" / python
    stdlib.mkdir(parents=True, exist_ok=True)
    if base_distutils:
        (stdlib / "distutils").mkdir(exist_ok=True)
        (stdlib / "distutils" / "version.py").write_text("")
    (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\ninclude-system-site-packages = false\n")
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
    ("python3.12", {"base_distutils": False}, None),  # no distutils of its own: setuptools' must answer
    ("python3.11", {"base_distutils": False}, None),  # a Python built or packaged without it
    ("python3.11", {"SETUPTOOLS_USE_DISTUTILS": "local"}, "local"),  # the user's choice wins
    ("python3.11", {"PYSPARK_PYTHON": "/usr/bin/python3"}, None),  # another Python: its version is unknown here
    ("python3.11", {"PYSPARK_DRIVER_PYTHON": "/usr/bin/python3"}, None),
])
def test_distutils_from_python_only_where_it_has_one(tmp_path, python, user, expected):
    assert sourced(tmp_path / "venv", python, **user).get("SETUPTOOLS_USE_DISTUTILS") == expected


def test_this_venv_gets_python_distutils_where_its_base_python_has_it():
    """The check against this very venv's pyvenv.cfg: its base Python, without site-packages
    (-S: no setuptools), imports distutils.version exactly where the setting is made."""
    import pyspark

    venv = Path(sys.prefix)
    if venv == Path(sys.base_prefix) or not Path(pyspark.__file__).is_relative_to(venv):
        pytest.skip("not running from a venv that holds its pyspark")
    home = Path(pyspark.__file__).parent
    script = f'set -a; . "{SPARK_ENV}"; set +a; echo "${{SETUPTOOLS_USE_DISTUTILS:-unset}}"'
    got = subprocess.run(["bash", "-c", script], env={"PATH": os.environ["PATH"], "SPARK_HOME": str(home)},
                         capture_output=True, text=True, check=True).stdout.strip()
    has_own = subprocess.run([sys._base_executable, "-S", "-c", "import distutils.version"],
                             capture_output=True).returncode == 0
    assert got == ("stdlib" if has_own else "unset")


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

