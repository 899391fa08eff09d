"""--scoring-resources: which resource profile the scoring stage gets, from the Spark version, the
backend, dynamic allocation and the conf's amounts (jobs/stage_resources.py). No Spark needed:
what Spark 4 then does with each profile is tests/test_stage_cluster.py's part."""
from __future__ import annotations

import pytest

from jobs.stage_resources import SCORING_PREFIX, ConfError, decide, executor_conf

CLUSTER = {"spark.master": "spark://127.0.0.1:7077"}
DYNAMIC = {**CLUSTER, "spark.dynamicAllocation.enabled": "true"}


def test_off_and_the_cpu_backend_keep_the_default_profile():
    for choice, backend in (("off", "tensorrt"), ("auto", "onnx"), ("auto", "torch")):
        chosen = decide(choice, backend, "4.0.2", DYNAMIC)
        assert chosen.mode == "default" and chosen.profile is None, (choice, backend)
    assert "--scoring-resources off" in decide("off", "neuronx", "4.0.2", DYNAMIC).reason
    assert "backend onnx runs on the CPU" in decide("auto", "onnx", "4.0.2", DYNAMIC).reason


def test_spark_3_5_is_explained_not_refused():
    chosen = decide("auto", "tensorrt", "3.5.9", DYNAMIC)
    assert chosen.mode == "default"
    assert chosen.reason.startswith("Spark 3.5.9 cannot give a DataFrame stage its own resource profile")


def test_local_mode_gets_no_profile():
    chosen = decide("auto", "tensorrt", "4.0.2", {**DYNAMIC, "spark.master": "local[2]"})
    assert chosen.mode == "default" and "local mode" in chosen.reason


@pytest.mark.parametrize("backend, resource",
                         [("tensorrt", "gpu"), ("neuronx", "neuroncore"), ("neuron", "neuroncore")])
def test_dynamic_allocation_gets_a_stage_profile_with_the_backends_amounts(backend, resource):
    chosen = decide("auto", backend, "4.0.2", DYNAMIC)
    assert chosen.mode == "stage" and chosen.resource == resource
    assert chosen.executor == {resource: {"amount": 1, "discoveryScript": "", "vendor": ""}}
    assert chosen.task == {resource: 1.0}
    assert chosen.reason.startswith(f"the scoring stage runs on executors of its own with 1 {resource} each")


def test_stage_amounts_come_from_the_scoring_keys_then_sparks_own():
    conf = {**DYNAMIC, "spark.executor.cores": "16", "spark.task.cpus": "4", "spark.executor.memory": "48g",
            "spark.executor.resource.gpu.amount": "1", "spark.task.resource.gpu.amount": "1",
            f"{SCORING_PREFIX}task.resource.gpu.amount": "0.25",
            f"{SCORING_PREFIX}executor.resource.gpu.discoveryScript": "/opt/get_gpus.sh",
            f"{SCORING_PREFIX}executor.resource.gpu.vendor": "nvidia.com",
            f"{SCORING_PREFIX}executor.cores": "12", f"{SCORING_PREFIX}executor.memoryOverhead": "6144m"}
    chosen = decide("auto", "tensorrt", "4.1.0", conf)
    assert chosen.executor == {"gpu": {"amount": 1, "discoveryScript": "/opt/get_gpus.sh", "vendor": "nvidia.com"},
                               "cores": 12, "memory": "48g", "memoryOverhead": "6144m"}
    assert chosen.task == {"gpu": 0.25, "cpus": 4}
    assert chosen.summary()["task"] == {"gpu": 0.25, "cpus": 4} and chosen.summary()["choice"] == "auto"
    assert chosen.reason.endswith(f"give it as {SCORING_PREFIX}executor.resource.gpu.amount instead")


def test_without_dynamic_allocation_only_executors_with_the_accelerator_take_a_task_profile():
    none = decide("auto", "tensorrt", "4.0.2", CLUSTER)
    assert none.mode == "default"
    assert "dynamic allocation is off" in none.reason and "request no gpu" in none.reason

    conf = {**CLUSTER, "spark.executor.resource.gpu.amount": "1", "spark.task.cpus": "2"}
    task = decide("auto", "tensorrt", "4.0.2", conf)
    assert task.mode == "task" and task.executor == {} and task.task == {"gpu": 1.0, "cpus": 2}
    assert "only a task-level profile" in task.reason and "other stages' tasks hold none" in task.reason

    same = decide("auto", "tensorrt", "4.0.2", {**conf, "spark.task.resource.gpu.amount": "1"})
    assert same.mode == "default" and "already gives every task 1 gpu" in same.reason

    shared = decide("auto", "tensorrt", "4.0.2", {**conf, "spark.task.resource.gpu.amount": "1",
                                                  f"{SCORING_PREFIX}task.resource.gpu.amount": "0.5"})
    assert shared.mode == "task" and shared.task["gpu"] == 0.5


@pytest.mark.parametrize("key, value, words", [
    ("task.resource.gpu.amount", "half", "must be a number"),
    ("executor.resource.gpu.amount", "0.5", "must be a whole number"),
    ("executor.cores", "0", "must be above 0"),
])
def test_a_bad_amount_is_one_clear_error(key, value, words):
    with pytest.raises(ConfError, match=words) as e:
        decide("auto", "tensorrt", "4.0.2", {**DYNAMIC, SCORING_PREFIX + key: value})
    assert SCORING_PREFIX + key in str(e.value)


def test_the_profile_holds_what_was_decided(spark):
    """Built through pyspark.resource: a task-only profile has no executor requests."""
    conf = {**DYNAMIC, "spark.executor.cores": "2", "spark.executor.memory": "1g", "spark.task.cpus": "2",
            "spark.executor.memoryOverhead": "512m"}
    profile = decide("auto", "neuronx", "4.0.2", conf).profile
    assert profile.taskResources["neuroncore"].amount == 1.0 and profile.taskResources["cpus"].amount == 2.0
    assert profile.executorResources["neuroncore"].amount == 1
    assert profile.executorResources["cores"].amount == 2 and profile.executorResources["memory"].amount == 1024
    assert profile.executorResources["memoryOverhead"].amount == 512
    task_only = decide("auto", "neuronx", "4.0.2", {**CLUSTER, "spark.executor.resource.neuroncore.amount": "2"})
    assert task_only.mode == "task" and task_only.profile.executorResources == {}


def test_an_amount_spark_refuses_stops_the_job_before_any_task(spark, capsys):
    """Spark checks a task amount as the profile is built (over 0.5 it must be whole): the job
    builds it before reading anything and exits 2 with Spark's reason."""
    from types import SimpleNamespace

    from jobs import runner, spark_io

    conf = {**DYNAMIC, f"{SCORING_PREFIX}task.resource.gpu.amount": "0.75"}
    with pytest.raises(spark_io.InputError, match="0.75 must be either <= 0.5, or a whole number"):
        runner.scoring_resources(SimpleNamespace(scoring_resources="auto"), SimpleNamespace(backend="tensorrt"),
                                 "4.0.2", conf)
    chosen = runner.scoring_resources(SimpleNamespace(scoring_resources="auto"), SimpleNamespace(backend="tensorrt"),
                                      "4.0.2", {**DYNAMIC, f"{SCORING_PREFIX}task.resource.gpu.amount": "0.5"})
    assert chosen.task == {"gpu": 0.5} and chosen.profile.taskResources["gpu"].amount == 0.5
    assert f"scoring resources: {chosen.reason}" in capsys.readouterr().err


def test_backend_auto_counts_the_scoring_executors_accelerator_only_where_they_get_one():
    from jobs.stage_resources import executor_hardware

    conf = {**DYNAMIC, f"{SCORING_PREFIX}executor.resource.gpu.amount": "1"}
    assert executor_hardware(executor_conf("auto", "4.0.2", conf)).count("cuda") == 1
    for choice, version, where in (("off", "4.0.2", conf), ("auto", "3.5.9", conf),
                                   ("auto", "4.0.2", {**conf, "spark.dynamicAllocation.enabled": "false"})):
        assert executor_conf(choice, version, where) is where  # Spark's own requests, unchanged
        assert executor_hardware(where).count("cuda") == 0
    both = {**conf, "spark.executor.resource.gpu.amount": "2"}
    assert executor_conf("auto", "4.0.2", both)["spark.executor.resource.gpu.amount"] == "2"
