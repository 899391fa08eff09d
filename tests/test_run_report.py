"""The run report (jobs/report.py): drawn from a summary alone, written by every job, and read
the way a person reads it, in a headless Chromium with no network."""
import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from jobs import report, timeline
from jobs.cost import run_cost
from tests.jobhelpers import pairs_frame

REPO = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--host-resolver-rules=MAP * ~NOTFOUND"]  # the page must need nothing from a network

# [partition, attempt, task_started, batch_ended, scored], as udfs/scorer.py emits them.
BATCHES = [[0, 0, 100.0, 101.0, 10], [0, 0, 100.0, 102.5, 5], [1, 0, 100.5, 103.0, 20], [2, 0, 100.0, 112.0, 7]]


def canned_summary(**overrides) -> dict:
    tasks = [{"host": "ip-10-0-0-1", "device": "cpu", "instance_type": "c7i.xlarge", "partition": p, "attempt": 0,
              **timeline.per_task(BATCHES)[(p, 0)]} for p in (0, 1, 2)]
    return {"job": "accel-scoring-duplicates", "run_date": "2026-01-02", "input": "in/<pairs>.parquet", "output": "out",
            "rows_in": 42, "rows_out": 42, "ok": 38, "invalid": 3, "error": 1, "truncated": 2, "bad_fraction": 4 / 42,
            "invalid_by_reason": {"null_id": 1, "duplicate_id": 2, "null_text": 0, "blank_text": 0},
            "wall_seconds": 20.0, "scoring_seconds": 12.0, "rows_per_second": 3.5, "engine_seconds": 6.0,
            "tokenize_seconds": 2.0, "udf_seconds": 9.0, "backend": "onnx", "devices": ["cpu"], "engine_loads": 1,
            "batch_retries": 0, "model": "tiny@7", "task": "pair-classification", "real_tokens": 900,
            "padded_tokens": 1000, "padding_efficiency": 0.9, "spark_application_id": "local-1", "tasks": tasks,
            "timeline": timeline.buckets(BATCHES, 100.0, 112.0), "scored_unit": "rows", "dedup": {"level": "batch"},
            "exit_code": 0, "failure": None, "cost": run_cost(tasks, 12.0, 42, instance_type="c7i.xlarge"), **overrides}


def test_batches_give_per_task_seconds_and_counts_and_a_bounded_timeline():
    assert timeline.per_task(BATCHES) == {(0, 0): {"seconds": 2.5, "scored": 15}, (1, 0): {"seconds": 2.5, "scored": 20},
                                          (2, 0): {"seconds": 12.0, "scored": 7}}
    tl = timeline.buckets(BATCHES, 100.0, 112.0)
    assert (tl["start"], tl["bucket_seconds"], tl["scored"]) == (100.0, 1.0, [0, 10, 5, 20] + [0] * 7 + [7])
    long_run = [[p, 0, 0.0, float(s), 1] for p in range(100) for s in range(1, 36_001, 60)]  # 10 h, 60,000 batches
    tl = timeline.buckets(long_run, 0.0, 36_000.0)
    assert len(tl["scored"]) == timeline.MAX_BUCKETS and sum(tl["scored"]) == len(long_run)
    # The chart spans the whole scoring stage: here 4 s of counting before the first batch and 8 s after it.
    tl = timeline.buckets(BATCHES, 96.0, 120.0)
    assert len(tl["scored"]) * tl["bucket_seconds"] == pytest.approx(24.0) and tl["scored"][:4] == [0] * 4


def test_report_is_self_contained_and_marks_the_straggler():
    page = report.render(canned_summary())
    assert page.startswith("<!doctype html>") and "<script" not in page
    assert not re.search(r"""(src|href)\s*=|url\(|@import""", page)  # nothing to fetch
    assert "in/&lt;pairs&gt;.parquet" in page  # summary text is escaped
    assert page.count('class="straggler"') == 1 and "partition 2 (12.0 s)" in page
    assert 'id="usd-per-million-rows">$' in page and "c7i.xlarge" in page


def test_report_without_a_price_says_why():
    summary = canned_summary()
    page = report.render({**summary, "cost": run_cost(summary["tasks"], 12.0, 42, instance_type="x9.huge")})
    assert 'id="usd-per-million-rows">–<' in page and "no on-demand price for instance type &#x27;x9.huge&#x27;" in page


@pytest.fixture(scope="module")
def job_run(spark, compile_artifact, tmp_path_factory):
    """A tiny duplicates run on two partitions, priced as one c7i.xlarge."""
    tmp = tmp_path_factory.mktemp("report")
    df = pd.concat([pairs_frame(120), pd.DataFrame([{"pair_id": None, "left_title": "x", "right_title": "y"}])],
                   ignore_index=True)
    df.to_parquet(tmp / "in.parquet")
    from jobs.duplicates import main

    argv = ["--input", str(tmp / "in.parquet"), "--output", str(tmp / "out"), "--run-date", "2026-01-02",
            "--model", str(compile_artifact("pair-classification")), "--num-partitions", "2",
            "--arrow-batch-rows", "32", "--progress-seconds", "3600", "--instance-type", "c7i.xlarge"]
    assert main(argv) == 0
    runs = tmp / "out" / "_runs" / "run_date=2026-01-02"
    return {"summary": json.loads((runs / "summary.json").read_text()), "report": runs / "report.html", "tmp": tmp}


@pytest.mark.spark
def test_job_summary_prices_the_run_and_times_its_tasks(job_run):
    s = job_run["summary"]
    cost = s["cost"]
    assert cost["instance_type"] == "c7i.xlarge" and cost["usd_per_hour"] == 0.1785 and cost["instances"] == 1
    assert cost["instance_hours"] == pytest.approx(s["scoring_seconds"] / 3600, rel=1e-3)
    assert cost["usd"] == pytest.approx(0.1785 * s["scoring_seconds"] / 3600, rel=1e-3)
    assert cost["usd_per_million_rows"] == pytest.approx(cost["usd"] / s["rows_out"] * 1e6, rel=1e-3)
    assert {t["partition"] for t in s["tasks"]} == {0, 1}
    assert sum(t["scored"] for t in s["tasks"]) == sum(s["timeline"]["scored"]) == s["rows_out"] == 121
    assert s["scored_unit"] == "rows" and s["exit_code"] == 0 and s["failure"] is None
    assert len(s["timeline"]["scored"]) * s["timeline"]["bucket_seconds"] == pytest.approx(s["scoring_seconds"], rel=1e-3)
    assert all(0 < t["seconds"] <= s["wall_seconds"] for t in s["tasks"])
    assert job_run["report"].read_text().startswith("<!doctype html>")


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.spark
@pytest.mark.skipif(_chromium() is None, reason="Chromium is not installed and could not be (.ci/run installs "
                                                "Debian's chromium with apt-get when /usr/bin/chromium is missing)")
def test_report_in_a_headless_browser_shows_rows_rate_and_cost(job_run):
    s, page = job_run["summary"], job_run["report"].as_uri()
    browser = [_chromium(), *CHROMIUM_FLAGS]
    profile = job_run["tmp"] / "chromium-profile"
    dom = subprocess.run([*browser, f"--user-data-dir={profile}-dom", "--dump-dom", page],
                         capture_output=True, text=True, timeout=180, check=True).stdout
    shown = dict(re.findall(r'<span class="big" id="([\w-]+)">([^<]*)</span>', dom))
    assert shown["rows-out"] == f"{s['rows_out']:,}"
    # shown to one decimal: 156.75 reads 156.8, half a tenth away, so allow that half and a hair of float
    assert float(shown["rows-per-second"].replace(",", "")) == pytest.approx(s["rows_per_second"], abs=0.05 + 1e-9)
    assert float(shown["usd-per-million-rows"].lstrip("$").replace(",", "")) == pytest.approx(
        s["cost"]["usd_per_million_rows"], rel=5e-3)
    assert "per million rows" in dom and "c7i.xlarge" in dom
    screenshot = REPO / "out" / "run-report.png"  # out/ is git-ignored: one picture to look at, not to commit
    screenshot.parent.mkdir(exist_ok=True)
    subprocess.run([*browser, f"--user-data-dir={profile}-png", f"--screenshot={screenshot}", "--window-size=1000,1800",
                    page], capture_output=True, timeout=180, check=True)
    assert screenshot.stat().st_size > 10_000


def test_live_samples_give_rows_inside_arrow_batches_and_none_without_datagrams():
    samples = [(100.0, 0), (100.5, 40), (101.0, 40), (101.5, 90), (103.0, 121)]  # the last: Spark's own count
    tl = timeline.from_samples(samples, 100.0, 103.0)
    assert sum(tl["scored"]) == 121 and len(tl["scored"]) == 3 and "device batches" in tl["counted"]
    tl = timeline.from_samples(samples, 90.0, 110.0)  # the scoring stage began 10 s before the first sample
    assert tl["scored"][:10] == [0] * 10 and sum(tl["scored"]) == 121 and len(tl["scored"]) == 20
    assert timeline.from_samples([(100.0, 0), (101.0, 0), (102.0, 121)], 100.0, 102.0) is None  # nothing arrived


def test_executors_lost_and_s3_retries_show_only_where_there_were_any():
    quiet = report.render({**canned_summary(), "executors_left": [],
                           "s3": {"boto3_retries": {"driver": 0, "workers": 0}, "s3a_driver_jvm": {"requests": 0}}})
    assert "executors-left" not in quiet and "s3-retries" not in quiet
    left = {"id": "3", "host": "10.0.0.7", "decommissioned": True, "removed": True,
            "reason": "worker <b>decommissioned</b>"}
    page = report.render({**canned_summary(), "executors_left": [left],
        "s3": {"boto3_retries": {"driver": 0, "workers": 2}, "s3a_driver_jvm": {"requests": 501, "throttled": 3,
                                                                                  "retries": 0}}})
    assert "<td>3</td><td>10.0.0.7</td><td>decommissioned</td><td>worker &lt;b&gt;decommissioned&lt;/b&gt;</td>" in page
    assert "2 on the workers; s3a on the driver made 501 requests, 3 throttled, 0 retried" in page


def test_a_run_level_report_counts_texts_where_it_counts_texts_and_shows_a_failed_run():
    """Issue #25: the demo's headline said 10,000 rows while its chart, task bars and devices
    table summed the 8,877 distinct texts under the name of rows."""
    tasks = [{"host": "h", "device": "cpu", "partition": p, "attempt": 0, **timeline.per_task(BATCHES)[(p, 0)]}
             for p in (0, 1, 2)]
    failure = "4 of 42 rows invalid or failed (9.52% > --max-invalid-fraction 1.00%); all rows were written"
    page = report.render(canned_summary(tasks=tasks, scored_unit="texts", dedup={"level": "run", "units": 42,
                                                                                  "units_scored": 42},
                                        exit_code=1, failure=failure))
    assert f'id="outcome" class="failed">failed, exit 1: {html.escape(failure)}' in page
    assert 'id="scored">42</span>distinct texts scored' in page
    assert "Texts scored per second over the scoring stage" in page and "texts/s</text>" in page
    assert "2.50 s, 15 texts" in page and "<th>texts scored</th>" in page and "rows/s</title>" not in page
    assert 'id="outcome" class="passed">passed, exit 0' in report.render(canned_summary())


def test_a_table_output_shows_its_snapshot_on_the_page_and_in_the_text_summary():
    from jobs import summary_text

    table = {"format": "iceberg", "name": "lake.scores.duplicates", "snapshot_id": 4471564758919993479,
             "parent_snapshot_id": 3340045313514743123, "committed_at": "2026-11-01T02:03:04", "operation": "overwrite",
             "added_records": 30, "deleted_records": 40, "added_files": 2, "deleted_files": 2}
    summary = {**canned_summary(), "table": table, "written_to": "iceberg:lake.scores.duplicates run_date=2026-11-01"}
    line = ("Iceberg lake.scores.duplicates snapshot 4471564758919993479 (parent 3340045313514743123): "
            "30 rows added, 40 replaced")
    assert line in report.render(summary) and "iceberg:lake.scores.duplicates run_date=2026-11-01" in report.render(summary)
    text = summary_text.render(summary)
    assert text.splitlines()[0].endswith("-> iceberg:lake.scores.duplicates run_date=2026-11-01") and line in text
    registered = {"format": "parquet", "name": "scores.duplicates", "partition": "run_date=2026-11-01",
                  "location": "file:/out"}
    assert "scores.duplicates (Parquet) partition run_date=2026-11-01 registered" in report.render(
        {**canned_summary(), "table": registered})
    assert 'id="table"' not in report.render(canned_summary())


def test_console_and_page_name_the_seconds_spent_sizing_the_input_apart_from_scoring():
    from jobs import summary_text

    assert "time      scoring 12.0 s of 20.0 s wall;" in summary_text.render(canned_summary())
    sized = summary_text.render({**canned_summary(), "sizing_seconds": 1.5})
    assert "time      scoring 12.0 s after 1.5 s sizing the input of 20.0 s wall;" in sized
    page = report.render({**canned_summary(), "sizing_seconds": 1.5})
    assert "s scoring (after 1.5 s sizing the input; 20.0 s in all)" in page
    assert "s scoring (20.0 s in all)" in report.render(canned_summary())
