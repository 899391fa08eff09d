"""What a person sees while a job runs: its own lines on stderr and only the JSON summary on
stdout, a Spark console without INFO lines, and progress that counts rows inside running tasks."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jobs.progress import RowCounts
from tests.jobhelpers import pairs_frame

REPO = Path(__file__).resolve().parent.parent
CLEAN_ENV = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/local/bin:/usr/bin:/bin"}
PROGRESS = re.compile(r"^progress: (\d+)/(\d+) rows", re.M)


def test_a_bi_encoder_pair_counts_as_scored_once_both_its_sides_are():
    from udfs.model_outputs import Tokenized, rows_done

    enc = type("Enc", (), {"lengths": np.ones(3)})()
    seen = []
    on_rows = rows_done(Tokenized(enc, 0.0, rows=np.array([[0, 0, 1], [1, 2, 2]])), seen.append)
    for rows in ([0], [2], [1]):
        on_rows(np.array(rows))
    assert seen == [0, 1, 3]


def test_row_counts_keep_the_newest_attempt_of_each_partition_and_ignore_strangers():
    counts = RowCounts("tok")
    for message in ["tok 0 0 100", "tok 1 0 50", "tok 0 0 300", "tok 0 0 200",  # out of order: 300 stays
                    "tok 1 1 10",  # a retry of partition 1 starts again from its own count
                    "tok 1 0 400",  # a late datagram of the failed attempt changes nothing
                    "other 0 0 9999", "tok x 0 y", "garbage"]:
        counts.record(message)
    assert counts.total() == 310


def _progress(out, total: int, **kw):
    """A driver's Progress without Spark: a local master, so it listens on loopback."""
    from types import SimpleNamespace

    from jobs.progress import Progress

    spark = SimpleNamespace(sparkContext=SimpleNamespace(getConf=lambda: {"spark.master": "local[2]"}))
    return Progress(spark, total, 3600, out, **kw)


def test_progress_says_what_follows_once_all_is_scored_and_a_slow_rate_is_not_zero():
    """Issue #25: `5/5 texts (100%), 0 texts/s`, then 19 s at 100% without a word before `done:`."""
    import time

    out = io.StringIO()
    with _progress(out, 5, unit="texts", then="joining them back to the 8 rows and writing out/run_date=x") as p:
        p.counts.record(f"{p.address.token} 0 0 5")
        deadline = time.monotonic() + 10
        while "now joining" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.1)
        p._t0 = time.monotonic() - 19
        line = p.line(5)
    assert re.search(r"^progress: all 5 texts scored in \d+s; now joining them back to the 8 rows and writing "
                     r"out/run_date=x$", out.getvalue(), re.M), out.getvalue()
    assert "0.26 texts/s" in line, line


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_worker_messages_in_local_mode_print_whole_above_the_progress_bar():
    """Issue #25: a worker's `accel-scoring: loaded ...` written to the shared terminal cut into the
    bar (`[00:04<?, ?texts/s]accel-scoring: single texts: ...`). Now it comes to the driver, which
    writes it on a line of its own and redraws the bar below it."""
    import time

    from udfs import progress as worker

    out = _Terminal()
    message = "accel-scoring: loaded tiny@7 on backend onnx, device cpu, in 0.2s"
    with _progress(out, 10, unit="texts") as bar:
        reporter = worker.ProgressReporter(bar.address, 0, 0)
        with worker.relayed(reporter):
            worker.say(message)
        reporter.add(4)
        deadline = time.monotonic() + 10
        while message not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        reporter.close()
    segments = [seg for line in out.getvalue().split("\n") for seg in line.split("\r")]
    assert message in segments, out.getvalue()  # alone on its line, not glued to a bar
    assert any("texts/s]" in seg or "texts]" in seg for seg in segments)  # and the bar goes on below
    assert not any(message in seg and seg != message for seg in segments)


def test_outside_local_mode_a_worker_message_goes_to_the_executor_log(capsys):
    from udfs import progress as worker

    address = worker.ProgressAddress("127.0.0.1", 9, "tok", relay=False)  # a cluster's driver: no relay
    with worker.relayed(worker.ProgressReporter(address, 0, 0)):
        worker.say("accel-scoring: single texts: tokenizers")
    assert capsys.readouterr().err == "accel-scoring: single texts: tokenizers\n"


@pytest.mark.spark  # so that `make test-spark4` runs it with Spark 4's log4j too
def test_the_local_console_drops_blockmanagers_rereading_warning_and_keeps_its_others(tmp_path):
    """`WARN BlockManager: Block rdd_63_0 already exists on this machine; not re-adding it` cut into
    the progress bar (issue #25). It marks no work done twice (jobs/conf/log4j2.properties says
    why), so jobs/conf/log4j2.properties drops that message alone: logged here through Spark's own
    log4j jars with that file as the configuration."""
    import pyspark

    source = tmp_path / "Log.java"
    source.write_text("""public class Log { public static void main(String[] a) {
        org.apache.logging.log4j.Logger l = org.apache.logging.log4j.LogManager.getLogger(
            "org.apache.spark.storage.BlockManager");
        l.warn("Block rdd_63_0 already exists on this machine; not re-adding it");
        l.warn("Block rdd_63_0 could not be removed as it was not found on disk or in memory");
        l.info("Found block rdd_63_0 locally"); } }""")
    jars = Path(pyspark.__file__).parent / "jars" / "*"
    done = subprocess.run(["java", f"-Dlog4j2.configurationFile={REPO / 'jobs' / 'conf' / 'log4j2.properties'}",
                           "-cp", str(jars), str(source)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr.splitlines()[-1].endswith(
        "WARN BlockManager: Block rdd_63_0 could not be removed as it was not found on disk or in memory"), done.stderr
    assert "already exists" not in done.stderr and "Found block" not in done.stderr


@pytest.fixture(scope="module")
def pairs_parquet(tmp_path_factory):
    path = tmp_path_factory.mktemp("in") / "pairs.parquet"
    pairs_frame(2000).to_parquet(path)
    return path


@pytest.mark.spark
@pytest.mark.parametrize("dedup", ["batch", "run"])
def test_progress_counts_rows_while_two_partitions_run(spark, compile_artifact, pairs_parquet, tmp_path, capsys,
                                                       monkeypatch, dedup):
    """What the driver hears, not when it prints: how often the line is sampled depends on the
    machine's speed (the clean-shell test below watches the printed line on a slowed device).
    Per batch it counts pairs; a run that embeds each distinct text once counts those texts."""
    import pandas as pd

    from jobs.duplicates import main
    from jobs.progress import RowCounts
    from udfs.workloads import Duplicates

    heard, record = [], RowCounts.record
    monkeypatch.setattr(RowCounts, "record", lambda self, message: heard.append(message) or record(self, message))
    rc = main(["--input", str(pairs_parquet), "--output", str(tmp_path / "out"),
               "--model", str(compile_artifact("embedding")), "--run-date", "2026-01-02", "--dedup", dedup,
               "--num-partitions", "2", "--arrow-batch-rows", "50", "--progress-seconds", "0.05"])
    err = capsys.readouterr().err
    assert rc == 0, err
    frame = pd.read_parquet(pairs_parquet)
    unit, total = "rows", 2000
    if dedup == "run":
        unit, total = "texts", len(set(Duplicates().side(frame, "left")) | set(Duplicates().side(frame, "right")))
    progress = re.compile(rf"^progress: (\d+)/(\d+) {unit}", re.M)
    counts = [int(m.group(1)) for m in progress.finditer(err)]
    assert {int(m.group(2)) for m in progress.finditer(err)} == {total}
    assert counts == sorted(counts), counts  # no retries here, so the count never goes back
    assert counts[-1] == total
    # Each partition's count arrives after every 50-row Arrow batch, rising to all its rows;
    # finished tasks alone could only say 0 and the partition's total.
    by_partition: dict[str, list[int]] = {}
    for message in heard:
        _, partition, _, rows = message.split()
        by_partition.setdefault(partition, []).append(int(rows))
    assert sorted(by_partition) == ["0", "1"]
    assert sum(max(rows) for rows in by_partition.values()) == total
    for rows in by_partition.values():
        assert len({r for r in rows if 0 < r < max(rows)}) >= 10, rows


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["spark-submit", "python"])
def test_a_clean_shell_gets_the_summary_alone_on_stdout_and_a_quiet_stderr(launcher, compile_artifact,
                                                                          pairs_parquet, tmp_path):
    """As the README shows it: the venv's own launcher, nothing activated or exported."""
    venv_bin = Path(sys.executable).parent
    # One Arrow batch per partition, on a device that takes 100 ms a batch: rows must count as
    # their device batches finish, not only when the partition's one Arrow batch ends.
    cmd = [str(venv_bin / launcher), "jobs/duplicates.py", "--input", str(pairs_parquet),
           "--output", str(tmp_path / "out"), "--model", str(compile_artifact("embedding")),
           "--run-date", "2026-01-02", "--dedup", "batch", "--num-partitions", "2", "--arrow-batch-rows", "5000",
           "--batch-tokens", "256", "--progress-seconds", "0.2"]
    env = dict(CLEAN_ENV, ACCEL_SCORING_FAULT="slow_ms:100")
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stdout_lines = proc.stdout.strip().splitlines()
    assert len(stdout_lines) == 1, proc.stdout[-2000:]
    summary = json.loads(stdout_lines[0])
    assert summary["rows_out"] == 2000
    err = proc.stderr
    assert "scoring 2,000 rows from" in err
    assert "done: 2,000 of 2,000 rows" in err
    (route,) = summary["single_text_tokenizer"]  # a bi-encoder's sides are single texts
    assert f"\n  tokenizer single texts: {route}\n" in err
    assert re.search(r"^  cost: ", err, re.M)
    assert not re.search(r"^\S+ \S+ INFO ", err, re.M), err[:3000]  # log4j INFO lines
    assert "Traceback" not in err
    counts = [int(m.group(1)) for m in PROGRESS.finditer(err)]
    assert counts == sorted(counts) and counts[-1] == 2000, counts
    assert len({c for c in counts if 0 < c < 2000} - {1000}) >= 2, counts
