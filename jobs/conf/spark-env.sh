# Sourced by the venv's spark-submit (Spark's load-spark-env.sh); `make venv` copies it into
# pyspark/conf/. A Spark started from this venv runs this venv's Python, for the driver and the
# local workers, so `.venv/bin/spark-submit jobs/…` works in a shell that activated nothing.
# SPARK_HOME is <venv>/lib/pythonX.Y/site-packages/pyspark. A value the user set wins.
_accel_venv_python="$(cd "${SPARK_HOME}/../../../.." && pwd)/bin/python"
PYSPARK_PYTHON="${PYSPARK_PYTHON:-${_accel_venv_python}}"
PYSPARK_DRIVER_PYTHON="${PYSPARK_DRIVER_PYTHON:-${PYSPARK_PYTHON}}"
unset _accel_venv_python
