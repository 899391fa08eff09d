#!/usr/bin/env python3
"""Spark resource discovery script for "neuroncore" (spark.{executor,worker}.resource.neuroncore.discoveryScript).

Prints Spark's ResourceInformation JSON: {"name": "neuroncore", "addresses": ["0", "1"]}.

Where the cores come from, in order:
1. NEURON_RT_VISIBLE_CORES ("3", "0-1", "0,2-3"): on Kubernetes the Neuron device plugin sets it
   to the cores granted to this container, so those are the executor's cores.
2. `neuron-ls -j` (PATH, then /opt/aws/neuron/bin): every device's `neuroncore_ids`; tools that
   number cores per device are renumbered consecutively from each device's `nc_count`.
Exits 1 with a message on stderr when neither is available. Needs only Python 3's stdlib.
"""
import json
import os
import shutil
import subprocess
import sys

NEURON_LS_FALLBACK = "/opt/aws/neuron/bin/neuron-ls"


def expand(text):
    cores = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        cores += [str(i) for i in range(int(lo), int(hi if sep else lo) + 1)]
    return cores


def from_neuron_ls(text):
    devices = json.loads(text or "[]")
    if isinstance(devices, dict):
        devices = [devices]
    ids = [str(i) for d in devices for i in d.get("neuroncore_ids") or []]
    total = sum(int(d.get("nc_count") or len(d.get("neuroncore_ids") or [])) for d in devices)
    if ids and len(set(ids)) == len(ids) == total:
        return sorted(ids, key=int)
    return [str(i) for i in range(total)]


def main():
    visible = os.environ.get("NEURON_RT_VISIBLE_CORES", "").strip()
    if visible:
        addresses = expand(visible)
    else:
        tool = shutil.which("neuron-ls") or (NEURON_LS_FALLBACK if os.access(NEURON_LS_FALLBACK, os.X_OK) else None)
        if tool is None:
            print("get_neuroncores.py: neither NEURON_RT_VISIBLE_CORES nor neuron-ls is available; "
                  "is the Neuron driver and aws-neuronx-tools installed on this node?", file=sys.stderr)
            return 1
        done = subprocess.run([tool, "-j"], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"get_neuroncores.py: neuron-ls -j failed ({done.returncode}): {done.stderr.strip()}", file=sys.stderr)
            return 1
        addresses = from_neuron_ls(done.stdout)
    print(json.dumps({"name": "neuroncore", "addresses": addresses}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
