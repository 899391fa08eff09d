#!/usr/bin/env bash
# Spark resource discovery script for "gpu" (spark.{executor,worker}.resource.gpu.discoveryScript).
# Prints Spark's ResourceInformation JSON: {"name":"gpu","addresses":["0","1"]}.
# Like Spark's examples/src/main/scripts/getGpusResources.sh, the addresses are the GPU indices
# nvidia-smi reports; under YARN cgroup isolation it reports only the executor's own GPUs.
# `python -m emr create-cluster` ships it with every application (spark.yarn.dist.files), so
# executors run ./get_gpus.sh from their working directory, whatever EMR installs.
#
# The NVIDIA driver: with ACCEL_SCORING_MIN_DRIVER=N (the cluster's spark-defaults set it for
# the executors, from emr/stacks.py) it refuses a driver older than branch N before printing, so
# an executor on a node whose driver cannot run the CUDA stack fails at start saying so.
# As an EMR bootstrap action, `get_gpus.sh --check-driver N WHAT` prints the node's driver
# version and fails the node when it is older than N; a node without nvidia-smi (the primary
# node, or a GPU node whose driver is not loaded yet) passes with a line saying so.
set -euo pipefail

check_driver() {  # $1: the oldest driver branch the stack runs on; $2: the stack
  local version
  if ! version="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader)"; then
    echo "get_gpus.sh: nvidia-smi could not report the driver version" >&2
    return 1
  fi
  version="${version%%$'\n'*}"
  version="${version//[[:space:]]/}"
  echo "get_gpus.sh: NVIDIA driver ${version}; ${2} needs R${1} or newer" >&2
  if ! [[ "${version%%.*}" =~ ^[0-9]+$ ]] || [ "${version%%.*}" -lt "$1" ]; then
    echo "get_gpus.sh: NVIDIA driver ${version} cannot run ${2}: run on nodes with driver R${1} or newer" \
         "(another EMR release or a custom AMI), or build the stack for this driver (emr/stacks.py)" >&2
    return 1
  fi
}

if [ "${1:-}" = "--check-driver" ]; then
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "get_gpus.sh: no nvidia-smi on this node, so no NVIDIA driver to check here" >&2
    exit 0
  fi
  check_driver "${2:?--check-driver takes the oldest driver branch}" "${3:-the CUDA stack of the executors}"
  exit 0
fi

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "get_gpus.sh: nvidia-smi not found on PATH; is the NVIDIA driver installed on this node?" >&2
  exit 1
fi
if [ -n "${ACCEL_SCORING_MIN_DRIVER:-}" ]; then
  check_driver "$ACCEL_SCORING_MIN_DRIVER" "the CUDA stack of the executors"
fi
if ! indices="$(nvidia-smi --query-gpu=index --format=csv,noheader)"; then
  echo "get_gpus.sh: nvidia-smi failed; the driver may not be loaded" >&2
  exit 1
fi

printf '{"name":"gpu","addresses":['
first=1
for index in $indices; do
  index="${index//[[:space:],]/}"
  [[ "$index" =~ ^[0-9]+$ ]] || continue
  if [ "$first" -eq 0 ]; then printf ','; fi
  printf '"%s"' "$index"
  first=0
done
printf ']}\n'
