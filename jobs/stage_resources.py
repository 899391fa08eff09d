"""Stage-level scheduling (`--scoring-resources`): only the scoring stage asks for the accelerator.

Reading, checking, the distinct and the join back, and writing need no GPU or NeuronCore, yet
`spark.task.resource.<r>.amount` makes every task of every stage hold one. From Spark 4.0 a
DataFrame stage can carry its own ResourceProfile (`DataFrame.mapInArrow(..., profile=)`), so
the job puts the accelerator on the scoring stage's profile alone. What Spark 4.0 accepts (its
messages; measured on 4.0.2 standalone and local, README.md "Stage-level scheduling"):

- with dynamic allocation (standalone, YARN, Kubernetes): a full profile, executor and task
  requests, for which Spark starts executors of its own; the other stages run on the default
  executors, which need no accelerator at all;
- without it: only a task-level profile (task requests alone), which runs on the default
  executors, so those must already have the accelerator (`spark.executor.resource.<r>.amount`);
  a profile with executor requests fails the stage;
- local mode: no profile at all.

The profile's amounts: `spark.accelScoring.scoring.<key>` when set (for the scoring stage only,
so the default executors need not carry the accelerator), else Spark's own `spark.<key>`, else
the backend's (engines/base.py spark_executor_amount, spark_task_amount), for the keys
executor.resource.<r>.amount/.discoveryScript/.vendor, task.resource.<r>.amount,
executor.cores, executor.memory, executor.memoryOverhead and task.cpus; those four only when set.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Mapping

CHOICES = ("auto", "off")
SCORING_PREFIX = "spark.accelScoring.scoring."
FIRST_SPARK = (4, 0)  # DataFrame.mapInArrow takes profile= from Spark 4.0


class ConfError(ValueError):
    """A Spark conf value the scoring profile cannot use (not a number)."""


@dataclasses.dataclass(frozen=True)
class ScoringResources:
    """What the scoring stage runs with: `stage` (a profile with executor and task requests, on
    executors of its own), `task` (task requests on the default executors) or `default` (no
    profile); `reason` says why, in one line."""

    choice: str
    mode: str
    reason: str
    resource: str | None = None
    executor: dict = dataclasses.field(default_factory=dict)  # cores, memory(Overhead), <r>: {amount, discoveryScript, vendor}
    task: dict = dataclasses.field(default_factory=dict)  # cpus, <r>: amount

    @functools.cached_property
    def profile(self):
        """The pyspark ResourceProfile for the scoring stage (None for `default`), built once; Spark
        checks the amounts as it builds it (a task amount over 0.5 must be whole)."""
        if self.mode == "default":
            return None
        from pyspark.resource import ExecutorResourceRequests, ResourceProfileBuilder, TaskResourceRequests

        builder = ResourceProfileBuilder()
        if self.mode == "stage":
            ereqs = ExecutorResourceRequests()
            if "cores" in self.executor:
                ereqs.cores(self.executor["cores"])
            if "memory" in self.executor:
                ereqs.memory(self.executor["memory"])
            if "memoryOverhead" in self.executor:
                ereqs.memoryOverhead(self.executor["memoryOverhead"])
            r = self.executor[self.resource]
            ereqs.resource(self.resource, r["amount"], r["discoveryScript"], r["vendor"])
            builder.require(ereqs)
        treqs = TaskResourceRequests().resource(self.resource, self.task[self.resource])
        if "cpus" in self.task:
            treqs.cpus(self.task["cpus"])
        return builder.require(treqs).build

    def map_in_arrow(self, df, func, schema):
        """`df.mapInArrow(func, schema)` with the scoring profile, the one call site both plans use
        (Spark 3.5's mapInArrow has no `profile` parameter at all)."""
        profile = self.profile
        if profile is None:
            return df.mapInArrow(func, schema)
        return df.mapInArrow(func, schema, profile=profile)

    def summary(self) -> dict:
        return dataclasses.asdict(self)


def decide(choice: str, backend: str, spark_version: str, conf: Mapping[str, str]) -> ScoringResources:
    """The scoring stage's resources for `--scoring-resources choice` on this Spark application
    (`conf`: its configuration, `spark.master` included)."""
    def default(reason: str) -> ScoringResources:
        return ScoringResources(choice, "default", reason)

    if choice == "off":
        return default("--scoring-resources off: every stage runs with the default resource profile")
    from engines import registry  # here: emr/profiles.py (Airflow venv, no numpy) imports SCORING_PREFIX

    engine = registry.engine_class(backend)
    resource = engine.spark_resource
    if not resource:
        return default(f"backend {backend} runs on the CPU: no accelerator to keep to the scoring stage")
    refused = _no_profiles(spark_version, conf)
    if refused:
        return default(refused)
    task = {resource: _number(conf, f"task.resource.{resource}.amount", engine.spark_task_amount, float)}
    cpus = _setting(conf, "task.cpus")
    if cpus is not None:
        task["cpus"] = _number(conf, "task.cpus", 1, int)
    if _dynamic(conf):
        executor = {resource: {
            "amount": _number(conf, f"executor.resource.{resource}.amount", engine.spark_executor_amount, int),
            "discoveryScript": _setting(conf, f"executor.resource.{resource}.discoveryScript") or "",
            "vendor": _setting(conf, f"executor.resource.{resource}.vendor") or ""}}
        if _setting(conf, "executor.cores") is not None:
            executor["cores"] = _number(conf, "executor.cores", 1, int)
        for key in ("memory", "memoryOverhead"):  # YARN kills a GPU executor that outgrows its overhead
            if _setting(conf, f"executor.{key}") is not None:
                executor[key] = _setting(conf, f"executor.{key}")
        reason = (f"the scoring stage runs on executors of its own with {executor[resource]['amount']} {resource} "
                  f"each, {_amount(task[resource])} per task; other stages use the default executors")
        if conf.get(f"spark.executor.resource.{resource}.amount"):
            reason += (f", which also request {resource} (spark.executor.resource.{resource}.amount) that no other "
                       f"stage uses: give it as {SCORING_PREFIX}executor.resource.{resource}.amount instead")
        return ScoringResources(choice, "stage", reason, resource, executor, task)
    default_executors = conf.get(f"spark.executor.resource.{resource}.amount")
    if not default_executors:
        return default(
            f"dynamic allocation is off, and without it Spark 4 runs only a task-level profile, on the default "
            f"executors, which request no {resource} (spark.executor.resource.{resource}.amount): scoring runs with "
            f"the default profile; set spark.dynamicAllocation.enabled=true for executors of its own")
    if conf.get(f"spark.task.resource.{resource}.amount") and not any(k.startswith(SCORING_PREFIX + "task.")
                                                                       for k in conf):
        return default(f"dynamic allocation is off and the default profile already gives every task "
                       f"{_amount(task[resource])} {resource}: nothing for a task-level profile to change")
    others = conf.get(f"spark.task.resource.{resource}.amount")
    return ScoringResources(choice, "task", (
        f"dynamic allocation is off, so Spark 4 takes only a task-level profile: each scoring task asks for "
        f"{_amount(task[resource])} {resource} on the default executors ({default_executors} each); "
        f"other stages' tasks hold {others or 'none'}"), resource, {}, task)


def executor_conf(choice: str, spark_version: str, conf: Mapping[str, str]) -> Mapping[str, str]:
    """`conf` as the scoring stage's executors see it: where that stage gets executors of its own
    (`auto`, Spark 4, dynamic allocation), `spark.accelScoring.scoring.executor.resource.<r>.amount`
    counts as `spark.executor.resource.<r>.amount`, so `--backend auto` and the start line see the
    accelerator that only those executors get."""
    if choice == "off" or _no_profiles(spark_version, conf) or not _dynamic(conf):
        return conf
    head, tail = SCORING_PREFIX + "executor.resource.", ".amount"
    scoring = {f"spark.executor.resource.{k[len(head):-len(tail)]}.amount": v for k, v in conf.items()
               if k.startswith(head) and k.endswith(tail)}
    return {**scoring, **conf}


def executor_hardware(conf: Mapping[str, str]):
    """What a Spark application's executors have (engines/hardware.py Hardware), from its
    configuration (executor_conf's, for the scoring stage): their resource requests where there
    are any. Otherwise, in local mode the tasks run on this machine, so its devices; on a cluster
    the driver's devices say nothing about the executors', so none."""
    from engines import hardware, registry  # here, as in decide

    resources = registry.spark_resources()  # device kind -> Spark resource name
    requested = {kind: _requested(conf.get(f"spark.executor.resource.{name}.amount")) for kind, name in resources.items()}
    if any(requested.values()):
        return hardware.Hardware(requested, source="spark executor resources")
    if conf.get("spark.master", "").startswith("local"):
        return hardware.detect(registry.device_kinds())
    return hardware.Hardware(source=f"no spark.executor.resource.{{{','.join(resources.values())}}}.amount requested")


def _requested(amount: str | None) -> int:
    """An executor resource amount as a device count; what is not a number requests none (Spark
    itself refuses it when the application starts)."""
    try:
        return int(float(amount or 0))
    except ValueError:
        return 0


def _no_profiles(spark_version: str, conf: Mapping[str, str]) -> str | None:
    """Why this Spark application cannot give a stage a profile at all, else None."""
    if _version(spark_version) < FIRST_SPARK:
        return (f"Spark {spark_version} cannot give a DataFrame stage its own resource profile (Spark 4.0 can): "
                f"every stage runs with the default profile")
    if conf.get("spark.master", "").startswith("local["):
        return "local mode: Spark refuses resource profiles there, so scoring runs with the default profile"
    return None


def _dynamic(conf: Mapping[str, str]) -> bool:
    return conf.get("spark.dynamicAllocation.enabled", "false").strip().lower() == "true"


def _setting(conf: Mapping[str, str], key: str) -> str | None:
    """`spark.accelScoring.scoring.<key>`, else `spark.<key>`, else None."""
    for name in (SCORING_PREFIX + key, "spark." + key):
        value = conf.get(name)
        if value is not None and value.strip():
            return value.strip()
    return None


def _number(conf: Mapping[str, str], key: str, fallback, kind):
    text = _setting(conf, key)
    if text is None:
        return fallback
    try:
        value = kind(float(text)) if kind is float else int(text)
    except ValueError:
        names = f"{SCORING_PREFIX}{key} or spark.{key}"
        raise ConfError(f"{names} must be {'a number' if kind is float else 'a whole number'}, got {text!r}") from None
    if value <= 0:
        raise ConfError(f"{SCORING_PREFIX}{key} or spark.{key} must be above 0, got {text!r}")
    return value


def _amount(value: float) -> str:
    return f"{value:g}"


def _version(text: str) -> tuple[int, int]:
    major, minor = (text.split(".") + ["0"])[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)
