#!/usr/bin/env bash
# Spark resource discovery script for "gpu" (spark.{executor,worker}.resource.gpu.discoveryScript).
# Prints Spark's ResourceInformation JSON: {"name":"gpu","addresses":["0","1"]}.
# Like Spark's examples/src/main/scripts/getGpusResources.sh, the addresses are the GPU indices
# nvidia-smi reports; under YARN cgroup isolation it reports only the executor's own GPUs.
set -euo pipefail

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "get_gpus.sh: nvidia-smi not found on PATH; is the NVIDIA driver installed on this node?" >&2
  exit 1
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
