#!/usr/bin/env python3
"""Spark resource discovery script for "neuroncore" (spark.{executor,worker}.resource.neuroncore.discoveryScript).

Prints Spark's ResourceInformation JSON: {"name": "neuroncore", "addresses": ["0", "1"]}.

Where the cores come from, in order:
1. NEURON_RT_VISIBLE_CORES ("3", "0-1", "0,2-3"): on Kubernetes the Neuron device plugin sets it
   to the cores granted to this container, so those are the executor's cores.
   With the Neuron scheduler extension the device plugin sets it (the extension's documented flow);
   without the extension nothing promises it.
2. neuron-ls (PATH, then /opt/aws/neuron/bin) as JSON: `--output-format json` (Neuron 2.34 on, an
   object with instance-wide fields and a list of devices), else `-j` (older tools, a list of
   devices): every device's `neuroncore_ids`; tools that number cores per device are renumbered
   consecutively from each device's `nc_count`.
   A Kubernetes container sees its whole Neuron device (two cores on inf2) although it was granted
   one core, so when ACCEL_SCORING_EXECUTOR_NEURONCORES (set by `python -m emr eks-submit`) says
   the executor asked for fewer cores than it sees, the script refuses: guessing would let two
   executors on one device both take core 0. A standalone Spark worker (the variable unset) owns
   the machine and reports every core.
Exits 1 with a message on stderr when no answer is certain. Needs only Python 3's stdlib.
"""
import json
import os
import shutil
import subprocess
import sys

NEURON_LS_FALLBACK = "/opt/aws/neuron/bin/neuron-ls"
EXECUTOR_NEURONCORES = "ACCEL_SCORING_EXECUTOR_NEURONCORES"  # emr/eks.py EXECUTOR_NEURONCORES_ENV
NEURON_LS_JSON_FLAGS = (["--output-format", "json"], ["-j"])  # 2.34 replaced -j


def expand(text):
    cores = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        cores += [str(i) for i in range(int(lo), int(hi if sep else lo) + 1)]
    return cores


def is_device(d):
    return isinstance(d, dict) and ("nc_count" in d or "neuroncore_ids" in d)


def devices_in(report):
    """The device list of either format; the new one's field names are undocumented, so by content."""
    if isinstance(report, list):
        return report
    if not isinstance(report, dict):
        raise ValueError("neuron-ls printed neither a list nor an object of devices")
    if is_device(report):
        return [report]
    lists = [v for v in report.values() if isinstance(v, list) and v and all(is_device(d) for d in v)]
    return lists[0] if lists else []


def from_neuron_ls(text):
    devices = devices_in(json.loads(text or "[]"))
    ids = [str(i) for d in devices for i in d.get("neuroncore_ids") or []]
    total = sum(int(d.get("nc_count") or len(d.get("neuroncore_ids") or [])) for d in devices)
    if ids and len(set(ids)) == len(ids) == total:
        return sorted(ids, key=int)
    return [str(i) for i in range(total)]


def run_neuron_ls(tool):
    """Core ids from the first of NEURON_LS_JSON_FLAGS that gives JSON; RuntimeError naming each failure."""
    failures = []
    for flags in NEURON_LS_JSON_FLAGS:
        done = subprocess.run([tool, *flags], capture_output=True, text=True, check=False)
        if done.returncode == 0:
            try:
                return from_neuron_ls(done.stdout)
            except ValueError as e:  # a tool that ignored the flag and printed its table
                failures.append(f"neuron-ls {' '.join(flags)} printed no JSON ({e})")
                continue
        failures.append(f"neuron-ls {' '.join(flags)} failed ({done.returncode}): {done.stderr.strip()}")
    raise RuntimeError("; ".join(failures))


AMBIGUOUS = ("this executor asked for {asked} NeuronCore(s) but sees {seen} ({ids}) and "
             "NEURON_RT_VISIBLE_CORES is unset, so nothing says which one is its own; two executors on "
             "one device would take the same core. Install the Neuron scheduler extension, which makes "
             "the device plugin set NEURON_RT_VISIBLE_CORES (emr/README.md, Running on Inferentia)")


def cores_from_tool():
    """(addresses, None) from neuron-ls, or (None, why not)."""
    tool = shutil.which("neuron-ls") or (NEURON_LS_FALLBACK if os.access(NEURON_LS_FALLBACK, os.X_OK) else None)
    if tool is None:
        return None, ("neither NEURON_RT_VISIBLE_CORES nor neuron-ls is available; "
                      "is the Neuron driver and aws-neuronx-tools installed on this node?")
    try:
        addresses = run_neuron_ls(tool)
    except RuntimeError as e:
        return None, (f"{e} (with the Neuron scheduler extension NEURON_RT_VISIBLE_CORES is set and "
                      "neuron-ls is not needed)")
    asked = os.environ.get(EXECUTOR_NEURONCORES, "").strip()
    if asked and len(addresses) > int(asked):
        return None, AMBIGUOUS.format(asked=asked, seen=len(addresses), ids=",".join(addresses))
    return addresses, None


def main():
    visible = os.environ.get("NEURON_RT_VISIBLE_CORES", "").strip()
    addresses, problem = (expand(visible), None) if visible else cores_from_tool()
    if problem:
        print(f"get_neuroncores.py: {problem}", file=sys.stderr)
        return 1
    print(json.dumps({"name": "neuroncore", "addresses": addresses}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
