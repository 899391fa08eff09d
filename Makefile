# The README's commands. Each target sets up .venv on a fresh machine before it runs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# torch first and pinned: a bare `torch` would pull a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed
DEMO_ROWS ?= 10000

.PHONY: venv demo test package clean

include emr/package.mk emr/airflow.mk

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[compile,spark,aws,dev]"
	touch $@

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m bench.demo --rows $(DEMO_ROWS)

# The Airflow DAG tests run in their own venv (emr/airflow.mk): Airflow's pins clash with Spark's.
test: $(STAMP) $(AIRFLOW_STAMP)
	$(PY) -m pytest --ignore=tests/airflow
	$(MAKE) --no-print-directory test-airflow

package: $(STAMP)

clean:
	rm -rf out artifacts data spark-warehouse
