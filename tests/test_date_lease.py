"""One run writes a run_date at a time (issue 31, jobs/date_lease.py): a second run of the date
while the first lives exits 2 naming it and writes nothing; a killed run's lease goes stale and
the next run takes it over; --take-over-run takes a live one, whose run then stops instead of
committing. Never a mix of two runs' rows in one date."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from jobs.date_lease import DateLease, LeaseLost, lease_folder
from jobs.spark_io import InputError
from tests.jobhelpers import pairs_frame, read_partition, run_job
from tests.standalone import submit
from udfs import faults

DAY = "2026-05-01"


def _lease(spark, out: Path, app: str, **kw) -> DateLease:
    return DateLease(spark, str(out), DAY, job="duplicates", application_id=app, **kw)


def _files(out: Path) -> list[str]:
    folder = Path(lease_folder(str(out), DAY))
    return sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) if folder.is_dir() else []  # not .crc


@pytest.mark.spark
def test_a_live_lease_refuses_a_second_run_until_it_is_released(spark, tmp_path):
    first = _lease(spark, tmp_path, "app-1")
    first.acquire()
    second = _lease(spark, tmp_path, "app-2")
    with pytest.raises(InputError, match=rf"^run_date={DAY} of {tmp_path} is being written by app-1 \(duplicates on "
                                         r".*, started .*\), lease renewed 0 s ago: .* run again with --take-over-run"):
        second.acquire()
    assert _files(tmp_path) == ["app-1.json"]  # the refused run left nothing behind
    first.release()
    second.acquire()
    assert second.taken_over == [] and _files(tmp_path) == ["app-2.json"]
    second.release()
    assert _files(tmp_path) == []


@pytest.mark.spark
def test_a_lease_being_written_counts_as_live(spark, tmp_path):
    folder = Path(lease_folder(str(tmp_path), DAY))
    folder.mkdir(parents=True)
    (folder / "app-0.json").write_text("")  # created, its bytes not there yet
    with pytest.raises(InputError, match=r"by the run whose lease .*/app-0\.json is being written"):
        _lease(spark, tmp_path, "app-1").acquire()


@pytest.mark.spark
def test_a_stale_lease_is_taken_over_and_a_live_one_only_when_asked(spark, tmp_path):
    dead = _lease(spark, tmp_path, "app-dead", stale_seconds=0.5)
    dead.acquire()
    dead._stop.set()  # killed: no more renewals, no release
    dead._renewer.join()
    time.sleep(0.7)
    lost = threading.Event()
    holder = _lease(spark, tmp_path, "app-holder", stale_seconds=0.5, on_lost=lost.set)
    holder.acquire()
    assert [(t["application_id"], t["was_live"]) for t in holder.taken_over] == [("app-dead", False)]
    with pytest.raises(InputError, match="app-holder"):
        _lease(spark, tmp_path, "app-late").acquire()
    forced = _lease(spark, tmp_path, "app-forced", take_over=True)
    forced.acquire()
    # by file: the holder rewrites its lease every 0.05 s, and one caught mid-write has no fields yet
    assert [(t["file"], t["was_live"]) for t in forced.taken_over] == [("app-holder.json", True)]
    assert lost.wait(5) and holder.lost  # the holder's next renewal finds its lease gone
    with pytest.raises(LeaseLost):  # and the runner's check before each write and commit stops it
        holder.check()
    holder.release()
    forced.release()
    assert _files(tmp_path) == []


@pytest.mark.spark
def test_a_killed_run_holds_its_date_until_its_lease_is_stale_and_the_next_run_writes_it_whole(
        spark, compile_artifact, tmp_path, capsys):
    """A: a spark-submit that stalls mid-scoring, holding the date. B, started meanwhile, exits 2
    naming A. A is SIGKILLed; its lease goes stale after its --lease-stale-seconds and B's re-run
    takes the date over: exactly B's rows, no lease left."""
    from jobs.duplicates import main

    model = compile_artifact("pair-classification")
    capsys.readouterr()
    out, a_in, b_in = tmp_path / "out", tmp_path / "a.parquet", tmp_path / "b.parquet"
    pairs_frame(200, seed=31).to_parquet(a_in)
    pairs_frame(120, seed=32).assign(pair_id=lambda d: "b-" + d.pair_id).to_parquet(b_in)
    seen = {}

    def run_b_while_a_holds_the_date(proc):
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline and not _files(out):
            time.sleep(0.2)
        assert _files(out), f"the holder took no lease (driver exit {proc.poll()})"
        lease = Path(lease_folder(str(out), DAY)) / _files(out)[0]
        text = lease.read_text()
        while not text:  # the holder rewrites it every 0.3 s: catch it whole
            time.sleep(0.05)
            text = lease.read_text()
        seen["holder"] = json.loads(text)
        seen["b"] = run_job(main, capsys, input=b_in, output=out, model=model, run_date=DAY)

    a = submit("jobs/duplicates.py", ["--input", a_in, "--output", out, "--model", model, "--run-date", DAY,
                                      "--num-partitions", 4, "--lease-stale-seconds", 3],
               master="local[2]", env={faults.ENV: "stall:3"}, log_dir=tmp_path, name="holder",
               on_start=run_b_while_a_holds_the_date, kill_on_return=True)
    assert a.rc < 0 and a.summary is None, a.stderr[-3000:]
    rc, _, err = seen["b"]
    holder = seen["holder"]["application_id"]
    assert rc == 2, err
    assert f"is being written by {holder} (accel-scoring-duplicates on " in err and seen["holder"]["started"] in err
    assert not (out / f"run_date={DAY}").exists()
    time.sleep(3.5)  # A's last renewal is now more than its --lease-stale-seconds ago
    rc, summary, err = run_job(main, capsys, input=b_in, output=out, model=model, run_date=DAY)
    assert rc == 0, err
    assert f"took over run_date={DAY} from {holder}, whose lease was stale" in err
    assert summary["took_over_from"] == [holder]
    rows = read_partition(out, DAY)
    assert len(rows) == 120 and rows.pair_id.is_unique and rows.pair_id.str.startswith("b-").all()
    assert _files(out) == []
