#!/bin/bash
# Spark resource discovery script for the custom resource "neuroncore".
# Prints {"name":"neuroncore","addresses":["0","1",...]}.
#
# On Kubernetes the Neuron device plugin sets NEURON_RT_VISIBLE_CORES in the container to the
# cores it granted ("3", "0-1", "0,2"); those are this executor's cores. Without it (a
# standalone worker on an inf2 host) the cores come from `neuron-ls -j`.
set -euo pipefail

expand() {  # "0-2,5" -> 0 1 2 5
  local part lo hi
  IFS=',' read -ra parts <<< "$1"
  for part in "${parts[@]}"; do
    part="${part//[[:space:]]/}"
    [ -z "$part" ] && continue
    if [[ "$part" == *-* ]]; then
      lo="${part%-*}"; hi="${part#*-}"
      seq "$lo" "$hi"
    else
      echo "$part"
    fi
  done
}

if [ -n "${NEURON_RT_VISIBLE_CORES:-}" ]; then
  cores="$(expand "$NEURON_RT_VISIBLE_CORES")"
elif command -v neuron-ls >/dev/null 2>&1; then
  cores="$(neuron-ls -j | python3 -c '
import json, sys
for device in json.load(sys.stdin):
    for core in device.get("neuroncore_ids", []):
        print(core)
')"
else
  cores=""
fi

printf '{"name":"neuroncore","addresses":['
first=1
for c in $cores; do
  if [ $first -eq 0 ]; then printf ','; fi
  printf '"%s"' "$c"
  first=0
done
printf ']}\n'
