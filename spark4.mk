# Spark 4 (EMR 8: Scala 2.13, Java 17) beside Spark 3.5 (EMR 7): the project again
# in .venv-spark4, with the `spark4` extra instead of `spark`, and the tests that start Spark run
# with it. Included by the top-level Makefile after project-venv and VENV_DEPS; `make test` calls
# test-spark4 after the Spark 3.5 run. Its pyspark follows the default EMR release's Spark minor
# (emr/releases.py DEFAULT, emr-spark-8.1.0: Spark 4.1): the `spark4` extra admits 4.0 and 4.1, and
# pip installs the newest.
# Targets:
#     make spark4-venv    create .venv-spark4 (re-created when pyproject.toml or the Spark conf changes)
#     make test-spark4    the local-Spark and standalone-cluster tests (markers `spark`, `cluster`)
#                         on Spark 4, and the job compared across both lines (tests/test_spark_lines.py)

SPARK4_VENV := .venv-spark4
SPARK4_STAMP := $(SPARK4_VENV)/.installed
SPARK4_EXTRAS := compile,spark4,aws,fast,dev
SPARK4_TESTS ?= -m "spark or cluster" --ignore=tests/airflow

.PHONY: spark4-venv test-spark4
$(SPARK4_STAMP): $(VENV_DEPS) spark4.mk
	$(call project-venv,$(SPARK4_VENV),$(SPARK4_EXTRAS))

spark4-venv: $(SPARK4_STAMP)

# SPARK35_PYTHON: the Spark 3.5 venv that tests/test_spark_lines.py runs the same job with.
test-spark4: $(SPARK4_STAMP) $(STAMP)
	SPARK35_PYTHON=$(CURDIR)/$(PY) $(SPARK4_VENV)/bin/python -m pytest $(SPARK4_TESTS)
