#!/bin/bash
# EMR bootstrap action: install the scoring environment at a fixed path on every node.
# The alternative to shipping a venv-pack archive with each step, for the multi-GB CUDA
# stacks (TensorRT, CUDA torch): installed once per node at cluster start, then used through
# spark.pyspark.python (set by `python -m emr create-cluster --python-env bootstrap`).
#
# Args: <s3 prefix holding the project wheel> <pip extras, e.g. aws,gpu> <venv path>
#       [<s3 uri of a GPU requirements file> <torch index url> [<nvidia index url>]]
# With a requirements file (create-cluster passes one for a gpu or torch-cuda extra,
# emr/bootstrap_env.py), the pins there are installed first, from those indexes, as
# `make package-gpu` and `make package-gpu-torch` do (emr/docker/Dockerfile.al2023-env):
# gpu-requirements.txt (CUDA torch and TensorRT) needs the NVIDIA index too,
# gpu-torch-requirements.txt (the CUDA torch alone) only the torch one. The wheel's extras then
# find them installed and pull nothing from the public index in their place.
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
  NVIDIA_INDEX_URL="${6:-}"
  requirements="$work/$(basename "$REQUIREMENTS")"
  aws s3 cp "$REQUIREMENTS" "$requirements"
  indexes=(--extra-index-url "$TORCH_INDEX_URL")
  if [ -n "$NVIDIA_INDEX_URL" ]; then
    indexes+=(--extra-index-url "$NVIDIA_INDEX_URL")
  fi
  # tensorrt-cu12-libs on the public index is a wheel-stub, which fetches the real libraries from
  # WHEEL_STUB_PIP_INDEX_URL (no other variable); sudo would drop it unless set here.
  sudo env WHEEL_STUB_PIP_INDEX_URL="$NVIDIA_INDEX_URL" "$pip" install --no-cache-dir \
    "${indexes[@]}" -r "$requirements"
fi
sudo "$pip" install --no-cache-dir "${wheel}[${EXTRAS}]"
sudo chmod -R a+rX "$VENV"
rm -rf "$work"
