# Airflow DAG tests in their own venv. Hook into the top-level Makefile with:
#     include emr/airflow.mk
#     test: test-airflow          # or call `$(MAKE) test-airflow` from the test recipe
# Targets:
#     make airflow-venv    create .venv-airflow once (re-created when the requirements change)
#     make test-airflow    run tests/airflow with it (dag.test() against a local moto server)

AIRFLOW_VENV ?= .venv-airflow
AIRFLOW_PYTHON_BASE ?= python3
AIRFLOW_STAMP := $(AIRFLOW_VENV)/.installed-stamp

$(AIRFLOW_STAMP): emr/airflow-requirements.txt
	test -x $(AIRFLOW_VENV)/bin/python || $(AIRFLOW_PYTHON_BASE) -m venv $(AIRFLOW_VENV)
	$(AIRFLOW_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r emr/airflow-requirements.txt
	touch $@

.PHONY: airflow-venv test-airflow
airflow-venv: $(AIRFLOW_STAMP)

test-airflow: $(AIRFLOW_STAMP)
	PYTHONPATH=$(CURDIR) $(AIRFLOW_VENV)/bin/python -m pytest tests/airflow -p no:cacheprovider --timeout=600
