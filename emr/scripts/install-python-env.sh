#!/bin/bash
# EMR bootstrap action: install the scoring environment at a fixed path on every node.
# The alternative to shipping a venv-pack archive with each step, for the multi-GB CUDA
# stacks (TensorRT, CUDA torch): installed once per node at cluster start, then used through
# spark.pyspark.python (set by `python -m emr create-cluster --python-env bootstrap`).
#
# Args: <s3 prefix holding the project wheel> <pip extras, e.g. aws,gpu> <venv path>
set -euo pipefail
PACKAGE_PREFIX="${1:?s3 prefix of the project wheel}"
EXTRAS="${2:-aws}"
VENV="${3:-/opt/accel-scoring/venv}"
PYTHON="${ACCEL_SCORING_PYTHON:-python3.11}"

work="$(mktemp -d)"
aws s3 cp --recursive --exclude '*' --include 'accel_scoring-*.whl' "$PACKAGE_PREFIX" "$work/"
wheel="$(ls "$work"/accel_scoring-*.whl | sort -V | tail -n 1)"
if [ -z "$wheel" ]; then
  echo "no accel_scoring-*.whl under $PACKAGE_PREFIX; run 'python -m emr stage' first" >&2
  exit 1
fi
if ! command -v "$PYTHON" >/dev/null; then
  sudo dnf install -y python3.11 python3.11-pip
fi
sudo mkdir -p "$(dirname "$VENV")"
sudo "$PYTHON" -m venv "$VENV"
sudo "$VENV/bin/pip" install --no-cache-dir --upgrade pip
sudo "$VENV/bin/pip" install --no-cache-dir "${wheel}[${EXTRAS}]"
sudo chmod -R a+rX "$VENV"
rm -rf "$work"
