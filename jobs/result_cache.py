"""The result cache behind `--cache PATH`: scored units kept from run to run, keyed by content
and model (udfs/scoring_units.py), so a nightly run scores only what changed.

Layout under PATH (a local folder, s3:// or s3a://), one folder per artifact:

    digest=<manifest digest>/batches/<batch>/part-*.parquet   the entries one run added
    digest=<manifest digest>/_commits/<batch>.json            its marker: the batch is visible
    digest=<manifest digest>/_used/<batch>/part-*.parquet     keys that run served from the cache
    _staging/<run>/                                           a running job's freshly scored units
    _running/<run>.json                                       a lease: a job is using this cache

Crash safety: a batch is visible only once its marker is published, one renamed file written
after the run's output is committed, so a run killed at any point leaves the cache as it was or
with the whole batch. Unmarked batches and staging folders are what killed runs leave behind;
`compact` deletes them. Concurrent runs (say two run dates at once) each add their own batch and
never see each other's until the next run; a text new to both is scored by both, and readers keep
one entry per key. Maintenance (`python -m jobs.result_cache stats|compact|expire PATH`) rewrites
batches, so it refuses to run while any lease exists.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import re
import socket
import sys
import uuid

if __package__ in (None, ""):  # run as a file by spark-submit: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jobs.entry import needs_project  # noqa: E402 (standard library only)

with needs_project("-m jobs.result_cache"):
    from jobs import console, hadoop_files
    from jobs.cli import OneLineParser, positive_int
    from udfs import faults
    from engines.tasks import task as task_of
    from udfs.scoring_units import VALUE_FORMAT

# Stored next to each unit's result: whether it was truncated, its real tokens (what a hit saves)
# and the last run date that used it (what `expire` reads).
ENTRY_EXTRA_DDL = "truncated boolean, _tokens long, last_used string"
ENTRY_EXTRA_COLUMNS = ("truncated", "_tokens", "last_used")


def entry_ddl(task: str) -> str:
    return f"_key string, {task_of(task).value_ddl}, {ENTRY_EXTRA_DDL}"


def new_run_id(run_date: str) -> str:
    return f"{run_date}-{dt.datetime.now(dt.timezone.utc):%H%M%S}-{uuid.uuid4().hex[:8]}"


class CacheBusy(RuntimeError):
    """Maintenance refused: a job holds a lease on the cache."""


class ResultCache:
    """One artifact's entries under a cache root."""

    def __init__(self, spark, root: str, digest: str, task: str | None = None):
        """`task` (the artifact's) fixes the entries' columns; None when only markers are read."""
        self.spark, self.root, self.digest, self.task = spark, root.rstrip("/"), digest, task
        self.folder = f"{self.root}/digest={digest}"

    # -- reading -----------------------------------------------------------------------------
    def markers(self) -> list[dict]:
        """The visible batches' markers: every published marker that no compaction replaced, of
        this version's entry format."""
        published = self.published()
        stale = [m for m in published if m.get("format", 1) != VALUE_FORMAT]
        if stale:
            console.say(f"warning: {len(stale)} batch(es) under {self.folder} hold entries in format "
                        f"{stale[0].get('format', 1)}, not {VALUE_FORMAT}, and are ignored; "
                        f"`python -m jobs.result_cache compact` removes them")
        return [m for m in published if m.get("format", 1) == VALUE_FORMAT]

    def published(self) -> list[dict]:
        """Every published marker that no compaction replaced, whatever its entry format."""
        found = []
        for name in hadoop_files.list_names(self.spark, f"{self.folder}/_commits"):
            if not name.endswith(".json"):
                continue
            try:
                found.append(json.loads(hadoop_files.read_text(self.spark, f"{self.folder}/_commits/{name}")))
            except (ValueError, OSError):
                console.say(f"warning: {self.folder}/_commits/{name} is unreadable; its batch is ignored")
        replaced = {b for m in found for b in m.get("replaces", [])}
        return [m for m in found if m["batch"] not in replaced]

    def entries(self, markers: list[dict] | None = None):
        """The visible entries; concurrent runs may have stored a key twice (with equal results),
        so readers keep one per key."""
        markers = self.markers() if markers is None else markers
        paths = [f"{self.folder}/batches/{m['batch']}" for m in markers if m.get("entries")]
        if not paths:
            return self.spark.createDataFrame([], entry_ddl(self.task))
        return self.spark.read.schema(entry_ddl(self.task)).parquet(*paths)

    def size(self, markers: list[dict] | None = None) -> dict:
        markers = self.markers() if markers is None else markers
        return {"batches": len(markers), "entries": sum(m.get("entries", 0) for m in markers),
                "bytes": sum(m.get("bytes", 0) for m in markers)}

    # -- a job's life ------------------------------------------------------------------------
    def staging(self, run_id: str) -> str:
        return f"{self.root}/_staging/{run_id}"

    @contextlib.contextmanager
    def lease(self, run_id: str, run_date: str):
        """Held for the whole run, so maintenance waits; a killed run leaves it (stats shows it)."""
        path = f"{self.root}/_running/{run_id}.json"
        hadoop_files.write_text(self.spark, path, json.dumps({
            "run": run_id, "run_date": run_date, "host": socket.gethostname(), "pid": os.getpid(),
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}))
        try:
            yield
        finally:
            hadoop_files.delete(self.spark, path)
            hadoop_files.delete(self.spark, self.staging(run_id))

    def commit(self, run_id: str, run_date: str, scored, used_keys) -> int:
        """After the run's output is committed: its newly scored units (`scored`, error-free rows
        only; None when it scored nothing) become a batch, the keys it served from the cache are logged, and the marker is
        published last. Returns the entries added."""
        from pyspark.sql import functions as F

        cols = ["_key", *task_of(self.task).value_columns, *ENTRY_EXTRA_COLUMNS]
        new = None if scored is None else (
            scored.where(F.col("error").isNull()).withColumn("last_used", F.lit(run_date)).select(*cols))
        batch = f"{self.folder}/batches/{run_id}"
        added = 0
        if scored is not None:
            faults.at_driver_step(faults.CACHE_BATCH_WRITE, self.spark.sparkContext.applicationId)
            new.write.mode("errorifexists").parquet(batch)
            added = self.spark.read.parquet(batch).count()
        used = 0
        if used_keys is not None:
            used_keys.select("_key").withColumn("used", F.lit(run_date)).write.parquet(f"{self.folder}/_used/{run_id}")
            used = 1
        faults.at_driver_step(faults.CACHE_ENTRIES_WRITTEN)
        hadoop_files.publish_text(self.spark, f"{self.folder}/_commits/{run_id}.json", json.dumps({
            "batch": run_id, "task": self.task, "format": VALUE_FORMAT, "run_date": run_date, "entries": added,
            "used_log": bool(used),
            "bytes": hadoop_files.size_bytes(self.spark, batch) if added else 0,
            "committed": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}, sort_keys=True))
        faults.at_driver_step(faults.CACHE_MARKER_PUBLISHED)
        return added

    # -- maintenance -------------------------------------------------------------------------
    def rewrite(self, keep_since: str | None) -> dict:
        """Merge the visible batches into one (one entry per key, `last_used` refreshed from the
        used-key logs), dropping entries last used before `keep_since` (YYYY-MM-DD) when given;
        then delete what the new batch replaces and what killed runs left."""
        from pyspark.sql import functions as F

        markers = self.markers()
        before = self.size(markers)
        used_logs = [m["batch"] for m in markers if m.get("used_log")]
        entries = self.entries(markers).dropDuplicates(["_key"])
        if used_logs:
            used = (self.spark.read.parquet(*[f"{self.folder}/_used/{b}" for b in used_logs])
                    .groupBy("_key").agg(F.max("used").alias("_used")))
            entries = (entries.join(used, "_key", "left")
                       .withColumn("last_used", F.greatest("last_used", F.coalesce("_used", "last_used")))
                       .drop("_used"))
        if keep_since:
            entries = entries.where(F.col("last_used") >= keep_since)
        batch_id = f"compact-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
        batch = f"{self.folder}/batches/{batch_id}"
        entries.coalesce(max(1, before["bytes"] // (128 << 20) + 1)).write.parquet(batch)
        kept = self.spark.read.parquet(batch).count()
        hadoop_files.publish_text(self.spark, f"{self.folder}/_commits/{batch_id}.json", json.dumps({
            "batch": batch_id, "task": self.task, "format": VALUE_FORMAT, "entries": kept,
            "bytes": hadoop_files.size_bytes(self.spark, batch),
            "replaces": [m["batch"] for m in markers], "used_log": False,
            "committed": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}, sort_keys=True))
        for name in hadoop_files.list_names(self.spark, f"{self.folder}/batches"):
            if name != batch_id:  # replaced, or never marked (a killed run's)
                hadoop_files.delete(self.spark, f"{self.folder}/batches/{name}")
        for name in hadoop_files.list_names(self.spark, f"{self.folder}/_commits"):
            if name != f"{batch_id}.json":
                hadoop_files.delete(self.spark, f"{self.folder}/_commits/{name}")
        hadoop_files.delete(self.spark, f"{self.folder}/_used")
        return {"digest": self.digest, "before": before, "after": self.size()}


def digests(spark, root: str) -> list[str]:
    return [n.split("=", 1)[1] for n in hadoop_files.list_names(spark, root.rstrip("/")) if n.startswith("digest=")]


def leases(spark, root: str) -> list[dict]:
    found = []
    for name in hadoop_files.list_names(spark, f"{root.rstrip('/')}/_running"):
        try:
            found.append(json.loads(hadoop_files.read_text(spark, f"{root.rstrip('/')}/_running/{name}")))
        except (ValueError, OSError):
            found.append({"run": name})
    return found


def _task_of(spark, root: str, digest: str) -> str | None:
    """An artifact folder's task, as its markers record it (None: nothing committed yet)."""
    return next((m["task"] for m in ResultCache(spark, root, digest).published() if m.get("task")), None)


def _check_idle(spark, root: str, force: bool) -> None:
    held = leases(spark, root)
    if held and not force:
        who = "; ".join(f"run {l.get('run')} (run_date {l.get('run_date')}, host {l.get('host')}, pid {l.get('pid')}, "
                        f"started {l.get('started')})" for l in held)
        raise CacheBusy(f"{root} is in use by {who}. Run maintenance when no job uses this cache; if that run "
                        f"was killed, its lease {root.rstrip('/')}/_running/<run>.json stays behind: pass --force")
    for name in hadoop_files.list_names(spark, f"{root.rstrip('/')}/_staging"):  # idle: only killed runs leave these
        hadoop_files.delete(spark, f"{root.rstrip('/')}/_staging/{name}")
    if force:
        hadoop_files.delete(spark, f"{root.rstrip('/')}/_running")


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _sha256(text: str) -> str:
    """--keep-digest: a manifest digest as `stats` lists it; `0000` would otherwise keep nothing."""
    if not _SHA256.fullmatch(text.lower()):
        raise argparse.ArgumentTypeError(f"must be an artifact's manifest sha256 (64 hex digits, as `stats` "
                                         f"lists them under digests), got {text!r}")
    return text.lower()


def check_target(spark, root: str, keep: list[str]) -> None:
    """Refuse (ValueError) maintenance of a folder that holds no cache, or a --keep-digest it
    lacks: expire drops every digest not kept, so a typo would empty the cache."""
    held = digests(spark, root)
    if not held and not hadoop_files.list_names(spark, f"{root}/_running") and not hadoop_files.list_names(spark, f"{root}/_staging"):
        raise ValueError(f"{root} holds no result cache (no digest=<sha256> folders): check the path, it is the "
                         f"folder given to the jobs' --cache")
    absent = [d for d in keep if d not in held]
    if absent:
        raise ValueError(f"--keep-digest {absent[0]} is not in {root}, which holds "
                         f"{', '.join(f'digest={d}' for d in held) or 'no digest'}; nothing was dropped")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m jobs.result_cache",
                      description="Inspect and maintain a result cache made by the jobs' --cache.")
    sub = p.add_subparsers(dest="command", required=True)
    stats = sub.add_parser("stats", help="batches, entries and bytes per artifact digest; running jobs")
    compact = sub.add_parser("compact", help="merge each digest's batches into one, one entry per key; "
                                             "delete what killed runs left")
    expire = sub.add_parser("expire", help="drop entries unused for N days, or whole artifacts")
    for sp in (stats, compact, expire):
        sp.add_argument("path", help="the cache root given to --cache")
        sp.add_argument("--master", default=None, help="Spark master; default: local[*] (or spark-submit's)")
    for sp in (compact, expire):
        sp.add_argument("--force", action="store_true",
                        help="run although a job's lease exists (only when that job is known to be dead)")
    expire.add_argument("--unused-days", type=positive_int, default=None, metavar="N",
                        help="drop entries no run has used in the last N days (N >= 1)")
    expire.add_argument("--keep-digest", type=_sha256, action="append", default=[], metavar="SHA256",
                        help="keep only these artifacts' folders (repeatable; each must be in the cache); "
                             "drop every other digest")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from jobs import spark_io

    spark = spark_io.spark_session("accel-scoring-cache", args.master)
    root = args.path.rstrip("/")
    try:
        if args.command == "stats":
            report = {"path": root, "running": leases(spark, root),
                      "staging": hadoop_files.list_names(spark, f"{root}/_staging"),
                      "digests": {d: ResultCache(spark, root, d).size() for d in digests(spark, root)}}
            print(json.dumps(report, indent=2, sort_keys=True))
            return 0
        if args.command == "expire" and args.unused_days is None and not args.keep_digest:
            console.say("error: expire needs --unused-days N and/or --keep-digest SHA256")
            return 2
        try:
            check_target(spark, root, args.keep_digest if args.command == "expire" else [])
        except ValueError as e:
            console.say(f"error: {e}")
            return 2
        _check_idle(spark, root, args.force)
        results = []
        for digest in digests(spark, root):
            if args.command == "expire" and args.keep_digest and digest not in args.keep_digest:
                hadoop_files.delete(spark, f"{root}/digest={digest}")
                results.append({"digest": digest, "dropped": True})
                continue
            if args.command == "expire" and args.unused_days is None:
                continue
            since = None
            if args.command == "expire":
                since = (dt.date.today() - dt.timedelta(days=args.unused_days)).isoformat()
            task = _task_of(spark, root, digest)
            if task is not None:
                results.append(ResultCache(spark, root, digest, task).rewrite(since))
        print(json.dumps({"path": root, args.command: results}, indent=2, sort_keys=True))
        return 0
    except CacheBusy as e:
        console.say(f"error: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
