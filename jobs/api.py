"""Scoring as DataFrame functions, for use inside a user's own PySpark job.

    from jobs import api

    pairs = spark.read.parquet("s3://bucket/pairs/")
    scores = api.duplicates(pairs, "s3://bucket/models/minilm/1/", threshold=0.8)
    scores.where("status = 'ok'").write.parquet("s3://bucket/scores/")
    print(api.summary(scores))  # after an action: rows, statuses, tokens, engine seconds, tasks
    api.release(scores)         # the run-level plan's persisted rows and units, once done with them

Each function checks the artifact and the options at once (ValueError, with the line the CLI
would print) and returns a lazy DataFrame in the job's output columns; nothing runs until the
caller's action. It takes the caller's partitioning as it is (repartition first for more
tasks), reads the session's `spark.sql.execution.arrow.maxRecordsPerBatch` as the CLI's
--arrow-batch-rows, and scores with the same workloads (udfs/workloads.py), scorer and plans
(jobs/distinct_plan.py) as the jobs. What the CLI adds around them: reading the input and
sizing its tasks, one run per date (jobs/date_lease.py), the progress bar, writing the date's
partition, the summary and report files, and --cache, whose commit follows the write of the
output (README.md, "Incremental runs").
"""
from __future__ import annotations

import dataclasses
import weakref

from pyspark.sql import DataFrame, Observation
from pyspark.sql import functions as F

from engines.tasks import task as task_of
from jobs import runner, spark_io, stage_resources
from jobs.cli import ScoringOptions
from jobs.distinct_plan import DistinctPlan
from udfs import metrics
from udfs.contract import Workload
from udfs.scorer import Scorer, output_ddl
from udfs.workloads import Duplicates, EmbedTexts, QueryIntent


@dataclasses.dataclass
class _Run:
    """What `summary` and `release` need of one call's plan."""

    manifest: object
    backend: str
    dedup: str
    observations: list
    plan: DistinctPlan | None = None


_RUNS: "weakref.WeakKeyDictionary[DataFrame, _Run]" = weakref.WeakKeyDictionary()


def duplicates(df: DataFrame, model: str, *, fields: tuple[str, ...] = Duplicates.fields, id_column: str = "pair_id",
               threshold: float | None = None, strict_fields: bool = False, **options) -> DataFrame:
    """pair_id, score, is_duplicate, model, status, error, truncated (README.md, "The jobs")."""
    return score(df, Duplicates(tuple(fields), id_column, threshold, strict_fields), model, **options)


def query_intent(df: DataFrame, model: str, *, id_column: str = "query_id", query_column: str = "query",
                 top_k: int = 3, **options) -> DataFrame:
    """query_id, intent, confidence, top_k, model, status, error, truncated."""
    return score(df, QueryIntent(id_column, query_column, top_k), model, **options)


def embed_texts(df: DataFrame, model: str, *, id_column: str = "id", text_column: str = "text",
                **options) -> DataFrame:
    """id, embedding, dim, model, status, error, truncated."""
    return score(df, EmbedTexts(id_column, text_column), model, **options)


def score(df: DataFrame, workload: Workload, model: str, **options) -> DataFrame:
    """`df` scored by `workload` with the artifact at `model`; `options`: ScoringOptions' fields
    (backend, batch_tokens, max_seq_len, dedup, fallback_model, device, overlap, scoring_resources),
    as the CLI's flags of the same names."""
    opts = ScoringOptions(model=model, **options)
    spark = df.sparkSession
    try:
        if opts.cache:
            raise spark_io.InputError("cache: the result cache is committed after the output is written, which "
                                      "a caller's own write does not tell us; use the jobs' --cache")
        manifest = runner.open_model(opts, workload)
        runner.check_dedup(opts)
        spark_conf = dict(spark.sparkContext.getConf().getAll())
        scoring_conf = stage_resources.executor_conf(opts.scoring_resources, spark.version, spark_conf)
        spec = runner.plan(opts, manifest, scoring_conf)
        runner.check_engine_here(spark, spec)
        resources = runner.scoring_resources(opts, spec, spark.version, spark_conf)
        rows = spark_io.prepare(df, workload.required_columns, workload.text_columns, workload.id_column)
    except spark_io.InputError as e:
        raise ValueError(str(e)) from None
    rows = spark_io.with_id_counts(rows, workload.id_column)
    level = opts.dedup or workload.default_dedup(task_of(manifest.task))
    row_obs, engine_obs = Observation(), Observation()
    run = _Run(manifest, spec.backend, level, [engine_obs, row_obs])

    def observe(scored: DataFrame) -> DataFrame:  # the scorer's metric columns, added up
        return scored.observe(engine_obs, *metrics.aggregates(F))

    if level == "batch":
        out = observe(resources.map_in_arrow(rows, Scorer(spec, workload), output_ddl(workload))).drop(*metrics.COLUMNS)
    else:
        partitions = df.rdd.getNumPartitions()  # the caller's partitioning (planned, not run)
        run.plan = DistinctPlan(rows, workload, manifest, spec.max_seq_len, partitions)
        out = run.plan.rows(run.plan.scored_units(spec, resources, None, observe, None)).drop("_hit")
    out = out.observe(row_obs, *runner.row_metrics(F))
    _RUNS[out] = run
    return out


def summary(scores: DataFrame) -> dict:
    """What the run did, once an action on `scores` (or on a DataFrame made from it) has run:
    rows and statuses, invalid rows by reason, tokens, engine and tokenizer seconds, the tasks.
    Blocks until that action has finished."""
    run = _RUNS.get(scores)
    if run is None:
        raise ValueError("not a DataFrame returned by jobs.api")
    m = {k: v for obs in run.observations for k, v in obs.get.items()}
    seen, _ = runner.observed(m)
    return {**seen, "model": run.manifest.model_id, "model_sha256": run.manifest.digest, "task": run.manifest.task,
            "backend": run.backend, "dedup": run.dedup, "units_scored": int(m.get("units_scored") or 0)}


def release(scores: DataFrame) -> None:
    """Drop what the run-level plan persisted on the executors' disks (its keyed rows and distinct
    units); the per-batch plan persists nothing. After this, another action recomputes them."""
    run = _RUNS.get(scores)
    if run is not None and run.plan is not None:
        run.plan.close()
