"""The duplicates job on a real standalone Spark cluster: resource-scheduled executors and faults.

One master and two workers (1 core, 1 GiB each) on 127.0.0.1. Each worker advertises one `gpu`
and one `neuroncore` address through a discovery script, as an accelerator host does; the job
is launched with `spark-submit` and asks for one address per executor and per task. The ONNX
Runtime CPU engine stands in for the device: these tests prove Spark's scheduling and the
scorer's plumbing of the addresses (which task got which address, which worker loaded what),
not a real CUDA or Neuron binding (the `gpu` / `neuron` hardware tests do that).
"""
from __future__ import annotations

import collections
import re
import shutil
import time

import numpy as np
import pandas as pd
import pytest

from emr.profiles import SPOT_DECOMMISSION
from tests.jobhelpers import pairs_parquet, read_partition
from tests.standalone import StandaloneCluster, alive, descendants, listening_addresses

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900),
              pytest.mark.skipif(shutil.which("java") is None, reason="needs a Java runtime for Spark")]

ADDRESSES = [["0"], ["1"]]  # per worker: one device each, as on a host whose devices are split between workers
PARTITIONS = 6
RUN_DATE = "2026-07-01"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(tmp_path_factory.mktemp("cluster"), resources={"gpu": ADDRESSES, "neuroncore": ADDRESSES},
                           cores=1, memory="1g") as c:
        yield c
        started = c.pids()
    assert not [p for p in started if alive(p)], "cluster processes outlived stop()"


@pytest.fixture(scope="module")
def model(compile_artifact):
    return compile_artifact("pair-classification")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    return pairs_parquet(tmp_path_factory, 3000, 11, "cluster-in")


def run_job(cluster, model, pairs, out, resource: str, name: str, fault: str | None = None, fault_dir=None,
            watch=None, args: tuple = (), more_conf: dict | None = None):
    """spark-submit the duplicates job; `fault` goes to the executors and to the driver (its
    `kill_executor_at` steps), each firing once, marked in `fault_dir`."""
    path, _ = pairs
    env = None
    conf = {
        f"spark.executor.resource.{resource}.amount": "1",
        f"spark.task.resource.{resource}.amount": "1",
        # start scoring only once both executors are up, so both workers take tasks
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
        "spark.task.maxFailures": "4",
        **(more_conf or {}),
    }
    if fault:
        conf["spark.executorEnv.ACCEL_SCORING_FAULT"] = fault
        conf["spark.executorEnv.ACCEL_SCORING_FAULT_ONCE_DIR"] = str(fault_dir)  # markers: each fault fires once
        env = {"ACCEL_SCORING_FAULT": fault, "ACCEL_SCORING_FAULT_ONCE_DIR": str(fault_dir)}
    result = cluster.submit("jobs/duplicates.py", [
        "--input", path, "--output", out, "--model", model, "--run-date", RUN_DATE,
        "--num-partitions", PARTITIONS, "--arrow-batch-rows", 200, "--batch-tokens", 4096, *args,
    ], conf=conf, env=env, name=name, on_start=watch)
    print(f"{name}: rc={result.rc} in {result.seconds:.1f}s")
    assert result.rc == 0 and result.summary, (
        f"{name} exited {result.rc}\n--- driver ---\n{result.stderr[-6000:]}\n{cluster.describe_logs(20)}")
    return result


def assert_once_each(result, df, out):
    res = read_partition(out, RUN_DATE)
    s = result.summary
    assert s["rows_in"] == s["rows_out"] == len(res) == len(df)
    assert res.pair_id.is_unique and set(res.pair_id) == set(df.pair_id)  # 0 rows lost, 0 rows doubled
    assert (res.status == "ok").all()
    return res.set_index("pair_id").sort_index()


def check_resource_plumbing(summary, resource: str) -> dict[str, set[int]]:
    """Every task got exactly one address of `resource` from Spark, a Python worker kept one
    address for its life and loaded the engine at most once. Returns address -> worker pids."""
    advertised = {a for per_worker in ADDRESSES for a in per_worker}
    pids_by_address: dict[str, set[int]] = collections.defaultdict(set)
    addresses_by_pid: dict[int, set[str]] = collections.defaultdict(set)
    loads = collections.Counter()
    for t in summary["tasks"]:
        assert set(t["resources"]) == {resource}, t  # only what the job asked for
        (address,) = t["resources"][resource]  # exactly one address per task
        assert address in advertised, t
        assert t["device"] == "cpu", t  # the CPU engine stands in for the device
        pids_by_address[address].add(t["pid"])
        addresses_by_pid[t["pid"]].add(address)
        loads[t["pid"]] += int(t["loaded"])
    assert {p: a for p, a in addresses_by_pid.items() if len(a) != 1} == {}  # a worker never changes device
    assert max(loads.values()) == 1, loads  # and never loads its engine twice
    assert summary["engine_loads"] == sum(loads.values())
    assert {t["partition"] for t in summary["tasks"]} == set(range(PARTITIONS))
    return pids_by_address


@pytest.fixture(scope="module")
def clean_gpu_run(cluster, model, pairs, tmp_path_factory):
    """The reference: no faults, one `gpu` address per executor and per task."""
    out = tmp_path_factory.mktemp("gpu-out")
    seen: set[str] = set()

    def watch(proc):  # while the job runs, every listening socket of every process is on 127.0.0.1
        while proc.poll() is None:
            seen.update(listening_addresses(cluster.pids() + [proc.pid] + descendants(proc.pid)))
            time.sleep(1.0)

    result = run_job(cluster, model, pairs, out, "gpu", "gpu-clean", watch=watch)
    return result, out, seen


def test_each_task_runs_on_the_gpu_address_spark_gave_it(clean_gpu_run, pairs):
    result, out, listening = clean_gpu_run
    assert_once_each(result, pairs[1], out)
    pids_by_address = check_resource_plumbing(result.summary, "gpu")
    # Both workers scored; each device was used by exactly one Python worker, which loaded the
    # engine exactly once: no address was shared by two workers, nothing was loaded per task.
    assert set(pids_by_address) == {"0", "1"}
    assert all(len(pids) == 1 for pids in pids_by_address.values()), pids_by_address
    assert result.summary["engine_loads"] == 2
    assert all(t["attempt"] == 0 for t in result.summary["tasks"])
    assert listening == {"127.0.0.1"}


def test_killed_workers_executors_and_exceptions_lose_and_double_nothing(cluster, model, pairs, clean_gpu_run,
                                                                         tmp_path_factory):
    """On `neuroncore` addresses, three faults in one job, each on the first attempt of its own
    partition: an exception, a SIGKILLed Python worker, a SIGKILLed executor JVM (mid-task,
    after the task handed Spark some rows). The job finishes, every row once, scores as clean."""
    faults = {1: "raise_once", 3: "kill_worker", 5: "kill_executor"}
    out, fired = tmp_path_factory.mktemp("faults-out"), tmp_path_factory.mktemp("faults-fired")
    result = run_job(cluster, model, pairs, out, "neuroncore", "neuroncore-faults",
                     fault=",".join(f"{kind}:{p}" for p, kind in faults.items()), fault_dir=fired)
    assert sorted(p.name for p in fired.iterdir()) == sorted(f"{kind}-{p}" for p, kind in faults.items())
    res = assert_once_each(result, pairs[1], out)
    clean = read_partition(clean_gpu_run[1], RUN_DATE).set_index("pair_id").sort_index()
    np.testing.assert_array_equal(res.score.to_numpy(), clean.score.to_numpy())
    pd.testing.assert_frame_equal(res, clean)
    check_resource_plumbing(result.summary, "neuroncore")
    lost = first_attempt_failures(result.stderr)  # how Spark saw each fault
    assert "injected fault (ACCEL_SCORING_FAULT=raise_once:1)" in lost[1]
    # How a dead Python worker or executor shows depends on who notices first; these cover both.
    assert any(s in lost[3] for s in ("Python worker exited unexpectedly", "crashed", "Connection reset",
                                      "EOFException", "Broken pipe")), lost[3]
    assert "ExecutorLostFailure" in lost[5], lost[5]
    print(f"faults injected: {faults}; rows lost: 0, rows doubled: 0; "
          f"first attempts lost to: { {p: r.splitlines()[0][:120] for p, r in lost.items()} }")


def first_attempt_failures(driver_log: str) -> dict[int, str]:
    """partition -> the reason (with its stack trace) the driver logged for its first attempt's loss."""
    lost = {}
    pattern = r"WARN TaskSetManager: Lost task (\d+)\.0 in stage \S+ \(TID \d+\) \([^)]*\): (.*?)\n(?=\d\d/\d\d/\d\d )"
    for m in re.finditer(pattern, driver_log, re.S):
        lost.setdefault(int(m.group(1)), m.group(2))
    return lost


def cache_entries(cache) -> pd.DataFrame:
    """The entries of the cache's committed batches (jobs/result_cache.py), by key."""
    batches = sorted(cache.glob("digest=*/batches/*/*.parquet"))
    return pd.concat([pd.read_parquet(b) for b in batches]).set_index("_key").sort_index()


def test_executors_lost_in_the_run_level_plan_and_the_cache_commit_lose_and_double_nothing(
        cluster, model, pairs, clean_gpu_run, tmp_path_factory):
    """With --cache (the run-level plan, jobs/distinct_plan.py) on `gpu` addresses, three executor
    JVMs SIGKILLed in one run: one once the keyed rows and distinct pairs are persisted on the
    executors' disks (before scoring), one mid-task while scoring the distinct pairs, one as the
    cache's new batch is written (after the output commit). The run exits 0 with every row once,
    scored as the clean run; the cache holds each key once, and a rerun served entirely from it
    writes the same rows."""
    tmp = tmp_path_factory.mktemp("run-level")
    fired = tmp / "fired"
    fired.mkdir()
    steps = "kill_executor_at:3,kill_executor:2,kill_executor_at:4"  # udfs/faults.py: the driver steps
    faulty = run_job(cluster, model, pairs, tmp / "out", "gpu", "cached-faults", fault=steps, fault_dir=fired,
                     args=("--cache", tmp / "cache"))
    assert sorted(p.name for p in fired.iterdir()) == ["kill_executor-2", "kill_executor_at-3", "kill_executor_at-4"]
    assert faulty.stderr.count("Lost executor") >= 3, faulty.stderr[-4000:]
    res = assert_once_each(faulty, pairs[1], tmp / "out")
    clean = read_partition(clean_gpu_run[1], RUN_DATE).set_index("pair_id").sort_index()
    np.testing.assert_allclose(res.score.to_numpy(), clean.score.to_numpy(), rtol=0, atol=1e-6)  # another plan
    assert (res.is_duplicate == clean.is_duplicate).all()
    entries = cache_entries(tmp / "cache")
    assert entries.index.is_unique and len(entries) == faulty.summary["cache"]["entries_added"] == len(pairs[1])
    rerun = run_job(cluster, model, pairs, tmp / "rerun-out", "gpu", "cached-rerun", args=("--cache", tmp / "cache"))
    assert rerun.summary["cache"]["hits"] == len(pairs[1]) and rerun.summary["cache"]["texts_encoded"] == 0
    assert rerun.summary["engine_loads"] == 0
    pd.testing.assert_frame_equal(assert_once_each(rerun, pairs[1], tmp / "rerun-out"), res)  # the cache is whole
    print(f"run-level plan: executors killed at {steps}; rows lost 0, doubled 0; "
          f"{len(entries)} cache entries; faults {faulty.seconds:.0f} s, rerun {rerun.seconds:.0f} s")


def test_a_worker_decommissioned_mid_scoring_leaves_every_row_once(model, pairs, clean_gpu_run, tmp_path_factory):
    """A cluster of its own (a decommissioned worker takes no more executors): mid-scoring of the
    run-level plan (`--dedup run`, whose keyed rows and distinct pairs are persisted on the
    executors' disks), worker 0 gets SIGPWR, as a Spot interruption handler sends it. Its executor
    is decommissioned and migrates its persisted blocks to the other executor; the run finishes
    with every row once, scored as the clean run, and the summary names the executor that left."""
    root = tmp_path_factory.mktemp("decommission")
    fired = root / "fired"
    fired.mkdir()
    with StandaloneCluster(root / "cluster", resources={"gpu": ADDRESSES}, cores=1, memory="1g",
                           worker_conf={"spark.decommission.enabled": "true"}) as cluster:
        def decommission_once_scoring(proc):
            log = root / "cluster" / "decommissioned.log"  # the driver's stderr (tests/standalone.py submit)
            deadline = time.monotonic() + 240
            while proc.poll() is None and time.monotonic() < deadline:
                if "distinct pairs" in log.read_text(errors="replace"):  # the start line: the units are persisted
                    time.sleep(2.0)
                    cluster.decommission_worker(0)
                    return
                time.sleep(0.2)
            raise AssertionError(f"the run never started scoring (driver exit {proc.poll()})")

        result = run_job(cluster, model, pairs, root / "out", "gpu", "decommissioned", fault="slow_ms:100",
                         fault_dir=fired, watch=decommission_once_scoring, args=("--dedup", "run"),
                         more_conf=SPOT_DECOMMISSION)  # what emr/ sets with Spot task nodes
        worker_log = cluster.worker_log(0)
        executor_logs = {p: p.read_text(errors="replace") for p in (root / "cluster").rglob("stderr")}
    res = assert_once_each(result, pairs[1], root / "out")
    clean = read_partition(clean_gpu_run[1], RUN_DATE).set_index("pair_id").sort_index()
    np.testing.assert_allclose(res.score.to_numpy(), clean.score.to_numpy(), rtol=0, atol=1e-6)
    assert (res.is_duplicate == clean.is_duplicate).all()
    (left,) = result.summary["executors_left"]  # worker 0's one executor
    assert left["decommissioned"] and left["host"] == "127.0.0.1", left
    assert "executors 1 left during the run: " in result.stderr and "(decommissioned" in result.stderr
    assert "Decommission worker" in worker_log, worker_log[-3000:]
    (decommissioned,) = [text for text in executor_logs.values() if "Decommission executor" in text]
    migrated = re.findall(r"Block (rdd_\d+_\d+) migrated successfully", decommissioned)
    assert migrated, decommissioned[-3000:]  # its persisted blocks moved to the other executor
    print(f"decommissioned: {left}; blocks migrated: {migrated}; run {result.seconds:.0f} s")
