"""--scoring-resources auto on a real Spark 4 standalone cluster: only the scoring stage holds a
NeuronCore.

One worker advertises a `neuroncore` address and has 1 core; the other advertises none and has
2. Dynamic allocation with shuffle tracking is on and the job's default executors take 2 cores,
so they fit only on the worker without the accelerator, while the scoring profile asks for 1 core
and 1 NeuronCore (`spark.accelScoring.scoring.executor.cores`): Spark must start executors of that
profile on the other worker. The job runs `--backend neuronx` with the torch_neuronx test double
(tests/doubles/) on the executors' PYTHONPATH, so the engine runs on the CPU while Spark's
resource scheduler and the engine's core pinning run for real.

Without dynamic allocation the job falls back: a task-level profile where the default executors
have the NeuronCore, no profile where they do not. Spark's event log says which executor ran each
task of each stage and under which resource profile; each worker's work folder says which
executors it started. Needs pyspark 4.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyspark
import pytest

from jobs.stage_resources import FIRST_SPARK, SCORING_PREFIX
from tests.jobhelpers import pairs_frame, read_partition
from tests.neuron_doubles import DOUBLES, compile_neuron
from tests.standalone import REPO, StandaloneCluster, alive

SPARK = tuple(int(p) for p in pyspark.__version__.split(".")[:2])
pytestmark = [
    pytest.mark.cluster, pytest.mark.timeout(900),
    pytest.mark.skipif(shutil.which("java") is None, reason="needs a Java runtime for Spark"),
    pytest.mark.skipif(SPARK < FIRST_SPARK, reason=f"a DataFrame stage takes a resource profile from Spark 4.0; "
                                                   f"this is pyspark {pyspark.__version__}"),
]

ACCEL, PLAIN = 0, 1  # worker indices
RUN_DATE = "2026-07-02"
PARTITIONS = 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(tmp_path_factory.mktemp("stage-cluster"), resources={"neuroncore": [["0"], []]},
                           cores=[1, 2], memory="1g") as c:
        yield c
        started = c.pids()
    assert not [p for p in started if alive(p)], "cluster processes outlived stop()"


@pytest.fixture(scope="module")
def model(tiny_models, tmp_path_factory):
    out = tmp_path_factory.mktemp("stage-model") / "pairs-neuronx"
    compile_neuron(tiny_models, out, "neuronx")
    return out


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    df = pairs_frame(400, seed=5)
    path = tmp_path_factory.mktemp("stage-in") / "pairs.parquet"
    df.to_parquet(path)
    return path, df


def run_job(cluster, model, pairs, tmp_path, plan_flags: list, **settings: str):
    """The duplicates job on the cluster with dynamic allocation, unless `settings` (Spark conf,
    dots as given) say otherwise; returns its result, output, event log and the double's records."""
    events, imports = tmp_path / "events", tmp_path / "neuron-imports.jsonl"
    events.mkdir()
    conf = {
        "spark.executor.cores": "2", "spark.task.cpus": "1", "spark.executor.memory": "512m",
        f"{SCORING_PREFIX}executor.cores": "1",
        "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.eventLog.enabled": "true", "spark.eventLog.dir": str(events),
        # one plain JSON-lines file: Spark 4 rolls and compresses it by default
        "spark.eventLog.rolling.enabled": "false", "spark.eventLog.compress": "false",
        "spark.executorEnv.PYTHONPATH": os.pathsep.join((str(DOUBLES), str(REPO))),
        "spark.executorEnv.NEURON_DOUBLE_LOG": str(imports),
        **settings,
    }
    out = tmp_path / "out"
    result = cluster.submit("jobs/duplicates.py", [
        "--input", pairs[0], "--output", out, "--model", model, "--run-date", RUN_DATE, "--backend", "neuronx",
        "--arrow-batch-rows", 100, *plan_flags], conf=conf, name=tmp_path.name, timeout=600)
    assert result.rc == 0 and result.summary, (
        f"exited {result.rc}\n--- driver ---\n{result.stderr[-6000:]}\n{cluster.describe_logs(20)}")
    (log,) = events.iterdir()
    return result, out, [json.loads(line) for line in log.read_text().splitlines()], imports


def executors_by_worker(cluster, app_id: str) -> dict[str, int]:
    """executor id -> the worker that started it (its work folder holds one folder per executor)."""
    return {d.name: i for i in range(cluster.workers)
            for d in (cluster.root / f"worker-{i}" / "work" / app_id).glob("*") if d.is_dir()}


def stage_runs(events: list[dict]) -> tuple[dict, dict, dict]:
    """From Spark's event log: stage id -> (resource profile id, RDD names), stage id -> executor ids
    of its successful tasks, executor id -> (resource profile id, resources)."""
    stages, tasks, executors = {}, {}, {}
    for e in events:
        if e["Event"] == "SparkListenerStageSubmitted":
            info = e["Stage Info"]
            stages[info["Stage ID"]] = (info["Resource Profile Id"], [r["Name"] for r in info["RDD Info"]])
        elif e["Event"] == "SparkListenerTaskEnd" and e["Task End Reason"]["Reason"] == "Success":
            tasks.setdefault(e["Stage ID"], []).append(e["Task Info"]["Executor ID"])
        elif e["Event"] == "SparkListenerExecutorAdded":
            info = e["Executor Info"]
            executors[e["Executor ID"]] = (info["Resource Profile Id"], info.get("Resources") or {})
    return stages, tasks, executors


@pytest.mark.parametrize("plan_flags", [["--dedup", "run"], ["--dedup", "batch", "--num-partitions", PARTITIONS]],
                         ids=["distinct-plan", "per-batch-plan"])
def test_only_the_scoring_stage_runs_on_the_neuroncore_worker(cluster, model, pairs, tmp_path, plan_flags):
    result, out, events, imports = run_job(cluster, model, pairs, tmp_path, plan_flags)
    s, df = result.summary, pairs[1]
    chosen = s["scoring_resources"]
    assert chosen["mode"] == "stage" and chosen["resource"] == "neuroncore", chosen
    assert chosen["executor"] == {"neuroncore": {"amount": 1, "discoveryScript": "", "vendor": ""}, "cores": 1,
                                  "memory": "512m"}
    assert f"scoring resources: {chosen['reason']}" in result.stderr

    # nothing lost or doubled
    res = read_partition(out, RUN_DATE)
    assert s["rows_in"] == s["rows_out"] == s["ok"] == len(res) == len(df)
    assert res.pair_id.is_unique and set(res.pair_id) == set(df.pair_id)

    # every scoring task got the NeuronCore and pinned its engine to it before the runtime loaded
    assert s["tasks"] and all(t["resources"] == {"neuroncore": ["0"]} and t["device"] == "neuron:0"
                              for t in s["tasks"]), s["tasks"]
    pinned = [json.loads(line) for line in imports.read_text().splitlines()]
    assert pinned and all(r["NEURON_RT_VISIBLE_CORES"] == "0" for r in pinned)
    assert {r["pid"] for r in pinned} == {t["pid"] for t in s["tasks"]}

    stages, tasks, executors = stage_runs(events)
    where = executors_by_worker(cluster, s["spark_application_id"])
    scoring = {sid for sid, (rp, _) in stages.items() if rp != 0}
    assert scoring, stages
    for sid in scoring:  # scoring ran only on executors of its profile, on the NeuronCore worker
        assert tasks[sid] and {where[x] for x in tasks[sid]} == {ACCEL}, (sid, tasks[sid], where)
        assert all(executors[x] == (stages[sid][0], {"neuroncore": {"name": "neuroncore", "addresses": ["0"]}})
                   for x in tasks[sid]), executors
    other = {x for sid, xs in tasks.items() if sid not in scoring for x in xs}
    assert other and {where[x] for x in other} == {PLAIN}  # every other stage: the default executors
    assert all(executors[x] == (0, {}) for x in other), executors
    reads = [sid for sid, (rp, rdds) in stages.items()
             if rp == 0 and sid in tasks and any("FileScan" in n for n in rdds)]
    assert reads, stages  # the input was read by an executor without the accelerator
    print(f"{plan_flags}: scoring stages {sorted(scoring)} on worker {ACCEL} executors "
          f"{sorted({x for sid in scoring for x in tasks[sid]})}; other stages on worker {PLAIN} executors "
          f"{sorted(other)}; {result.seconds:.1f}s")


def test_without_dynamic_allocation_the_job_says_why_and_scores_with_the_default_profile(cluster, model, pairs,
                                                                                         tmp_path):
    """Spark 4 would fail the scoring stage on a profile with executor requests here, and the
    default executors have no NeuronCore for a task-level one: the job attaches no profile."""
    result, out, events, _ = run_job(cluster, model, pairs, tmp_path, ["--dedup", "run"],
                                     **{"spark.dynamicAllocation.enabled": "false"})
    chosen = result.summary["scoring_resources"]
    assert chosen["mode"] == "default" and chosen["reason"].startswith("dynamic allocation is off"), chosen
    assert f"scoring resources: {chosen['reason']}" in result.stderr
    assert result.summary["rows_out"] == result.summary["ok"] == len(pairs[1])
    stages, _, _ = stage_runs(events)
    assert {rp for rp, _ in stages.values()} == {0}


def test_without_dynamic_allocation_a_task_profile_runs_on_executors_that_have_the_core(cluster, model, pairs,
                                                                                          tmp_path):
    """The default executors request the NeuronCore but their tasks do not: Spark 4 takes the
    task-level profile, so only scoring tasks are handed the core."""
    result, out, events, imports = run_job(cluster, model, pairs, tmp_path, ["--dedup", "run"], **{
        "spark.dynamicAllocation.enabled": "false", "spark.executor.cores": "1",
        "spark.executor.resource.neuroncore.amount": "1"})
    s = result.summary
    chosen = s["scoring_resources"]
    assert chosen["mode"] == "task" and chosen["executor"] == {} and chosen["task"] == {"neuroncore": 1.0, "cpus": 1}
    assert s["rows_out"] == s["ok"] == len(pairs[1])
    assert s["tasks"] and all(t["resources"] == {"neuroncore": ["0"]} and t["device"] == "neuron:0" for t in s["tasks"])
    stages, tasks, executors = stage_runs(events)
    scoring = {sid for sid, (rp, _) in stages.items() if rp != 0}
    assert scoring and all(tasks.get(sid) for sid in scoring), stages
    ran = {x for xs in tasks.values() for x in xs}
    assert ran and all(executors[x] == (0, {"neuroncore": {"name": "neuroncore", "addresses": ["0"]}}) for x in ran)
