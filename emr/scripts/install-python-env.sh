#!/bin/bash
# EMR bootstrap action: install the scoring environment at a fixed path on every node.
# The alternative to shipping a venv-pack archive with each step, for the multi-GB CUDA
# stacks (TensorRT, CUDA torch): installed once per node at cluster start, then used through
# spark.pyspark.python (set by `python -m emr create-cluster --python-env bootstrap`).
#
# Args: <s3 prefix holding the project wheel> <pip extras, e.g. aws,gpu> <venv path>
#       [<s3 uri of gpu-requirements.txt> <torch index url> <nvidia index url>]
# With the last three (create-cluster passes them for a gpu extra, emr/bootstrap_env.py), the
# CUDA torch and TensorRT pinned there are installed first, from those indexes, as
# `make package-gpu` does (emr/docker/Dockerfile.al2023-env); the wheel's extras then find
# them installed and pull nothing from the public index in their place.
set -euo pipefail
PACKAGE_PREFIX="${1:?s3 prefix of the project wheel}"
EXTRAS="${2:-aws,fast}"
VENV="${3:-/opt/accel-scoring/venv}"
REQUIREMENTS="${4:-}"
PYTHON="${ACCEL_SCORING_PYTHON:-python3.11}"

work="$(mktemp -d)"
aws s3 cp --recursive --exclude '*' --include 'accel_scoring-*.whl' "$PACKAGE_PREFIX" "$work/"
wheel="$(ls "$work"/accel_scoring-*.whl 2>/dev/null | sort -V | tail -n 1)"
if [ -z "$wheel" ]; then
  echo "no accel_scoring-*.whl under $PACKAGE_PREFIX; run 'python -m emr stage' first" >&2
  exit 1
fi
if ! command -v "$PYTHON" >/dev/null; then
  sudo dnf install -y python3.11 python3.11-pip
fi
sudo mkdir -p "$(dirname "$VENV")"
sudo "$PYTHON" -m venv "$VENV"
pip="$VENV/bin/pip"
sudo "$pip" install --no-cache-dir --upgrade pip
if [ -n "$REQUIREMENTS" ]; then
  TORCH_INDEX_URL="${5:?torch index url (with a requirements file)}"
  NVIDIA_INDEX_URL="${6:?nvidia index url (with a requirements file)}"
  aws s3 cp "$REQUIREMENTS" "$work/gpu-requirements.txt"
  # tensorrt-cu12-libs on the public index is a wheel-stub, which fetches the real libraries from
  # WHEEL_STUB_PIP_INDEX_URL (no other variable); sudo would drop it unless set here.
  sudo env WHEEL_STUB_PIP_INDEX_URL="$NVIDIA_INDEX_URL" "$pip" install --no-cache-dir \
    --extra-index-url "$TORCH_INDEX_URL" --extra-index-url "$NVIDIA_INDEX_URL" -r "$work/gpu-requirements.txt"
fi
sudo "$pip" install --no-cache-dir "${wheel}[${EXTRAS}]"
sudo chmod -R a+rX "$VENV"
rm -rf "$work"
