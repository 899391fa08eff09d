# Sourced by the venv's spark-submit (Spark's load-spark-env.sh); `make venv` copies it into
# pyspark/conf/. A Spark started from this venv runs this venv's Python, for the driver and the
# local workers, so `.venv/bin/spark-submit jobs/…` works in a shell that activated nothing.
# SPARK_HOME is <venv>/lib/pythonX.Y/site-packages/pyspark. A value the user set wins.
_accel_venv_python="$(cd "${SPARK_HOME}/../../../.." && pwd)/bin/python"
PYSPARK_PYTHON="${PYSPARK_PYTHON:-${_accel_venv_python}}"
PYSPARK_DRIVER_PYTHON="${PYSPARK_DRIVER_PYTHON:-${PYSPARK_PYTHON}}"
# pyspark 3.5 imports distutils to check the pandas and pyarrow versions: on the driver as each
# Arrow UDF is built, and in every Python worker. The venv's setuptools (torch requires it) answers
# that import with the whole of setuptools, through its distutils-precedence.pth: 0.22 s each time,
# on the critical path of a cold run (docs/performance.md, "A cold run's fixed cost"). Python's
# own distutils answers it at once, but only up to 3.11 (3.12 has none): so only for this venv's
# Python, and only where it is 3.11 or older.
if [ "${PYSPARK_PYTHON}" = "${_accel_venv_python}" ] && [ "${PYSPARK_DRIVER_PYTHON}" = "${_accel_venv_python}" ]; then
  case "${SPARK_HOME}" in
    */lib/python3.[89]/*|*/lib/python3.1[01]/*) SETUPTOOLS_USE_DISTUTILS="${SETUPTOOLS_USE_DISTUTILS:-stdlib}" ;;
  esac
fi
unset _accel_venv_python
