"""Incremental runs (README.md, "Incremental runs"): --cache, run-level distinct scoring and the
cache's maintenance, on local Spark with tiny random BERTs."""
from __future__ import annotations

import json
import shutil
import subprocess
import threading

import numpy as np
import pandas as pd
import pytest

from jobs import duplicates, query_intent
from tests.jobhelpers import pairs_frame, read_partition, run_job
from tests.standalone import submit
from udfs import faults

pytestmark = pytest.mark.spark

BAD = [
    {"pair_id": "blank", "left_title": "  ", "right_title": "x"},
    {"pair_id": "dup", "left_title": "first", "right_title": "x"},
    {"pair_id": "dup", "left_title": "second", "right_title": "x"},
]


def day_frames(n: int = 120) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Day 1, and day 2: 10 of day 1's ids edited, 10 removed, 12 new, the rest unchanged."""
    day1 = pd.concat([pairs_frame(n, seed=3), pd.DataFrame(BAD)], ignore_index=True)
    day2 = day1[~day1.pair_id.isin([f"p{i:05d}" for i in range(10, 20)])].copy()
    edited = [f"p{i:05d}" for i in range(10)]
    day2.loc[day2.pair_id.isin(edited), "left_title"] = day2.loc[day2.pair_id.isin(edited), "left_title"] + " v2"
    new = pairs_frame(12, seed=4).assign(pair_id=lambda d: "new-" + d.pair_id)
    day2 = pd.concat([day2, new], ignore_index=True)
    return day1, day2, {"edited": edited, "new": list(new.pair_id), "removed": [f"p{i:05d}" for i in range(10, 20)]}


def assert_same_rows(got: pd.DataFrame, want: pd.DataFrame, id_column: str, value_columns: list[str]) -> None:
    got = got.sort_values(id_column, ignore_index=True, na_position="first")
    want = want.sort_values(id_column, ignore_index=True, na_position="first")
    exact = [c for c in got.columns if c not in value_columns and c != "top_k"]
    pd.testing.assert_frame_equal(got[exact], want[exact])
    for c in value_columns:
        np.testing.assert_allclose(got[c].astype(float), want[c].astype(float), atol=1e-6, equal_nan=True)


def run_dups(capsys, tmp, df, name, model, cache=None, run_date="2026-03-01", **flags):
    path = tmp / f"{name}.parquet"
    df.to_parquet(path)
    out = tmp / f"out-{name}"
    if cache is not None:
        flags["cache"] = cache
    rc, summary, err = run_job(duplicates.main, capsys, input=path, output=out, model=model, run_date=run_date,
                               max_invalid_fraction=0.2, num_partitions=2, **flags)
    assert rc == 0, err
    return read_partition(out, run_date), summary


@pytest.mark.parametrize("task", ["pair-classification", "embedding"])
def test_day_two_scores_only_what_changed_and_equals_a_run_without_cache(spark, compile_artifact, tmp_path, capsys, task):
    model = compile_artifact(task)
    cache = tmp_path / "cache"
    day1, day2, change = day_frames()
    got1, s1 = run_dups(capsys, tmp_path, day1, "day1", model, cache)
    plain1, _ = run_dups(capsys, tmp_path, day1, "day1-plain", model, dedup="batch")
    assert_same_rows(got1, plain1, "pair_id", ["score"])
    valid1 = int((got1.status == "ok").sum())
    assert s1["cache"]["hits"] == 0 and s1["cache"]["misses"] == valid1
    assert s1["cache"]["entries_added"] == s1["cache"]["texts_encoded"] > 0

    got2, s2 = run_dups(capsys, tmp_path, day2, "day2", model, cache, run_date="2026-03-02")
    plain2, _ = run_dups(capsys, tmp_path, day2, "day2-plain", model, dedup="batch", run_date="2026-03-02")
    assert_same_rows(got2, plain2, "pair_id", ["score"])
    assert not set(change["removed"]) & set(got2.pair_id.dropna())
    c = s2["cache"]
    valid2 = int((got2.status == "ok").sum())
    changed = len(change["edited"]) + len(change["new"])
    if task == "pair-classification":  # one unit per pair: every edited or new pair is a miss
        assert (c["hits"], c["misses"]) == (valid2 - changed, changed)
        assert c["texts_encoded"] == changed
    else:  # a pair is a hit when both sides' embeddings were cached; an edit changes one side
        assert c["hits"] + c["misses"] == valid2 and c["hits"] >= valid2 - changed
        assert c["texts_encoded"] <= 2 * changed
    assert c["tokens_saved"] > 0 and c["entries_added"] == c["texts_encoded"]
    assert c["size_batches"] == 2 and c["size_entries"] == s1["cache"]["entries_added"] + c["entries_added"]
    assert s2["rows_out"] == len(day2) and s2["invalid"] == 3

    # another artifact version: another digest, another folder, no hits
    other = compile_artifact(task, version=8)
    _, s3 = run_dups(capsys, tmp_path, day2, "day2-other", other, cache, run_date="2026-03-02")
    assert s3["cache"]["hits"] == 0 and s3["cache"]["size_batches"] == 1
    assert len(list(cache.glob("digest=*"))) == 2


def test_invalid_and_failed_rows_are_never_cached(spark, compile_artifact, tmp_path, capsys):
    from tests.jobhelpers import executor_env

    model = compile_artifact("pair-classification")
    cache = tmp_path / "cache"
    df = pd.concat([pairs_frame(40, seed=7), pd.DataFrame(BAD)], ignore_index=True)
    long = df.pair_id.isin(["p00001", "p00002"])
    df.loc[long, "left_description"] = "word " * 300  # fails alone under the device limit below
    with executor_env(spark, **{faults.ENV: "oom_tokens:200"}):
        got, s1 = run_dups(capsys, tmp_path, df, "failing", model, cache)
    failed = got[got.status == "error"]
    assert set(failed.pair_id) == {"p00001", "p00002"} and failed.error.str.startswith("engine_error").all()
    assert s1["cache"]["entries_added"] == int((got.status == "ok").sum())
    again, s2 = run_dups(capsys, tmp_path, df, "healthy", model, cache)  # no fault: the failed rows are retried
    assert (again.status == "ok").sum() == len(df) - 3 and s2["cache"]["misses"] == 2
    assert s2["cache"]["hits"] == len(df) - 5
    assert set(again[again.status == "invalid_input"].pair_id) == {"blank", "dup"}


def test_query_intent_cache_and_run_level_dedup(spark, compile_artifact, tmp_path, capsys):
    model = compile_artifact("text-classification")
    queries = pd.DataFrame({"query_id": [f"q{i}" for i in range(90)],
                            "query": [f"where is my order {i % 30}" for i in range(90)]})
    queries.loc[5, "query"] = None
    path = tmp_path / "q.parquet"
    queries.to_parquet(path)

    def run(name, **flags):
        out = tmp_path / name
        rc, summary, err = run_job(query_intent.main, capsys, input=path, output=out, model=model,
                                   run_date="2026-03-01", max_invalid_fraction=0.1, top_k=2, **flags)
        assert rc == 0, err
        return read_partition(out, "2026-03-01"), summary

    plain, sp = run("plain")
    assert sp["dedup"] == {"level": "batch", "reason": "the default for a text-classification artifact"}
    once, so = run("once", dedup="run")
    assert so["dedup"]["units"] == so["dedup"]["units_scored"] == 30  # the null query is invalid, not a unit
    cached, sc = run("cached", cache=tmp_path / "cache")
    again, sa = run("again", cache=tmp_path / "cache")
    for got in (once, cached, again):
        assert_same_rows(got, plain, "query_id", ["confidence"])
        merged = got.set_index("query_id").top_k.dropna()
        want = plain.set_index("query_id").top_k.dropna()
        assert [[d["label"] for d in t] for t in merged.sort_index()] == [[d["label"] for d in t] for t in want.sort_index()]
    assert sa["cache"]["hits"] == 89 and sa["cache"]["texts_encoded"] == 0 and sa["engine_loads"] == 0


def test_embed_once_equals_per_batch_encoding_on_catalogue_pairs(spark, compile_artifact, tmp_path, capsys):
    """Each product in 5 pairs: the run embeds each distinct side once (not once per batch)."""
    model = compile_artifact("embedding")
    products = pairs_frame(40, seed=9)[["left_title", "left_brand", "left_description"]]
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 40, 100), rng.integers(0, 40, 100)
    pairs = pd.DataFrame({"pair_id": [f"c{i}" for i in range(100)]})
    for side, idx in (("left", a), ("right", b)):
        for f in ("title", "brand", "description"):
            pairs[f"{side}_{f}"] = products[f"left_{f}"].to_numpy()[idx]
    once, s1 = run_dups(capsys, tmp_path, pairs, "once", model, arrow_batch_rows=10)
    batch, s2 = run_dups(capsys, tmp_path, pairs, "batch", model, dedup="batch", arrow_batch_rows=10)
    assert_same_rows(once, batch, "pair_id", ["score"])
    distinct = len(set(a) | set(b))
    assert s1["dedup"]["units_scored"] == distinct and s2["real_tokens"] > s1["real_tokens"]


def test_cache_with_dedup_batch_is_refused_before_spark(tmp_path, capsys, compile_artifact):
    rc, _, err = run_job(duplicates.main, capsys, input=tmp_path / "x.parquet", output=tmp_path / "o",
                         model=compile_artifact("pair-classification"), cache=tmp_path / "c", dedup="batch")
    assert rc == 2 and "--cache scores each distinct text once per run" in err
    rc, _, err = run_job(duplicates.main, capsys, input=tmp_path / "x.parquet", output=tmp_path / "o",
                         model=compile_artifact("pair-classification"), cache=tmp_path / "c",
                         fallback_model=compile_artifact("pair-classification"))
    assert rc == 2 and "--cache keeps one artifact's results" in err


def cache_state(spark, cache) -> dict:
    """What a reader of the cache sees: the visible batches and their entries."""
    from jobs.result_cache import ResultCache, digests

    state = {}
    for d in digests(spark, str(cache)):
        c = ResultCache(spark, str(cache), d, "pair-classification")
        state[d] = (sorted(m["batch"] for m in c.markers()),
                    sorted(r["_key"] for r in c.entries().select("_key").distinct().collect()))
    return state


def cached_day_one(spark, compile_artifact, tmp_path, capsys, rows: int):
    """A pair-classification cache filled by day 1; returns (model, cache, its state, day 2's input path, day 2)."""
    model = compile_artifact("pair-classification")
    cache = tmp_path / "cache"
    day1, day2, _ = day_frames(rows)
    run_dups(capsys, tmp_path, day1, "day1", model, cache)
    path = tmp_path / "day2.parquet"
    day2.to_parquet(path)
    return model, cache, cache_state(spark, cache), path, day2


@pytest.mark.parametrize("step", [1, 2])
def test_a_run_killed_during_the_cache_commit_leaves_a_valid_cache(spark, compile_artifact, tmp_path, capsys, step):
    """SIGKILL after the new entries are written (step 1: not yet visible) or after their marker
    is published (step 2: visible, staging left behind). The cache is as before or has the whole
    batch, and the next run over the same input gives the same output as a run without cache."""
    model, cache, before, path, day2 = cached_day_one(spark, compile_artifact, tmp_path, capsys, 60)
    killed = submit("jobs/duplicates.py", ["--input", path, "--output", tmp_path / "killed", "--model", model,
                                           "--run-date", "2026-03-02", "--cache", cache,
                                           "--max-invalid-fraction", 0.2],
                    master="local[2]", env={faults.ENV: f"kill_driver:{step}"}, log_dir=tmp_path, name="killed")
    assert killed.rc != 0 and killed.summary is None, killed.stderr[-3000:]
    after = cache_state(spark, cache)
    (digest,) = before
    if step == 1:
        assert after == before
        assert len(list((cache / f"digest={digest}" / "batches").iterdir())) == 2  # the unmarked batch, unseen
    else:
        assert set(before[digest][0]) < set(after[digest][0]) and set(before[digest][1]) < set(after[digest][1])
        assert list((cache / "_running").iterdir())  # the killed run's lease stays behind
    got, s = run_dups(capsys, tmp_path, day2, "rerun", model, cache, run_date="2026-03-02")
    plain, _ = run_dups(capsys, tmp_path, day2, "plain", model, dedup="batch", run_date="2026-03-02")
    assert_same_rows(got, plain, "pair_id", ["score"])
    if step == 2:
        assert s["cache"]["texts_encoded"] == 0


def test_two_run_dates_sharing_one_cache_at_once(spark, compile_artifact, tmp_path, capsys):
    """Both runs score, both commit their own batch; neither sees the other's entries until the
    next run, which reads one entry per key."""
    model = compile_artifact("pair-classification")
    cache = tmp_path / "cache"
    day1, day2, _ = day_frames(60)
    runs = {}

    def launch(name, frame, run_date):
        path = tmp_path / f"{name}.parquet"
        frame.to_parquet(path)
        runs[name] = submit("jobs/duplicates.py", ["--input", path, "--output", tmp_path / "out", "--model", model,
                                                   "--run-date", run_date, "--cache", cache,
                                                   "--max-invalid-fraction", 0.2],
                            master="local[1]", log_dir=tmp_path, name=name)

    threads = [threading.Thread(target=launch, args=args) for args in
               (("a", day1, "2026-03-01"), ("b", day2, "2026-03-02"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in runs.values():
        assert r.rc == 0, r.stderr[-3000:]
    (digest,) = cache_state(spark, cache)
    batches, keys = cache_state(spark, cache)[digest]
    assert len(batches) == 2
    from jobs.result_cache import ResultCache

    stored = ResultCache(spark, str(cache), digest, "pair-classification").entries().count()
    assert stored == sum(r.summary["cache"]["entries_added"] for r in runs.values()) >= len(keys)
    got, s = run_dups(capsys, tmp_path, day2, "third", model, cache, run_date="2026-03-02")
    assert s["cache"]["texts_encoded"] == 0 and s["cache"]["hits"] == int((got.status == "ok").sum())
    a = read_partition(tmp_path / "out", "2026-03-01")
    assert len(a) == len(day1)


def maintain(capsys, *argv) -> subprocess.CompletedProcess:
    """`python -m jobs.result_cache ...`, in this process (its Spark session is the tests' one)."""
    from jobs import result_cache

    try:
        rc = result_cache.main([str(a) for a in argv])
    except SystemExit as e:  # a bad flag value, refused by the parser
        rc = e.code
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(argv, rc, captured.out, captured.err)


def test_stats_compact_and_expire(spark, compile_artifact, tmp_path, capsys):
    model = compile_artifact("pair-classification")
    cache = tmp_path / "cache"
    day1, day2, _ = day_frames(60)
    run_dups(capsys, tmp_path, day1, "day1", model, cache, run_date="2026-03-01")
    got2, _ = run_dups(capsys, tmp_path, day2, "day2", model, cache, run_date="2026-03-02")
    (digest,) = cache_state(spark, cache)
    keys_before = cache_state(spark, cache)[digest][1]

    stats = maintain(capsys, "stats", cache)
    assert stats.returncode == 0, stats.stderr
    report = json.loads(stats.stdout)
    assert report["digests"][digest]["batches"] == 2 and report["running"] == []

    lease = cache / "_running" / "2026-03-03-000000-deadbeef.json"
    lease.parent.mkdir(exist_ok=True)
    lease.write_text(json.dumps({"run": "2026-03-03-000000-deadbeef", "host": "h", "pid": 1}))
    busy = maintain(capsys, "compact", cache)
    assert busy.returncode == 1 and "in use by run 2026-03-03-000000-deadbeef" in busy.stderr and "--force" in busy.stderr
    assert len(cache_state(spark, cache)[digest][0]) == 2  # refused: nothing rewritten

    done = maintain(capsys, "compact", cache, "--force")
    assert done.returncode == 0, done.stderr
    batches, keys = cache_state(spark, cache)[digest]
    assert len(batches) == 1 and keys == keys_before
    again, s = run_dups(capsys, tmp_path, day2, "after-compact", model, cache, run_date="2026-03-02")
    assert_same_rows(again, got2, "pair_id", ["score"])
    assert s["cache"]["texts_encoded"] == 0

    kept = maintain(capsys, "expire", cache, "--unused-days", 100000)
    assert kept.returncode == 0 and cache_state(spark, cache)[digest][1] == keys_before
    # Mistakes that would have emptied the cache: each is one error line, exit 2, the cache intact.
    for argv, message in [(["--keep-digest", "0000"], "argument --keep-digest: must be an artifact's manifest sha256"),
                          (["--keep-digest", "0" * 64], f"is not in {cache}, which holds digest={digest}"),
                          (["--unused-days", "-30"], "argument --unused-days: must be >= 1")]:
        refused = maintain(capsys, "expire", cache, *argv)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert refused.stderr.startswith("error: ") and message in refused.stderr, refused.stderr
        assert cache_state(spark, cache)[digest][1] == keys_before
    lost = maintain(capsys, "compact", tmp_path / "cahce")
    assert lost.returncode == 2 and "holds no result cache" in lost.stderr, lost.stderr
    # Keeping another artifact's folder drops this one.
    shutil.copytree(cache / f"digest={digest}", cache / f"digest={'f' * 64}")
    dropped = maintain(capsys, "expire", cache, "--keep-digest", "F" * 64)
    assert dropped.returncode == 0, dropped.stderr
    assert list(cache_state(spark, cache)) == ["f" * 64]


def test_a_run_that_fails_while_scoring_leaves_the_cache_and_its_lease_as_before(spark, compile_artifact, tmp_path,
                                                                                 capsys):
    from tests.jobhelpers import executor_env

    model, cache, before, path, _ = cached_day_one(spark, compile_artifact, tmp_path, capsys, 40)
    with executor_env(spark, **{faults.ENV: "raise_once:0"}):
        rc, summary, err = run_job(duplicates.main, capsys, input=path, output=tmp_path / "failed", model=model,
                                   run_date="2026-03-02", cache=cache, max_invalid_fraction=0.2)
    assert rc == 1 and summary is None
    assert "error: scoring failed: RuntimeError: injected fault" in err and "Traceback" not in err
    assert cache_state(spark, cache) == before
    assert not list(cache.glob("_running/*")) and not list(cache.glob("_staging/*"))


def test_entries_of_another_format_are_ignored_and_compacted_away(spark, compile_artifact, tmp_path, capsys):
    """A batch from before embeddings were stored as bytes (format 1: array<float>, no "format" in
    its marker) is never read: the run says so, scores every text again, and `compact` removes it."""
    model = compile_artifact("embedding")
    cache = tmp_path / "cache"
    day1, _, _ = day_frames(40)
    want, _ = run_dups(capsys, tmp_path, day1, "fresh", model)
    run_dups(capsys, tmp_path, day1, "day1", model, cache)
    (folder,) = cache.glob("digest=*")
    (marker,) = (folder / "_commits").glob("*.json")
    meta = json.loads(marker.read_text())
    batch = folder / "batches" / meta["batch"]
    old = pd.read_parquet(batch)
    old["embedding"] = [np.frombuffer(b, "<f4") for b in old["embedding"]]
    shutil.rmtree(batch)
    batch.mkdir()
    old.to_parquet(batch / "part-0.parquet")
    meta.pop("format")
    marker.write_text(json.dumps(meta))
    (marker.parent / f".{marker.name}.crc").unlink(missing_ok=True)  # Hadoop's checksum of the old text

    path = tmp_path / "day1.parquet"
    rc, summary, err = run_job(duplicates.main, capsys, input=path, output=tmp_path / "out-day2", model=model,
                               run_date="2026-03-02", max_invalid_fraction=0.2, num_partitions=2, cache=cache)
    assert rc == 0, err
    assert "1 batch(es) under" in err and "in format 1, not 2, and are ignored" in err
    assert summary["cache"]["hits"] == 0 and summary["dedup"]["units_scored"] == summary["dedup"]["units"]
    assert_same_rows(read_partition(tmp_path / "out-day2", "2026-03-02"), want, "pair_id", ["score"])

    done = maintain(capsys, "compact", cache)
    assert done.returncode == 0, done.stderr
    assert meta["batch"] not in {p.name for p in (folder / "batches").iterdir()}
    assert all(json.loads(p.read_text())["format"] == 2 for p in (folder / "_commits").glob("*.json"))
