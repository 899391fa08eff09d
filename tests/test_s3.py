"""Both jobs on S3 through Spark's s3a filesystem, against a moto server on 127.0.0.1.

The input tables (Parquet, JSON lines, CSV), the scored partitions and the run summaries go
through the real s3a client (hadoop-aws 3.3.1, local_aws/s3a_jars.py), Spark's Parquet writer and
its commit protocol (dynamic partition overwrite: files are staged under
`<output>/.spark-staging-<job>/` and renamed, which on S3 means copied, into place). The
artifact is read from `s3://` by engines/store.py (boto3) on the driver and on the workers.

What this proves: the jobs' reads, writes, commits, re-runs and refusals on an S3 API. What it
does not: EMR's `s3://` (EMRFS and its S3-optimized committer) and real S3's latencies.
"""
from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path

import pandas as pd
import pytest

from jobs.duplicates import main as duplicates
from jobs.query_intent import main as query_intent
from local_aws.moto_server import MotoServer
from local_aws.s3_faults import Rule
from tests import moto_support
from tests.jobhelpers import executor_env, pairs_frame, run_job
from tests.standalone import submit
from udfs import faults

pytestmark = pytest.mark.spark

BUCKET = "scoring"
MODELS = "models"
# Distinct from every other string in the logs, so that a leak is found by a plain search.
ACCESS_KEY, SECRET_KEY, SESSION_TOKEN = "AKIAS3ATESTONLY00042", "s3a-test-secret-zq81", "s3a-test-token-xw47"
LEFTOVER_MARKERS = (".spark-staging", "_temporary", ".accel-scoring-write-check")


@pytest.fixture(scope="module")
def moto(spark):
    """A moto server for this module; s3a (driver JVM), boto3 here and boto3 on the workers talk
    only to it, with this module's credentials."""
    from local_aws import s3a_jars

    if s3a_jars.unusable_reason():
        pytest.skip(f"s3a on this Spark: {s3a_jars.unusable_reason()}")
    if not spark.sparkContext._jvm.org.apache.spark.util.Utils.classIsLoadable("org.apache.hadoop.fs.s3a.S3AFileSystem"):
        pytest.skip("Spark's s3a filesystem is not on the test session's classpath: run `make s3a-jars` "
                    "(make test does) before pytest")
    pytest.importorskip("moto.server", reason="moto[server] is not installed")
    server = MotoServer().start()
    env = {**moto_support.aws_env(server.url), "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
           "AWS_SESSION_TOKEN": SESSION_TOKEN}
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    settings = {"fs.s3a.endpoint": server.url, "fs.s3a.access.key": ACCESS_KEY, "fs.s3a.secret.key": SECRET_KEY,
                "fs.s3a.session.token": SESSION_TOKEN,
                "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
                # Fewer and shorter retries than s3a's defaults (20 SDK attempts backing off to 20 s, then 7
                # of its own), so that the fault tests below spend seconds, not minutes, on a key that
                # always fails; 5% of faults are still absorbed.
                "fs.s3a.attempts.maximum": "3", "fs.s3a.retry.limit": "3", "fs.s3a.retry.interval": "100ms",
                "fs.s3a.retry.throttle.limit": "5", "fs.s3a.retry.throttle.interval": "100ms"}
    try:
        with pytest.MonkeyPatch.context() as mp, executor_env(spark, **env):
            for key, value in env.items():
                mp.setenv(key, value)
            mp.delenv("AWS_PROFILE", raising=False)
            for key, value in settings.items():
                hadoop.set(key, value)
            yield server
    finally:
        jvm = spark.sparkContext._jvm
        for bucket in (BUCKET, "no-such-bucket", "their-bucket"):  # the s3a clients bound to this server
            jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(f"s3a://{bucket}/"), hadoop).close()
        for key in settings:
            hadoop.unset(key)
        server.stop()


@pytest.fixture(scope="module")
def s3(moto):
    import boto3

    client = boto3.client("s3", endpoint_url=moto.url)
    client.create_bucket(Bucket=BUCKET)
    client.create_bucket(Bucket=MODELS)
    return client


def publish_artifact(s3, folder: Path, prefix: str) -> str:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            s3.upload_file(str(path), MODELS, f"{prefix}{path.relative_to(folder).as_posix()}")
    return f"s3://{MODELS}/{prefix}"


@pytest.fixture(scope="module")
def pair_model(s3, compile_artifact):
    return publish_artifact(s3, compile_artifact("pair-classification"), "tiny-pair/7/")


@pytest.fixture(scope="module")
def intent_model(s3, compile_artifact):
    return publish_artifact(s3, compile_artifact("text-classification"), "tiny-intent/7/")


def put_table(s3, df: pd.DataFrame, key: str) -> str:
    """df as s3a://BUCKET/key, in the format its suffix names."""
    if key.endswith(".jsonl"):
        body = df.to_json(orient="records", lines=True).encode()
    elif key.endswith(".csv"):
        body = df.to_csv(index=False).encode()
    else:
        buffer = io.BytesIO()
        df.to_parquet(buffer)
        body = buffer.getvalue()
    s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    return f"s3a://{BUCKET}/{key}"


def objects(s3, prefix: str) -> dict[str, str]:
    """key -> ETag of everything under s3://BUCKET/prefix."""
    found = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        found.update({o["Key"]: o["ETag"] for o in page.get("Contents", [])})
    return found


def leftovers(s3, prefix: str) -> list[str]:
    return sorted(k for k in objects(s3, prefix) if any(m in k for m in LEFTOVER_MARKERS))


def read_date(spark, output: str, run_date: str) -> pd.DataFrame:
    """The partition as a reader of the table sees it, through s3a."""
    return spark.read.parquet(output).where(f"run_date = '{run_date}'").drop("run_date").toPandas()


CACHE = f"s3a://{BUCKET}/cache"


def s3_flags(model: str, **flags) -> dict:
    """The flags every run here shares, the result cache on S3 among them (README.md,
    "Incremental runs"), so every run below also reads and commits it through s3a."""
    return {"model": model, "num_partitions": 2, "cache": CACHE, **flags}


def assert_run_landed(s3, spark, output: str, run_date: str, summary: dict, ids: pd.Series, id_column: str):
    """Each input id once in the partition, the summary and the report under `_runs/`, and no
    staging, temporary or probe object left behind."""
    rows = read_date(spark, output, run_date)
    assert summary["rows_in"] == summary["rows_out"] == len(rows) == len(ids)
    assert rows[id_column].is_unique and set(rows[id_column]) == set(ids)
    prefix = output.split(f"{BUCKET}/", 1)[1]
    runs = f"{prefix}/_runs/run_date={run_date}/"
    assert {runs + "summary.json", runs + "report.html"} <= set(objects(s3, runs))
    stored = pd.read_json(io.BytesIO(s3.get_object(Bucket=BUCKET, Key=runs + "summary.json")["Body"].read()),
                          typ="series")
    assert stored["rows_out"] == summary["rows_out"] and stored["output"] == output
    assert leftovers(s3, prefix) == []
    return rows


@pytest.mark.parametrize("name", ["pairs.parquet", "pairs.jsonl", "pairs.csv"])
def test_duplicates_reads_each_format_from_s3_and_writes_every_row_once(spark, s3, pair_model, capsys, name):
    df = pairs_frame(60, seed=7)
    source = put_table(s3, df, f"in/{name}")
    output = f"s3a://{BUCKET}/formats/{name.split('.')[1]}"
    rc, summary, err = run_job(duplicates, capsys, input=source, output=output, run_date="2026-10-01",
                               **s3_flags(pair_model))
    assert rc == 0, err
    assert summary["input"] == source and summary["ok"] == 60
    rows = assert_run_landed(s3, spark, output, "2026-10-01", summary, df.pair_id, "pair_id")
    assert (rows.model == "tiny-pair-classification@7").all()


def test_the_cache_on_s3_serves_a_rerun_and_leaves_no_staging_or_lease(spark, s3, pair_model, capsys):
    df = pairs_frame(50, seed=31)
    source = put_table(s3, df, "cached/pairs.parquet")
    output = f"s3a://{BUCKET}/cached/out"
    first = run_job(duplicates, capsys, input=source, output=output, run_date="2026-10-02", **s3_flags(pair_model))
    again = run_job(duplicates, capsys, input=source, output=output, run_date="2026-10-03", **s3_flags(pair_model))
    assert first[0] == again[0] == 0, again[2]
    assert first[1]["cache"]["hits"] + first[1]["cache"]["entries_added"] >= 50
    assert again[1]["cache"]["hits"] == 50 and again[1]["cache"]["texts_encoded"] == 0
    assert again[1]["engine_loads"] == 0
    kept = objects(s3, "cache/")
    assert any("/_commits/" in k for k in kept)
    files = [k for k in kept if not k.endswith("/")]  # s3a leaves empty folder markers such as cache/_running/
    assert not [k for k in files if "/_staging/" in k or "/_running/" in k or "_temporary" in k], files
    one, two = (read_date(spark, output, d).set_index("pair_id").sort_index() for d in ("2026-10-02", "2026-10-03"))
    pd.testing.assert_frame_equal(one, two)


def test_query_intent_reads_and_writes_s3(spark, s3, intent_model, capsys):
    queries = pd.DataFrame({"query_id": [f"q{i:03d}" for i in range(40)],
                            "query": [f"where is my order {i}" if i % 2 else f"red shoes size {i}" for i in range(40)]})
    output = f"s3a://{BUCKET}/intent"
    rc, summary, err = run_job(query_intent, capsys, input=put_table(s3, queries, "in/queries.jsonl"), output=output,
                               run_date="2026-10-01", **s3_flags(intent_model))
    assert rc == 0, err
    rows = assert_run_landed(s3, spark, output, "2026-10-01", summary, queries.query_id, "query_id")
    assert rows.intent.notna().all() and (rows.status == "ok").all()


def test_a_rerun_replaces_only_its_date_and_a_backfill_leaves_the_others(spark, s3, pair_model, capsys):
    v1, v2 = pairs_frame(30, seed=1), pairs_frame(20, seed=2).assign(pair_id=lambda d: "v2-" + d.pair_id)
    first, second = put_table(s3, v1, "rerun/v1.parquet"), put_table(s3, v2, "rerun/v2.parquet")
    output = f"s3a://{BUCKET}/rerun/out"

    def run(source, run_date):
        rc, summary, err = run_job(duplicates, capsys, input=source, output=output, run_date=run_date,
                                   **s3_flags(pair_model))
        assert rc == 0, err
        return summary

    def partition(run_date):
        return objects(s3, f"rerun/out/run_date={run_date}/")

    run(first, "2026-10-02")
    run(first, "2026-10-03")
    day3 = partition("2026-10-03")
    summary = run(second, "2026-10-02")  # the re-run of a date from new input
    assert_run_landed(s3, spark, output, "2026-10-02", summary, v2.pair_id, "pair_id")
    assert partition("2026-10-03") == day3  # the same objects, untouched
    day2 = partition("2026-10-02")
    summary = run(first, "2026-10-01")  # a back-fill of an earlier date
    assert_run_landed(s3, spark, output, "2026-10-01", summary, v1.pair_id, "pair_id")
    assert partition("2026-10-02") == day2 and partition("2026-10-03") == day3
    assert len(read_date(spark, output, "2026-10-03")) == 30


def test_a_date_another_live_run_holds_on_s3_is_refused_until_its_lease_is_stale(spark, s3, pair_model, capsys):
    """jobs/date_lease.py through s3a: a lease object renewed within its stale time refuses the
    run (exit 2, nothing written); once stale (S3's LastModified), the run takes the date over."""
    df = pairs_frame(40, seed=41)
    source, output, day = put_table(s3, df, "leased/pairs.parquet"), f"s3a://{BUCKET}/leased/out", "2026-10-05"
    lease = f"leased/out/_runs/run_date={day}/leases/application_1733_0007.json"
    s3.put_object(Bucket=BUCKET, Key=lease, Body=json.dumps({
        "application_id": "application_1733_0007", "job": "accel-scoring-duplicates", "host": "ip-10-0-0-7",
        "started": "2026-10-05T02:00:00+00:00", "stale_seconds": 10}).encode())
    rc, summary, err = run_job(duplicates, capsys, input=source, output=output, run_date=day, **s3_flags(pair_model))
    assert (rc, summary) == (2, None), err
    assert (f"error: run_date={day} of {output} is being written by application_1733_0007 (accel-scoring-duplicates "
            "on ip-10-0-0-7, started 2026-10-05T02:00:00+00:00)") in err and len(err.strip().splitlines()) == 1, err
    assert not objects(s3, f"leased/out/run_date={day}/")
    time.sleep(11)  # no renewal: the lease is now older than its stale time (S3 keeps whole seconds)
    rc, summary, err = run_job(duplicates, capsys, input=source, output=output, run_date=day, **s3_flags(pair_model))
    assert rc == 0, err
    assert summary["took_over_from"] == ["application_1733_0007"]
    assert_run_landed(s3, spark, output, day, summary, df.pair_id, "pair_id")
    assert [k for k in objects(s3, f"leased/out/_runs/run_date={day}/leases/") if not k.endswith("/")] == []


def test_an_output_bucket_that_does_not_exist_exits_2_and_writes_nothing(spark, s3, pair_model, capsys):
    buckets = {b["Name"] for b in s3.list_buckets()["Buckets"]}
    output = "s3a://no-such-bucket/out"
    rc, summary, err = run_job(duplicates, capsys, input=f"s3a://{BUCKET}/never-read.parquet", output=output,
                               **s3_flags(pair_model))
    assert rc == 2 and summary is None
    assert err.startswith(f"error: --output {output}") and len(err.splitlines()) == 1, err
    assert "is not reachable: s3a://no-such-bucket/out: The specified bucket does not exist" in err, err
    assert {b["Name"] for b in s3.list_buckets()["Buckets"]} == buckets


def test_an_output_bucket_that_denies_writes_exits_2_and_writes_nothing(spark, s3, moto, compile_artifact, tmp_path,
                                                                       capsys, monkeypatch):
    """A bucket of another account that grants this one nothing: refused before any task runs.
    The input and artifact are local, so the only S3 requests are the output's.

    (moto checks IAM policies only on requests whose SigV4 signature it recomputes, and it
    recomputes the AWS SDK for Java 1.11's differently, so an IAM user without s3:PutObject
    cannot stand in for a read-only bucket here.)"""
    moto_support.foreign_s3_client(moto.url).create_bucket(Bucket="their-bucket")
    monkeypatch.setenv("MOTO_S3_ALLOW_CROSSACCOUNT_ACCESS", "false")  # read by the in-process server
    model = compile_artifact("pair-classification")
    capsys.readouterr()  # the compile's own report, if it ran just now
    path = tmp_path / "in.parquet"
    pairs_frame(5).to_parquet(path)
    rc, summary, err = run_job(duplicates, capsys, input=path, output="s3a://their-bucket/out", model=model)
    assert rc == 2 and summary is None
    assert err.startswith("error: --output s3a://their-bucket/out is not reachable: ") and len(err.splitlines()) == 1, err
    assert "Status Code: 403" in err, err
    monkeypatch.delenv("MOTO_S3_ALLOW_CROSSACCOUNT_ACCESS")
    assert moto_support.foreign_s3_client(moto.url).list_objects_v2(Bucket="their-bucket")["KeyCount"] == 0


def test_a_killed_run_leaves_the_previous_output_and_no_credentials_in_its_logs(spark, s3, moto, pair_model, tmp_path,
                                                                                capsys):
    """spark-submit, as on a cluster: day D is written from v1 (credentials in --conf, INFO logs);
    a run of D from v2 is SIGKILLed once two of its tasks have committed their files to its
    staging prefix on S3; readers (s3a and pyarrow) still see exactly v1. What the killed run
    leaves is that staging prefix, which the re-run (exactly v2) neither needs nor removes."""
    from local_aws import s3a_jars

    day, output = "2026-10-05", f"s3a://{BUCKET}/killed/out"
    v1, v2 = pairs_frame(80, seed=21), pairs_frame(160, seed=22).assign(pair_id=lambda d: "v2-" + d.pair_id)
    first, second = put_table(s3, v1, "killed/v1.parquet"), put_table(s3, v2, "killed/v2.parquet")
    conf = {"spark.jars": s3a_jars.jars_option(s3a_jars.cached()), "spark.hadoop.fs.s3a.endpoint": moto.url,
            "spark.hadoop.fs.s3a.access.key": ACCESS_KEY, "spark.hadoop.fs.s3a.secret.key": SECRET_KEY,
            "spark.hadoop.fs.s3a.session.token": SESSION_TOKEN,
            "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"}
    args = ["--output", output, "--model", pair_model, "--run-date", day, "--num-partitions", 4]
    clean = submit("jobs/duplicates.py", ["--input", first, *args, "--verbose"], master="local[2]", conf=conf,
                   log_dir=tmp_path, name="v1")
    assert clean.rc == 0 and clean.summary, clean.stderr[-3000:]
    runs = f"killed/out/_runs/run_date={day}/"
    stored = [s3.get_object(Bucket=BUCKET, Key=runs + name)["Body"].read().decode() for name in ("summary.json", "report.html")]
    for text in [clean.stdout, clean.stderr, *stored]:
        for secret in (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN):
            assert secret not in text, f"a credential appears in the run's output: {text[:2000]}"
    assert "INFO" in clean.stderr  # the search above covered Spark's and s3a's INFO lines
    before = read_date(spark, output, day).sort_values("pair_id", ignore_index=True)
    assert len(before) == 80

    def committed_tasks():  # a task commit renames its attempt's folder to _temporary/0/task_…
        return [k for k in objects(s3, "killed/out/.spark-staging-") if "/_temporary/0/task_" in k]

    def kill_once_tasks_have_committed(proc):
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            if len(committed_tasks()) >= 2:  # partitions 0 and 1; partition 3 stalls
                return  # submit() SIGKILLs the driver, its JVM and the Python workers when this returns
            time.sleep(0.2)
        raise AssertionError(f"no task committed its files (driver exit {proc.poll()})")

    killed = submit("jobs/duplicates.py", ["--input", second, *args], master="local[2]", conf=conf,
                    env={faults.ENV: "stall:3"}, log_dir=tmp_path, name="killed",
                    on_start=kill_once_tasks_have_committed, kill_on_return=True)
    assert killed.rc < 0 and killed.summary is None, killed.stderr[-3000:]
    left = leftovers(s3, "killed/out/")
    assert left and all(k.startswith("killed/out/.spark-staging-") for k in left), left
    pd.testing.assert_frame_equal(read_date(spark, output, day).sort_values("pair_id", ignore_index=True), before)
    assert sorted(pyarrow_ids(moto.url, f"{BUCKET}/killed/out/run_date={day}")) == sorted(v1.pair_id)

    # the killed run's lease on the date is still live (jobs/date_lease.py): the operator says it is dead
    rc, summary, err = run_job(duplicates, capsys, input=second, output=output, run_date=day, take_over_run=True,
                               **s3_flags(pair_model))
    assert rc == 0, err
    assert "whose lease was live: --take-over-run" in err
    rerun = read_date(spark, output, day)
    assert len(rerun) == 160 and rerun.pair_id.is_unique and set(rerun.pair_id) == set(v2.pair_id)
    assert leftovers(s3, "killed/out/") == left  # only the killed run's staging prefix, for the operator to delete


def pyarrow_ids(url: str, path: str) -> list[str]:
    """The partition's ids as pyarrow's own S3 client reads them (it skips `.`- and `_`-prefixed names)."""
    import pyarrow.dataset as ds
    from pyarrow import fs

    host = url.split("://", 1)[1]
    s3fs = fs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, session_token=SESSION_TOKEN,
                           endpoint_override=host, scheme="http", region=moto_support.REGION)
    return ds.dataset(path, filesystem=s3fs, format="parquet").to_table(columns=["pair_id"]).column(0).to_pylist()


def cache_entries(spark, cache: str) -> pd.DataFrame:
    """Every entry the cache's committed batches hold, in a stable order (jobs/result_cache.py)."""
    df = spark.read.parquet(f"{cache}/digest=*/batches/*").toPandas()
    return df.sort_values(list(df.columns)[:1], ignore_index=True)


@pytest.mark.parametrize("job, model, table, id_column", [
    (duplicates, "pair_model", lambda: pairs_frame(120, seed=51), "pair_id"),
    (query_intent, "intent_model", lambda: pd.DataFrame({
        "query_id": [f"q{i:03d}" for i in range(120)],
        "query": [f"where is my order {i % 40}" if i % 2 else f"red shoes size {i % 30}" for i in range(120)]}),
     "query_id"),
], ids=["duplicates", "query_intent"])
def test_five_percent_s3_faults_on_every_method_change_nothing_but_the_retry_counts(
        spark, s3, moto, request, capsys, job, model, table, id_column):
    """local_aws/s3_faults.py answers 5% of every method's requests with 503 SlowDown, 500, a
    dropped connection or a cut-off body, for s3a (input, output, cache, lease, summary) and boto3
    (the s3:// artifact) alike: the run exits 0 with the rows, scores and cache of a run without
    faults, and its summary counts the retries (jobs/s3_requests.py)."""
    uri, df = request.getfixturevalue(model), table()
    name = job.__module__.rsplit(".", 1)[1]
    source, day = put_table(s3, df, f"faults/{name}/in.parquet"), "2026-10-07"

    def run(tag: str):
        output, cache = f"s3a://{BUCKET}/faults/{name}/{tag}", f"s3a://{BUCKET}/faults/{name}/{tag}-cache"
        rc, summary, err = run_job(job, capsys, input=source, output=output, run_date=day,
                                   **{**s3_flags(uri), "cache": cache})
        assert rc == 0, err
        return output, cache, summary

    clean_output, clean_cache, clean = run("clean")
    with moto.faults.injecting(Rule(0.05), seed=7) as faults:
        output, cache, summary = run("faulty")
    assert faults.injected() >= 10 and len({kind for kind, _ in faults.counts}) >= 3, faults.counts
    rows = assert_run_landed(s3, spark, output, day, summary, df[id_column], id_column)
    expected = read_date(spark, clean_output, day)
    pd.testing.assert_frame_equal(rows.drop(columns="scored_at", errors="ignore").sort_values(id_column, ignore_index=True),
                                  expected.drop(columns="scored_at", errors="ignore").sort_values(id_column, ignore_index=True))
    pd.testing.assert_frame_equal(cache_entries(spark, cache), cache_entries(spark, clean_cache))
    s3a, clean_s3a = summary["s3"]["s3a_driver_jvm"], clean["s3"]["s3a_driver_jvm"]
    assert s3a["requests"] > clean_s3a["requests"]  # the retries, among the same work's requests
    assert 0 < s3a["throttled"] <= faults.injected("slowdown") and clean_s3a["throttled"] == 0
    assert summary["s3"]["boto3_retries"]["driver"] <= faults.injected()


def test_a_key_that_always_fails_exits_1_naming_it_and_leaves_output_and_cache_as_they_were(
        spark, s3, moto, pair_model, capsys):
    """Every PUT under the run's output staging answers 500 (each retry too): the run exits 1 with
    one line naming the key, and the date and the cache hold what the previous run left."""
    df = pairs_frame(40, seed=61)
    source, day = put_table(s3, df, "failing/in.parquet"), "2026-10-08"
    output, cache = f"s3a://{BUCKET}/failing/out", f"s3a://{BUCKET}/failing/cache"
    flags = {**s3_flags(pair_model), "cache": cache}
    rc, _, err = run_job(duplicates, capsys, input=source, output=output, run_date=day, **flags)
    assert rc == 0, err
    before_output, before_cache = objects(s3, "failing/out/run_date="), objects(s3, "failing/cache/")
    again = put_table(s3, pairs_frame(40, seed=62).assign(pair_id=lambda d: "v2-" + d.pair_id), "failing/in2.parquet")
    with moto.faults.injecting(Rule(1.0, ("internal",), methods=frozenset({"PUT"}),
                                    key=r"/failing/out/\.spark-staging-[^/]+/.*part-")) as faults:
        rc, summary, err = run_job(duplicates, capsys, input=again, output=output, run_date=day, **flags)
    assert rc == 1 and summary is None, err
    line = err.strip().splitlines()[-1]
    assert re.fullmatch(r"error: scoring failed: S3 request failed after s3a's retries: AWSStatus500Exception: Writing "
                        r"Object on failing/out/\.spark-staging-[^:]*/part-[^:]*\.parquet: .*internal error.*", line), err
    assert faults.injected() >= 4  # s3a's SDK attempts and its own retries, for one part file at least
    assert objects(s3, "failing/out/run_date=") == before_output
    assert {k: v for k, v in objects(s3, "failing/cache/").items() if not k.endswith("/")} == \
        {k: v for k, v in before_cache.items() if not k.endswith("/")}  # s3a's empty-folder markers come and go


def test_an_iceberg_table_on_s3_replaces_one_date_per_commit(spark, s3, moto, pair_model, capsys):
    """An Iceberg table in a Hadoop catalog on S3 (s3a against the moto server), its runs folder on
    S3 too: two dates, then a re-run of the first; pyiceberg reads each snapshot from S3."""
    from tests.test_tables import data_files, hadoop_catalog, ids_by_date, require_iceberg, static_table

    require_iceberg(spark)
    hadoop_catalog(spark, "s3lake", f"s3a://{BUCKET}/warehouse")
    v1, v2 = pairs_frame(30, seed=31), pairs_frame(20, seed=32).assign(pair_id=lambda d: "v2-" + d.pair_id)
    sources = {"v1": put_table(s3, v1, "iceberg/v1.parquet"), "v2": put_table(s3, v2, "iceberg/v2.parquet")}
    snapshots = {}
    for name, source, day in (("day1", "v1", "2026-11-01"), ("day2", "v1", "2026-11-02"), ("rerun", "v2", "2026-11-01")):
        rc, summary, err = run_job(duplicates, capsys, input=sources[source], output="iceberg:s3lake.scores.pairs",
                                   runs_dir=f"s3a://{BUCKET}/iceberg-runs", run_date=day, **s3_flags(pair_model))
        assert rc == 0, err
        snapshots[name] = summary["table"]["snapshot_id"]
        stored = json.loads(s3.get_object(Bucket=BUCKET, Key=f"iceberg-runs/_runs/run_date={day}/summary.json")["Body"].read())
        assert stored["table"]["snapshot_id"] == snapshots[name]
    metadata = "warehouse/scores/pairs/metadata"
    hint = s3.get_object(Bucket=BUCKET, Key=f"{metadata}/version-hint.text")["Body"].read().decode()
    table = static_table(f"s3a://{BUCKET}/{metadata}", hint, **{
        "s3.endpoint": moto.url, "s3.access-key-id": ACCESS_KEY, "s3.secret-access-key": SECRET_KEY,
        "s3.session-token": SESSION_TOKEN, "s3.region": "us-east-1"})
    assert table.metadata.current_snapshot_id == snapshots["rerun"]
    assert ids_by_date(table, snapshots["day2"]) == {"2026-11-01": sorted(v1.pair_id), "2026-11-02": sorted(v1.pair_id)}
    assert ids_by_date(table, snapshots["rerun"]) == {"2026-11-01": sorted(v2.pair_id), "2026-11-02": sorted(v1.pair_id)}
    assert data_files(table, snapshots["rerun"], "2026-11-02") == data_files(table, snapshots["day2"], "2026-11-02")
