"""The default plan's memory does not grow with the rows (issue 32): the run-level plan, each
size a cold spark-submit like a nightly run, ten times the rows at the second. A million pairs
once ran local[2] out of a 2 GB heap because the plan kept its persisted rows in memory; this
fails if it does again (Spark's own account of blocks held on the heap, from the event log), or
if the job's Python driver or a Python worker comes to hold rows (their peak RSS,
bench/memory.py). The full-size figures (200,000 against 2,000,000 pairs) are `make bench`'s
(bench/scale.py). Each run is its own spark-submit, so the test needs no SparkSession and carries
no `spark` mark: it runs once, in the Spark 3.5 part of `make test`."""

from bench import memory
from bench.harness import submit
from tests.jobhelpers import pairs_frame

SIZES = (2_000, 20_000)
GROWTH = 1.3  # issue 32's bound on peak memory over ten times the rows


def test_the_run_level_plan_holds_no_more_memory_at_ten_times_the_rows(compile_artifact, tmp_path):
    model = compile_artifact("embedding")
    runs = {}
    for rows in SIZES:
        data = tmp_path / f"pairs-{rows}.parquet"
        pairs_frame(rows).to_parquet(data)
        events = tmp_path / f"events-{rows}"
        events.mkdir()
        run = submit("duplicates.py", ["--input", str(data), "--output", str(tmp_path / f"out-{rows}"),
                                       "--model", str(model), "--run-date", "2026-01-01", "--dedup", "run",
                                       "--progress-seconds", "3600"],
                     driver_memory="1g", conf={"spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
                                               "spark.eventLog.logBlockUpdates.enabled": "true"})
        assert not run.get("failed") and run.get("exit_code") == 0 and run["rows_out"] == rows, run
        [log] = events.iterdir()
        runs[rows] = {**run["peak_mb"], "cached_in_memory": memory.cached_in_memory_peak_mb(log)}
    small, large = (runs[n] for n in SIZES)
    # Blocks held on the heap: none at all is the design (DISK_ONLY); allow 1 MB of slack.
    assert large["cached_in_memory"] <= small["cached_in_memory"] * GROWTH + 1, runs
    for kind in ("python_driver", "largest_worker"):
        assert large[kind] <= small[kind] * GROWTH, (kind, runs)
