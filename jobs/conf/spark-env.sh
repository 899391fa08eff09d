# Sourced by the venv's spark-submit (Spark's load-spark-env.sh); `make venv` copies it into
# pyspark/conf/. A Spark started from this venv runs this venv's Python, for the driver and the
# local workers, so `.venv/bin/spark-submit jobs/…` works in a shell that activated nothing.
# SPARK_HOME is <venv>/lib/pythonX.Y/site-packages/pyspark. A value the user set wins.
_accel_venv="$(cd "${SPARK_HOME}/../../../.." && pwd)"
_accel_venv_python="${_accel_venv}/bin/python"
PYSPARK_PYTHON="${PYSPARK_PYTHON:-${_accel_venv_python}}"
PYSPARK_DRIVER_PYTHON="${PYSPARK_DRIVER_PYTHON:-${PYSPARK_PYTHON}}"
# pyspark 3.5 imports distutils to check the pandas and pyarrow versions: on the driver as each
# Arrow UDF is built, and in every Python worker. The venv's setuptools (torch requires it) answers
# that import with the whole of setuptools, through its distutils-precedence.pth: 0.22 s each time,
# on the critical path of a cold run (docs/performance.md, "A cold run's fixed cost"). Python's
# own distutils answers it at once, but only where the venv's base Python has one: none from 3.12,
# and Debian's 3.11 holds only distutils/version.py (what pyspark imports) without python3-distutils.
# So only for this venv's Python, and only where its base Python's <prefix>/lib/pythonX.Y holds
# distutils/version.py (pyvenv.cfg's `home` is that Python's bin/ folder).
if [ "${PYSPARK_PYTHON}" = "${_accel_venv_python}" ] && [ "${PYSPARK_DRIVER_PYTHON}" = "${_accel_venv_python}" ]; then
  _accel_base_bin="$(sed -n 's/^home *= *//p' "${_accel_venv}/pyvenv.cfg" 2>/dev/null)"
  _accel_python_lib="$(basename "$(dirname "$(dirname "${SPARK_HOME}")")")"  # pythonX.Y
  if [ -n "${_accel_base_bin}" ] && [ -f "${_accel_base_bin%/bin}/lib/${_accel_python_lib}/distutils/version.py" ]; then
    SETUPTOOLS_USE_DISTUTILS="${SETUPTOOLS_USE_DISTUTILS:-stdlib}"
  fi
fi
unset _accel_venv _accel_venv_python _accel_base_bin _accel_python_lib
