"""The shared life of a scoring job: check -> read -> score -> write -> summarise -> exit code.

Exit codes: 0 success; 2 bad arguments or input (nothing written); 1 failed while scoring, or
more invalid/failed rows than --max-invalid-fraction (everything is still written).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sys
import time
from typing import Mapping

from engines import registry
from engines.artifact import Manifest
from engines.errors import ArtifactError
from engines.store import open_manifest, s3_retries
from engines.tasks import task as task_of
from jobs import console, hadoop_files, partitioning, paths, report, spark_io, stage_resources, summary_text, tables, timeline
from jobs.cli import JobConfig, ScoringOptions
from jobs.date_lease import DateLease
from jobs.executor_losses import left_since
from jobs.s3_requests import S3Requests
from jobs.cost import run_cost
from jobs.progress import Progress, WorkerFailed
from udfs import faults, metrics
from udfs.device import bind_device
from udfs.runtime import ScorerSpec
from udfs.scorer import Scorer, output_ddl
from udfs.validate import REASON_CODES

CACHE_ENCODINGS = "spark.sql.inMemoryColumnarStorage.compressed"


def open_model(cfg: JobConfig | ScoringOptions, workload) -> Manifest:
    """Before the SparkSession starts: the artifact's manifest, read through engines.store, of a
    task this job scores (InputError on failure, so a bad --model never starts Spark)."""
    try:
        manifest = open_manifest(cfg.model)
    except ArtifactError as e:
        raise _model_error(cfg, e) from None
    if manifest.task not in workload.tasks:
        raise spark_io.InputError(f"--model {cfg.model} is a {manifest.task} artifact; this job needs one of {workload.tasks}")
    manifest.warn_untrained_head()
    return manifest


def plan(cfg: JobConfig | ScoringOptions, manifest: Manifest, spark_conf: Mapping[str, str]) -> ScorerSpec:
    """Once the SparkSession exists: the backend its executors can run, checked before any task
    starts (InputError on failure). `spark_conf` is the application's configuration."""
    try:
        backend = registry.resolve_backend(cfg.backend, manifest, stage_resources.executor_hardware(spark_conf))
    except ArtifactError as e:
        raise _model_error(cfg, e) from None
    try:
        bind_device(backend, cfg.device, {})  # a --device that cannot fit the backend fails here, not in tasks
    except ValueError as e:
        raise spark_io.InputError(str(e)) from None
    max_seq_len = min(cfg.max_seq_len or manifest.max_seq_len, manifest.max_seq_len)
    batch_tokens = cfg.batch_tokens or registry.engine_class(backend).default_batch_tokens
    fallback = _fallback_model(cfg, manifest, backend)
    return ScorerSpec(artifact=cfg.model, digest=manifest.digest, backend=backend, batch_tokens=batch_tokens,
                      max_seq_len=max_seq_len, device=cfg.device, overlap=cfg.overlap, fallback=cfg.fallback_model,
                      fallback_digest=fallback.digest if fallback else None)


def check_engine_here(spark, spec: ScorerSpec) -> None:
    """In local mode the workers run on this machine, and with this Python unless the
    application gives them another interpreter or PYTHONPATH: there, an engine that cannot load
    here (a missing package, no device) cannot load in any task, so say why now (InputError)
    instead of failing the scoring tasks. On a cluster the workers' first attempt finds out
    and the driver cancels the run (jobs/progress.py)."""
    context = spark.sparkContext
    if not (context.master == "local" or context.master.startswith("local[")):
        return
    if os.path.realpath(context.pythonExec) != os.path.realpath(sys.executable) or "PYTHONPATH" in context.environment:
        return
    reason = registry.engine_class(spec.backend).unavailable(bind_device(spec.backend, spec.device, {}))
    if reason:
        raise spark_io.InputError(reason)


def _fallback_model(cfg: JobConfig | ScoringOptions, manifest: Manifest, backend: str) -> Manifest | None:
    """--fallback-model's manifest, checked like --model's: the same task, runnable by `backend`."""
    if not cfg.fallback_model:
        return None
    try:
        fallback = open_manifest(cfg.fallback_model)
    except ArtifactError as e:
        raise spark_io.InputError(f"--fallback-model {cfg.fallback_model}: {e}") from None
    if fallback.task != manifest.task:
        raise spark_io.InputError(f"--fallback-model {cfg.fallback_model} scores {fallback.task} and --model {cfg.model} "
                            f"scores {manifest.task}: a fallback must score the same task")
    if not registry.engine_class(backend).runs(fallback):
        raise spark_io.InputError(f"--fallback-model {cfg.fallback_model} was compiled for backend {fallback.backend!r}, "
                            f"which backend {backend} (the one --model runs on) cannot run")
    return fallback


def _model_error(cfg: JobConfig | ScoringOptions, e: ArtifactError) -> spark_io.InputError:
    return spark_io.InputError(f"--model {cfg.model}: {e}")


def row_metrics(F):
    """What the summary counts over output rows."""
    ok = F.col("status") == "ok"
    reason = F.split(F.col("error"), ":").getItem(0)
    exprs = [
        F.count(F.lit(1)).alias("rows_out"),
        F.sum(ok.cast("long")).alias("ok"),
        F.sum((F.col("status") == "invalid_input").cast("long")).alias("invalid"),
        F.sum((F.col("status") == "error").cast("long")).alias("error"),
        F.sum(F.col("truncated").cast("long")).alias("truncated"),
        F.min(F.when(F.col("status") == "error", F.col("error"))).alias("an_error"),  # for the exit-1 line
    ]
    return exprs + [F.sum((reason == code).cast("long")).alias(f"invalid_{code}") for code in REASON_CODES]


def check_dedup(cfg: JobConfig | ScoringOptions) -> None:
    """The --dedup, --cache and --fallback-model combinations no plan can honour (InputError)."""
    if cfg.cache and cfg.dedup == "batch":
        raise spark_io.InputError("--cache scores each distinct text once per run; it cannot be combined with --dedup batch")
    if cfg.cache and cfg.fallback_model:
        raise spark_io.InputError("--cache keeps one artifact's results, and --fallback-model would score some rows with "
                            "another artifact; give one or the other")


def dedup_level(cfg: JobConfig, workload, manifest: Manifest, rows: int, tasks: int) -> tuple[str, str]:
    """Where identical texts are scored once, the run (a Spark distinct) or each Arrow batch, and
    why. The run-level plan's keyed copy, distinct and join back cost several Spark jobs
    (bench/results/scale.md); they pay for themselves only where repeats fall in different
    batches, so rows that are one Arrow batch of one task take the per-batch plan, which then
    scores each distinct text once just the same."""
    if cfg.dedup:
        return cfg.dedup, "--dedup"
    if cfg.cache:
        return "run", "--cache"
    default = f"the default for {'an' if manifest.task[0] in 'aeiou' else 'a'} {manifest.task} artifact"
    if workload.default_dedup(task_of(manifest.task)) == "batch":
        return "batch", default
    if tasks == 1 and rows <= cfg.arrow_batch_rows:
        return "batch", (f"all {rows:,} rows are one Arrow batch of one task (--arrow-batch-rows "
                         f"{cfg.arrow_batch_rows:,}): each distinct text is scored once per batch as per run")
    return "run", default


def run(cfg: JobConfig, workload, app_name: str) -> int:
    t_start, boto3_retries = time.time(), s3_retries()
    out_stream = console.attach()
    try:
        manifest = open_model(cfg, workload)
        check_dedup(cfg)
        out = tables.parse(cfg.output, cfg.runs_dir, cfg.register_table)
    except spark_io.InputError as e:
        return _fail(2, str(e))
    spark = spark_io.spark_session(app_name, cfg.master)
    if cfg.verbose:
        spark.sparkContext.setLogLevel("INFO")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(cfg.arrow_batch_rows))
    s3 = S3Requests.since(boto3_retries, spark)
    spark_conf = dict(spark.sparkContext.getConf().getAll())
    try:
        # the executors that score: with a stage profile, those of the scoring stage
        scoring_conf = stage_resources.executor_conf(cfg.scoring_resources, spark.version, spark_conf)
        spec = plan(cfg, manifest, scoring_conf)
        check_engine_here(spark, spec)
        resources = scoring_resources(cfg, spec, spark.version, spark_conf)
    except spark_io.InputError as e:
        return _fail(2, str(e))
    try:
        apart = paths.refusal({"--input": cfg.input, "--output": out.folder, "--runs-dir": cfg.runs_dir,
                               "--cache": cfg.cache}, lambda path: spark_io.qualified(spark, path))
        if apart:  # before check_output, whose probe creates a file under --output
            raise spark_io.InputError(apart)
        root_flag = "--output" if out.folder else "--runs-dir"
        spark_io.check_output(spark, out.root, flag=root_flag)
        spark_io.check_output_owner(spark, out.root, app_name, flag=root_flag)
        if cfg.cache:
            spark_io.check_output(spark, cfg.cache, flag="--cache")
        tables.check(spark, out, workload)
        lease = DateLease(spark, out.root, cfg.run_date, job=app_name,
                          application_id=spark.sparkContext.applicationId, stale_seconds=cfg.lease_stale_seconds,
                          take_over=cfg.take_over_run, on_lost=spark.sparkContext.cancelAllJobs)
        lease.acquire()  # before any task runs: no other live run writes this date
    except spark_io.InputError as e:
        return _fail(2, str(e))
    try:
        tables.prepare(spark, out, workload)
    except spark_io.InputError as e:
        lease.release()
        return _fail(2, str(e))
    for held, held_by in zip(lease.taken_over, lease.took_over_ids):
        console.say(f"took over run_date={cfg.run_date} from {held_by}, whose lease "
                    f"was {'live: --take-over-run' if held['was_live'] else 'stale'} (renewed "
                    f"{held['age_seconds']:.0f} s ago)")
    try:
        return _read_and_score(spark, cfg, out, workload, app_name, manifest, spec, resources, scoring_conf, lease,
                               t_start, s3, out_stream)
    finally:
        lease.release()


def _read_and_score(spark, cfg: JobConfig, out: tables.Output, workload, app_name: str, manifest: Manifest, spec: ScorerSpec,
                    resources, scoring_conf: Mapping[str, str], lease: DateLease, t_start: float, s3: S3Requests,
                    out_stream) -> int:
    """The run once it holds its date: read, score, write, summarise; the exit code."""
    t_read = time.time()
    try:
        raw = spark_io.read_input(spark, cfg.input, cfg.input_format)
        fields_absent = spark_io.absent_fields(raw, workload)
        df, input_profile = spark_io.scoring_input(raw, workload)
    except spark_io.InputError as e:
        return _fail(2, str(e))
    except Exception as e:  # noqa: BLE001 - corrupt or unreadable files surface only when Spark reads them
        return _fail(2, f"cannot read --input {cfg.input}: {spark_io.first_line(e)}")
    rows_in = input_profile.rows
    layout = partitioning.decide(input_profile.partition_rows, spark.sparkContext.defaultParallelism,
                                 cfg.arrow_batch_rows, cfg.num_partitions)
    level, level_reason = dedup_level(cfg, workload, manifest, rows_in, layout.tasks)
    if not spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        # The plan's own shuffles (the run-level plan's distinct and join back) in as many tasks as
        # the scoring: Spark's default of 200 cannot be coalesced where a persisted plan feeds them.
        spark.conf.set("spark.sql.shuffle.partitions", str(layout.tasks))
    if level == "run" and not spark.sparkContext.getConf().contains(CACHE_ENCODINGS):
        # The run-level plan persists texts and hex keys, which the columnar cache's encodings
        # (run-length, dictionary) do not shrink; sizing them up value by value cost 7.8 of 108.8 s
        # at 2,000,000 pairs (docs/performance.md, "The run-level plan at 2,000,000 pairs").
        spark.conf.set(CACHE_ENCODINGS, "false")
    if cfg.num_partitions:
        df = df.repartition(cfg.num_partitions)
    elif layout.spread:  # hashed on every column: deterministic for retried tasks and, unlike round robin, no sort
        df = df.repartition(layout.tasks, *df.columns)
    start = (f"scoring {rows_in:,} rows from {cfg.input} in {layout.tasks} task{'s' if layout.tasks != 1 else ''} ({layout.reason}), "
             f"identical texts once per {level} ({level_reason}), with "
             f"{manifest.model_id} on backend {spec.backend}, {_device_plan(scoring_conf, spec)} "
             f"-> {out.describe(cfg.run_date)}"
             + (f"; fields_absent: {', '.join(fields_absent)}" if fields_absent else ""))
    t_score, jobs_before = time.time(), _spark_jobs(spark)
    try:
        if level == "batch":
            m, samples, extra = _score_per_batch(spark, cfg, out, app_name, spec, resources, workload, df, rows_in, start,
                                                 out_stream, lease)
        else:
            m, samples, extra = _score_distinct(spark, cfg, out, app_name, spec, resources, workload, manifest, df, rows_in,
                                                layout.tasks, start, out_stream, lease)
    except WorkerFailed as e:  # an engine that cannot load on a worker: the run was cancelled at once
        return _fail(1, str(e))
    except Exception as e:  # noqa: BLE001 - a failed Spark job is a failed run; say why, exit 1
        if lease.lost:
            return _fail(1, f"run_date={cfg.run_date} was taken over by another run: this run stopped before "
                            f"writing it; the date holds what that run writes")
        return _fail(1, f"scoring failed: {_root_cause(e)}")
    scoring_seconds = time.time() - t_score
    extra["dedup"]["reason"] = level_reason
    spark_jobs = {"before_scoring": jobs_before, "scoring": _spark_jobs(spark) - jobs_before}
    summary = {**_summary(cfg, spec, manifest, m, rows_in, spark, app_name, t_start, t_score, scoring_seconds,
                          fields_absent, samples),
               # outside scoring_seconds: the input's schema and the one query that sizes the run
               "sizing_seconds": round(t_score - t_read, 3), "written_to": out.describe(cfg.run_date),
               "scoring_resources": resources.summary(), "partitioning": layout.summary(),
               "spark_jobs": spark_jobs, "took_over_from": lease.took_over_ids, **extra}
    summary["executors_left"] = left_since(spark, t_start)  # Spot reclaims, decommissions, kills
    summary["s3"] = s3.summary(spark, summary["tasks"])  # after the cache commit in `extra`, before the summary's own write
    failure = _failure(cfg, summary, m)
    summary.update(exit_code=1 if failure else 0, failure=failure)  # the page and schedulers see the verdict too
    hadoop_files.write_text(spark, spark_io.summary_path(out.root, cfg.run_date), json.dumps(summary, indent=2, sort_keys=True))
    try:  # the picture is secondary: the rows and summary.json are written, so the run stands
        hadoop_files.write_text(spark, spark_io.report_path(out.root, cfg.run_date), report.render(summary))
    except Exception as e:  # noqa: BLE001
        console.say(f"warning: {spark_io.report_path(out.root, cfg.run_date)} not written: {type(e).__name__}: {e}")
    console.say(summary_text.render(summary))
    print(json.dumps(summary, sort_keys=True), flush=True)
    return _fail(1, failure) if failure else 0


def _failure(cfg: JobConfig, summary: dict, m: Mapping) -> str | None:
    """Why a run that wrote its rows still exits 1: rows lost, or more bad rows than allowed."""
    rows_in = summary["rows_in"]
    if summary["rows_out"] != rows_in:
        return f"row count mismatch: {rows_in} in, {summary['rows_out']} written"
    if summary["bad_fraction"] > cfg.max_invalid_fraction:
        return (f"{summary['invalid'] + summary['error']} of {rows_in} rows invalid or failed "
                f"({summary['bad_fraction']:.2%} > --max-invalid-fraction {cfg.max_invalid_fraction:.2%}); "
                f"all rows were written" + (f"; an error: {m['an_error']}" if m.get("an_error") else ""))
    return None


def scoring_resources(cfg: JobConfig | ScoringOptions, spec: ScorerSpec, spark_version: str,
                      spark_conf: Mapping[str, str]) -> stage_resources.ScoringResources:
    """What the scoring stage asks Spark for (jobs/stage_resources.py); said in one line wherever an
    accelerator backend makes it a choice. InputError for a conf value it cannot use."""
    try:
        resources = stage_resources.decide(cfg.scoring_resources, spec.backend, spark_version, spark_conf)
    except stage_resources.ConfError as e:
        raise spark_io.InputError(str(e)) from None
    try:
        resources.profile  # built now, so that Spark's own check of the amounts runs before any task
    except Exception as e:  # noqa: BLE001 - Spark refused the profile; its reason is the Java exception's
        cause = getattr(e, "java_exception", None)
        raise spark_io.InputError(f"the scoring stage's resource profile ({resources.task}): "
                            f"{cause.toString() if cause is not None else spark_io.first_line(e)}") from None
    if cfg.scoring_resources == "auto" and registry.engine_class(spec.backend).spark_resource:
        console.say(f"scoring resources: {resources.reason}")
    return resources


def _score_per_batch(spark, cfg, out, app_name, spec, resources, workload, df, rows_in, start, out_stream, lease):
    """Every row through the scorer; identical texts scored once per Arrow batch."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    console.say(start)
    observation = Observation("accel_scoring")
    then = f"committing {out.describe(cfg.run_date)}"
    with Progress(spark, rows_in, cfg.progress_seconds, out_stream, then=then) as progress:
        spec = dataclasses.replace(spec, progress=progress.address)
        scored = resources.map_in_arrow(df, Scorer(spec, workload), output_ddl(workload))
        scored = scored.observe(observation, *row_metrics(F), *metrics.aggregates(F))
        lease.check()
        table = _write(scored.drop(*metrics.COLUMNS), out, cfg, app_name, spark)
        m = observation.get
        tables.settle(spark, out, cfg.run_date, int(m.get("rows_out") or 0))
        progress.finish(int(m.get("rows_out") or 0))
    return m, progress.samples, {"dedup": {"level": "batch"}, "scored_unit": "rows", "table": table}


def _score_distinct(spark, cfg, out, app_name, spec, resources, workload, manifest, df, rows_in, partitions, start, out_stream,
                    lease):
    """Distinct units scored once (jobs/distinct_plan.py); with --cache, only those it lacks,
    then added to it once the output is committed."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from jobs.distinct_plan import DistinctPlan
    from jobs.result_cache import ResultCache, new_run_id

    run_id = new_run_id(cfg.run_date)
    cache = ResultCache(spark, cfg.cache, manifest.digest, manifest.task) if cfg.cache else None
    with cache.lease(run_id, cfg.run_date) if cache else contextlib.nullcontext():
        plan = DistinctPlan(df, workload, manifest, spec.max_seq_len, partitions, cache)
        try:
            counts = plan.count()
            faults.at_driver_step(faults.UNITS_PERSISTED, spark.sparkContext.applicationId)
            unit = workload.unit_noun(task_of(manifest.task))
            console.say(f"{start}; {counts.distinct:,} distinct {unit}"
                        + (f", {counts.cached:,} of them in the cache" if cache else ""))
            engine_obs, row_obs = Observation("accel_scoring_units"), Observation("accel_scoring_rows")
            then = (f"joining them back to the {rows_in:,} rows and writing {out.describe(cfg.run_date)}"
                    + (", then adding them to the cache" if cache else ""))
            with Progress(spark, counts.to_score, cfg.progress_seconds, out_stream, unit=unit, then=then) as progress:
                fresh = plan.scored_units(dataclasses.replace(spec, progress=progress.address), resources,
                                          counts, lambda df: df.observe(engine_obs, *metrics.aggregates(F)),
                                          cache.staging(run_id) if cache else None)
                rows = plan.rows(fresh)
                rows = rows.observe(row_obs, *row_metrics(F), F.sum(F.col("_hit").cast("long")).alias("hits"))
                lease.check()
                table = _write(rows.drop("_hit"), out, cfg, app_name, spark)
                m = {**(engine_obs.get if counts.to_score else {}), **row_obs.get}
                tables.settle(spark, out, cfg.run_date, int(m.get("rows_out") or 0))
                progress.finish(int(m.get("units_scored") or 0))
            extra = {"dedup": {"level": "run", "units": counts.distinct, "units_scored": int(m.get("units_scored") or 0)},
                     "scored_unit": unit, "table": table}
            if cache:
                lease.check()
                added = cache.commit(run_id, cfg.run_date, fresh if counts.to_score else None,
                                     plan.used_keys() if counts.cached else None)
                hits = int(m.get("hits") or 0)
                extra["cache"] = {
                    "path": cfg.cache, "hits": hits, "misses": int(m.get("ok") or 0) + int(m.get("error") or 0) - hits,
                    "texts_encoded": int(m.get("units_scored") or 0), "tokens_saved": counts.cached_tokens,
                    "entries_added": added, **{f"size_{k}": v for k, v in cache.size().items()}}
        finally:
            plan.close()
    return m, progress.samples, extra


def _write(rows, out: tables.Output, cfg: JobConfig, app_name: str, spark) -> dict | None:
    """The scored rows, with their run_date, to the output (jobs/tables.py): what the summary
    records of the table written, if any."""
    from pyspark.sql import functions as F

    return tables.write(rows.withColumn("run_date", F.lit(cfg.run_date)), out, cfg.run_date,
                        job=app_name, application_id=spark.sparkContext.applicationId)


def _spark_jobs(spark) -> int:
    """Spark jobs this application has started so far (their ids count up from 0): what a plan's
    actions, reads and writes cost in scheduling, each a round of tasks on every executor."""
    return max(spark.sparkContext.statusTracker().getJobIdsForGroup(None), default=-1) + 1


def _device_plan(spark_conf: Mapping[str, str], spec) -> str:
    """What the start line can say about devices before any task runs."""
    for resource in registry.spark_resources().values():
        amount = spark_conf.get(f"spark.executor.resource.{resource}.amount")
        if amount:
            return f"{amount} {resource} per executor (Spark assigns each task its address)"
    return f"device {bind_device(spec.backend, spec.device, {})}"


def observed(m: Mapping) -> tuple[dict, list]:
    """The run summary's counts, tokens, seconds and task records, from the observations over the
    output rows (`row_metrics`) and the scorer's metric columns (udfs/metrics.py): what a job and
    a caller of jobs/api.py both report; and the parsed per-batch records (jobs/timeline.py)."""
    batches = timeline.parse(m.get("batches"))
    per_task = timeline.per_task(batches)
    tasks = sorted(({**t, **per_task.get((t["partition"], t["attempt"]), {})}
                    for t in map(json.loads, (m.get("tasks") or "").splitlines())),
                   key=lambda t: (t["partition"] or 0, t["attempt"] or 0))
    real, padded = int(m.get("real_tokens") or 0), int(m.get("padded_tokens") or 0)
    return {
        "rows_out": int(m.get("rows_out") or 0), "ok": int(m.get("ok") or 0), "invalid": int(m.get("invalid") or 0),
        "error": int(m.get("error") or 0),
        "invalid_by_reason": {code: int(m.get(f"invalid_{code}") or 0) for code in REASON_CODES},
        "truncated": int(m.get("truncated") or 0),
        "engine_seconds": round(float(m.get("engine_seconds") or 0.0), 3),
        "tokenize_seconds": round(float(m.get("tokenize_seconds") or 0.0), 3),
        "udf_seconds": round(float(m.get("udf_seconds") or 0.0), 3),
        "engine_loads": int(m.get("engine_loads") or 0), "batch_retries": int(m.get("batch_retries") or 0),
        "real_tokens": real, "padded_tokens": padded,
        "padding_efficiency": round(real / padded, 4) if padded else None,
        "devices": sorted({t["device"] for t in tasks}),
        "single_text_tokenizer": sorted({t["single_texts"] for t in tasks if "single_texts" in t}),
        "tasks": tasks,
    }, batches


def _summary(cfg, spec, manifest, m, rows_in, spark, app_name, t_start, t_score, scoring_seconds, fields_absent,
             samples) -> dict:
    seen, batches = observed(m)
    tasks, rows_out = seen["tasks"], seen["rows_out"]
    cost = run_cost(tasks, scoring_seconds, rows_out, instance_type=cfg.instance_type,
                    usd_per_hour=cfg.usd_per_hour, instances=cfg.instances)
    return {
        **seen, "job": app_name, "run_date": cfg.run_date, "input": cfg.input, "output": cfg.output,
        "rows_in": rows_in, "fields_absent": fields_absent,
        "bad_fraction": (seen["invalid"] + seen["error"]) / rows_in if rows_in else 0.0,
        "wall_seconds": round(time.time() - t_start, 3), "scoring_seconds": round(scoring_seconds, 3),
        "rows_per_second": round(rows_out / scoring_seconds, 2) if scoring_seconds > 0 else None,
        "backend": spec.backend,
        "options": {"batch_tokens": spec.batch_tokens, "max_seq_len": spec.max_seq_len,
                    "arrow_batch_rows": cfg.arrow_batch_rows, **cfg.extra},
        "model": manifest.model_id, "model_sha256": manifest.digest, "task": manifest.task,
        "spark_application_id": spark.sparkContext.applicationId,
        "timeline": (timeline.from_samples(samples, t_score, t_score + scoring_seconds)
                     or timeline.buckets(batches, t_score, t_score + scoring_seconds)), "cost": cost,
    }


# The last line of a Python traceback: `ModuleNotFoundError: No module named 'pandas'`.
_PYTHON_ERROR = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)(:|$)")


# `Caused by: org.apache.hadoop.fs.s3a.AWSStatus500Exception: Writing Object on <key>: …`
_S3A_ERROR = re.compile(r"^Caused by: org\.apache\.hadoop\.fs\.s3a\.(\w+: .*)$", re.M)


def _root_cause(e: Exception) -> str:
    text = str(e)
    # A worker's failure arrives wrapped in Java exceptions and stack frames; the Python error
    # is the first unindented `Name: message` line after the last traceback header.
    lines = text.splitlines()
    headers = [i for i, line in enumerate(lines) if line.rstrip().endswith("Traceback (most recent call last):")]
    if headers:
        for line in lines[headers[-1] + 1:]:
            if not line[:1].isspace() and _PYTHON_ERROR.match(line.strip()):
                return line.strip()[:2000]
    for marker in ("ArtifactError", "EngineUnavailableError", "TargetMismatchError", "PythonException"):
        if marker in text:
            lines = [l for l in text.splitlines() if marker in l or "Error:" in l]
            if lines:
                return lines[-1].strip()[:2000]
    s3a = _S3A_ERROR.search(text)  # an S3 request that failed through every retry: its operation and key
    if s3a:
        return f"S3 request failed after s3a's retries: {s3a.group(1)}"[:2000]
    return spark_io.first_line(e)[:2000]


def _fail(code: int, message: str) -> int:
    console.say(f"error: {message}")
    return code
