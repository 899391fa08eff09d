"""Reliability of the duplicates job on local Spark: bad data at scale, memory limits,
interrupted runs. (Killed workers and executors: tests/test_cluster.py.)"""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from jobs.duplicates import main
from tests.jobhelpers import executor_env, pairs_frame, read_partition, run_job
from tests.standalone import submit
from udfs import faults

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def model(compile_artifact):
    return compile_artifact("pair-classification")


# -- bad data at scale ------------------------------------------------------------------------
ROWS = 100_000
PLANTED = 1_000  # 1% of the rows, for each reason


def short_pairs(n: int, seed: int) -> pd.DataFrame:
    """n product pairs with short texts (about 20 tokens a pair), built column-wise: fast to make
    and to score, so 100k rows take seconds on two cores."""
    rng = np.random.default_rng(seed)
    brands = np.array(["Apple", "Samsung", "Sony", "Lego", "Nike", "Bosch", "Canon", "Dyson"], dtype=object)
    items = np.array(["phone", "tv", "headphones", "set", "shoes", "drill", "camera", "vacuum"], dtype=object)
    b, it, other = rng.integers(0, 8, n), rng.integers(0, 8, n), rng.integers(0, 8, n)
    num = rng.integers(0, 1000, n).astype(str).astype(object)
    return pd.DataFrame({
        "pair_id": np.char.add("p", np.arange(n).astype(str)).astype(object),
        "left_title": brands[b] + " " + items[it] + " model " + num,
        "left_brand": brands[b],
        "left_description": np.where(rng.random(n) < 0.5, "brand new, boxed", None),
        "right_title": items[it] + " by " + brands[other] + " " + num,
        "right_brand": brands[other],
        "right_description": np.where(rng.random(n) < 0.3, "refurbished", None),
    })


def planted_frame(n: int = ROWS, per_reason: int = PLANTED, seed: int = 5) -> tuple[pd.DataFrame, dict]:
    """n generated pairs in which `per_reason` rows each have a null id, a duplicated id, a null
    side or a blank side (disjoint rows, spread at random)."""
    df = short_pairs(n, seed=seed)
    rng = np.random.default_rng(seed)
    rows = rng.permutation(n)[: 4 * per_reason]
    null_id, dup, null_text, blank = np.split(rows, 4)
    df.loc[null_id, "pair_id"] = None
    first, second = dup[: per_reason // 2], dup[per_reason // 2:]
    df.loc[second, "pair_id"] = df.loc[first, "pair_id"].to_numpy()  # each id twice: 2 x 500 rows
    left, right = null_text[: per_reason // 2], null_text[per_reason // 2:]
    df.loc[left, ["left_title", "left_brand", "left_description"]] = None
    df.loc[right, ["right_title", "right_brand", "right_description"]] = None
    blanks = np.array(["", "   ", "\t\n", "\u200b", "\x00\x07", "\ufeff "], dtype=object)
    side = np.where(np.arange(len(blank)) % 2 == 0, "left", "right")
    for s in ("left", "right"):
        idx = blank[side == s]
        df.loc[idx, f"{s}_title"] = blanks[rng.integers(0, len(blanks), len(idx))]
        df.loc[idx, f"{s}_brand"] = None
        df.loc[idx, f"{s}_description"] = blanks[rng.integers(0, len(blanks), len(idx))]
    expected = {"null_id": per_reason, "duplicate_id": per_reason, "null_text": per_reason, "blank_text": per_reason}
    return df, expected


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    df, expected = planted_frame()
    path = tmp_path_factory.mktemp("planted") / "pairs.parquet"
    df.to_parquet(path)
    return path, df, expected


SCALE_FLAGS = dict(batch_tokens=32768, arrow_batch_rows=10000, num_partitions=2)


@pytest.mark.parametrize("limit, rc_expected", [(0.05, 0), (0.039, 1)])
def test_planted_bad_rows_are_counted_exactly_and_gated(spark, model, planted, tmp_path, capsys, limit, rc_expected):
    path, df, expected = planted
    out = tmp_path / "out"
    t0 = time.monotonic()
    rc, summary, err = run_job(main, capsys, input=path, output=out, model=model, run_date="2026-08-01",
                               max_invalid_fraction=limit, **SCALE_FLAGS)
    print(f"{ROWS} rows, --max-invalid-fraction {limit}: rc={rc} in {time.monotonic() - t0:.1f}s")
    assert rc == rc_expected, err
    assert summary["invalid_by_reason"] == expected
    assert summary["rows_in"] == summary["rows_out"] == ROWS
    assert summary["invalid"] == sum(expected.values()) and summary["error"] == 0
    assert summary["ok"] == ROWS - sum(expected.values())
    if rc_expected:
        assert "(4.00% > --max-invalid-fraction 3.90%); all rows were written" in err
    res = read_partition(out, "2026-08-01")  # everything is written either way
    assert len(res) == ROWS
    assert res.error.str.split(":").str[0].value_counts().to_dict() == expected
    assert sorted(res.pair_id.dropna()) == sorted(df.pair_id.dropna()) and res.pair_id.isna().sum() == PLANTED


# -- memory: oversized batches are split, never crash the worker ----------------------------------
def long_pairs(n: int = 240) -> pd.DataFrame:
    df = pairs_frame(n, seed=3)
    huge = np.arange(n) % 8 == 0  # every 8th pair carries a 100,000-character description
    df.loc[huge, "left_description"] = ("lorem ipsum dolor sit amet " * 4000)[:100_000]
    df.loc[huge, "right_description"] = "x" * 100_000  # one "word": exercises the character clip
    return df


@pytest.fixture(scope="module")
def long_input(tmp_path_factory):
    df = long_pairs()
    folder = tmp_path_factory.mktemp("long")
    df.to_parquet(folder / "pairs.parquet")
    return folder / "pairs.parquet", df


def test_batches_over_the_device_memory_are_split_and_retried(spark, model, long_input, tmp_path, capsys):
    """A fake device that runs out of memory above 4 rows per batch: big planned batches
    (65536 tokens) are halved until they fit, inside the task; no task fails, scores equal a
    run that planned small batches from the start."""
    path, df = long_input
    with executor_env(spark, **{faults.ENV: "oom_rows:4"}):
        rc, limited, err = run_job(main, capsys, input=path, output=tmp_path / "a", model=model, run_date="2026-08-02",
                                   batch_tokens=65536, num_partitions=2)
    assert rc == 0, err
    rc, clean, err = run_job(main, capsys, input=path, output=tmp_path / "b", model=model, run_date="2026-08-02",
                             batch_tokens=512, num_partitions=2)
    assert rc == 0, err
    assert limited["ok"] == clean["ok"] == len(df) and limited["error"] == 0
    assert limited["batch_retries"] > 0 and clean["batch_retries"] == 0
    assert all(t["attempt"] == 0 for t in limited["tasks"])  # split inside the task, no Spark retry
    a = read_partition(tmp_path / "a", "2026-08-02").set_index("pair_id").sort_index()
    b = read_partition(tmp_path / "b", "2026-08-02").set_index("pair_id").sort_index()
    np.testing.assert_allclose(a.score.to_numpy(), b.score.to_numpy(), rtol=0, atol=1e-6)


def test_100k_character_inputs_stay_within_the_token_budget(spark, model, long_input, tmp_path, capsys):
    """Every device batch stays within --batch-tokens: a fake device that fails any batch of
    more padded tokens than that is never hit, although every 8th pair has 100,000-character
    sides. They are truncated and scored."""
    path, df = long_input
    budget = 512  # two rows at the artifact's max_seq_len of 256
    with executor_env(spark, **{faults.ENV: f"oom_tokens:{budget}"}):
        rc, summary, err = run_job(main, capsys, input=path, output=tmp_path / "o", model=model, run_date="2026-08-03",
                                   batch_tokens=budget, num_partitions=2)
    assert rc == 0, err
    assert summary["ok"] == len(df) and summary["batch_retries"] == 0 and summary["error"] == 0
    res = read_partition(tmp_path / "o", "2026-08-03").set_index("pair_id")
    huge = df.set_index("pair_id").left_description.str.len() == 100_000
    assert res.truncated[huge.index[huge]].all() and summary["truncated"] == huge.sum()


# -- re-runs: an interrupted run leaves nothing visible ------------------------------------------
def test_interrupted_run_leaves_the_previous_output_and_a_rerun_replaces_it(spark, model, tmp_path, capsys):
    """Day D is written from input v1. A run of D from input v2 is SIGKILLed (driver, JVM, Python
    workers) after some of its tasks wrote their files. Readers still see exactly v1's rows for
    D; the re-run of v2 then gives exactly v2's rows, equal to an uninterrupted run's."""
    out, day = tmp_path / "out", "2026-09-01"
    v1, v2 = tmp_path / "v1.parquet", tmp_path / "v2.parquet"
    pairs_frame(200, seed=21).to_parquet(v1)
    pairs_frame(400, seed=22).assign(pair_id=lambda d: "v2-" + d.pair_id).to_parquet(v2)
    assert run_job(main, capsys, input=v1, output=out, model=model, run_date=day)[0] == 0
    before = read_partition(out, day).sort_values("pair_id", ignore_index=True)

    def kill_once_files_are_written(proc):
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            if len(list(out.glob(".spark-staging-*/**/part-*.parquet"))) >= 2:
                return  # submit() kills the whole process tree when this returns
            time.sleep(0.2)
        raise AssertionError(f"no staged part files appeared (driver exit {proc.poll()})")

    killed = submit("jobs/duplicates.py", ["--input", v2, "--output", out, "--model", model, "--run-date", day,
                                           "--num-partitions", 4, "--max-invalid-fraction", 0],
                    master="local[2]", env={faults.ENV: "stall:3"}, log_dir=tmp_path, name="interrupted",
                    on_start=kill_once_files_are_written, kill_on_return=True)
    assert killed.rc < 0 and killed.summary is None, killed.stderr[-3000:]
    staged = list(out.glob(".spark-staging-*/**/part-*.parquet"))
    assert staged  # the interrupted run did write files ...
    after_kill = read_partition(out, day).sort_values("pair_id", ignore_index=True)
    pd.testing.assert_frame_equal(after_kill, before)  # ... but readers do not see them
    assert spark.read.parquet(str(out)).where(f"run_date = '{day}'").count() == 200

    # The killed run's lease on the date stays live until it is stale (jobs/date_lease.py): a re-run
    # is refused, naming it, until told that run is dead.
    rc, _, err = run_job(main, capsys, input=v2, output=out, model=model, run_date=day)
    assert rc == 2 and "is being written by" in err and "--take-over-run" in err, err
    rc, summary, err = run_job(main, capsys, input=v2, output=out, model=model, run_date=day, take_over_run=True)
    assert rc == 0, err
    assert "whose lease was live: --take-over-run" in err
    rerun = read_partition(out, day)
    assert len(rerun) == 400 and rerun.pair_id.is_unique and rerun.pair_id.str.startswith("v2-").all()
    assert spark.read.parquet(str(out)).where(f"run_date = '{day}'").count() == 400
    rc, _, err = run_job(main, capsys, input=v2, output=tmp_path / "fresh", model=model, run_date=day)
    fresh = read_partition(tmp_path / "fresh", day).set_index("pair_id").sort_index()
    pd.testing.assert_frame_equal(rerun.set_index("pair_id").sort_index(), fresh)


def test_a_failed_run_exits_1_names_the_python_error_and_writes_nothing_visible(spark, model, tmp_path, capsys):
    """Local mode never retries a task, so an injected exception fails the run: exit 1, the
    message is the worker's Python error (not a Java stack frame), no partition appears."""
    path = tmp_path / "in.parquet"
    pairs_frame(50).to_parquet(path)
    with executor_env(spark, **{faults.ENV: "raise_once:0"}):
        rc, summary, err = run_job(main, capsys, input=path, output=tmp_path / "out", model=model, run_date="2026-09-02")
    assert rc == 1 and summary is None
    assert "error: scoring failed: RuntimeError: injected fault (ACCEL_SCORING_FAULT=raise_once:0)" in err
    assert not list((tmp_path / "out").glob("run_date=*"))
