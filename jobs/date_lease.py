"""One run writes a run_date at a time: a lease under the output's run folder, taken before any
task runs and renewed while the run lives.

Two runs of one date at once (an Airflow retry while the first attempt still writes, an operator
re-running a date by hand) would each replace the partition at their commit, and interleaved
commits could leave rows of both. So each run writes its own lease file,

    <output>/_runs/run_date=<date>/leases/<application id>.json

then lists the folder. Another run's lease renewed within its `stale_seconds` means that run is
alive: this one deletes its lease and refuses (exit 2, naming the holder). A lease not renewed
for that long is a killed run's, and is taken over (deleted, and said so). Writing before
listing makes the check safe on every FileSystem whose listing shows a finished write (local
disks, HDFS, S3 since its strong consistency): of two runs that start together, at least the
second sees the first, and at worst both refuse and a retry goes through. `take_over` (the jobs'
--take-over-run) deletes live leases too, for a run known to be dead; a run whose lease was taken
cancels its Spark jobs at its next renewal, and `check()`, called before each write and cache
commit, stops it before it commits anything (jobs/runner.py).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import socket
import threading
from typing import Callable

from jobs import hadoop_files
from jobs.cli import LEASE_STALE_SECONDS
from jobs.spark_io import InputError

RENEWALS_PER_STALE = 10  # a live run renews ten times within its stale time


class LeaseLost(RuntimeError):
    """Another run took this run's date over (a stale takeover, or --take-over-run)."""


def lease_folder(output: str, run_date: str) -> str:
    return f"{output}/_runs/run_date={run_date}/leases"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class DateLease:
    """This run's lease on one run_date of one output: `acquire`, then `release` (or let the
    process die: the lease goes stale). `lost` turns true when another run took it over."""

    def __init__(self, spark, output: str, run_date: str, *, job: str, application_id: str,
                 stale_seconds: float = LEASE_STALE_SECONDS, take_over: bool = False,
                 on_lost: Callable[[], None] | None = None):
        self.spark, self.output, self.run_date, self.job = spark, output, run_date, job
        self.application_id, self.stale_seconds, self.take_over = application_id, stale_seconds, take_over
        self.on_lost = on_lost
        self.folder = lease_folder(output, run_date)
        self.path = f"{self.folder}/{application_id}.json"
        self.lost = False
        self.taken_over: list[dict] = []  # the leases this run deleted: stale, or live with take_over
        self._started = _now().isoformat(timespec="seconds")
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self._created: list[str] = []  # folders this run's lease made: removed again if left empty

    def acquire(self) -> None:
        """Take the lease or raise InputError naming the live run that holds the date."""
        self._created = self._absent_folders()
        self._write()
        others = [lease for lease in self._leases() if lease["file"] != self.path.rpartition("/")[2]]
        live = [lease for lease in others if lease["age_seconds"] < lease["stale_seconds"]]
        if live and not self.take_over:
            self.release()
            holder = min(live, key=lambda lease: lease.get("started", ""))
            who = (f"{holder['application_id']} ({holder.get('job')} on {holder.get('host')}, started "
                   f"{holder.get('started')})" if "application_id" in holder
                   else f"the run whose lease {self.folder}/{holder['file']} is being written")
            raise InputError(
                f"run_date={self.run_date} of {self.output} is being written by {who}, lease renewed "
                f"{holder['age_seconds']:.0f} s ago: two runs of one date would mix their rows; wait for it to end, "
                f"or if it is dead, run again with --take-over-run (its lease goes stale "
                f"{holder['stale_seconds']:.0f} s after its last renewal)")
        for lease in others:
            hadoop_files.delete(self.spark, f"{self.folder}/{lease['file']}")
            self.taken_over.append({**lease, "was_live": lease in live})
        if self.taken_over:
            self._write()  # now naming them, so a holder that renewed in between still sees it lost its date
        self._renewer = threading.Thread(target=self._renew, name="date-lease", daemon=True)
        self._renewer.start()

    @property
    def took_over_ids(self) -> list[str]:
        """The application ids of the runs whose leases this one took over (a lease is named after its id)."""
        return [lease.get("application_id") or lease["file"].removesuffix(".json") for lease in self.taken_over]

    def check(self) -> None:
        """Raise LeaseLost once another run took the date over: called before each write and
        commit, since cancelling the Spark jobs reaches only those already running."""
        if self.lost:
            raise LeaseLost(f"run_date={self.run_date} of {self.output} was taken over by another run")

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join()
        self._delete()  # its own file only: a run that took the date over wrote another
        for folder in self._created:  # a run that wrote nothing leaves --output as it found it
            if not hadoop_files.delete_if_empty(self.spark, folder):
                break

    def _absent_folders(self) -> list[str]:
        """The lease folder and those above it, up to --output, that do not exist yet; deepest first."""
        absent, folder = [], self.folder
        while not hadoop_files.exists(self.spark, folder):
            absent.append(folder)
            if folder == self.output:
                break
            folder = folder.rpartition("/")[0]
        return absent

    def _renew(self) -> None:
        interval = self.stale_seconds / RENEWALS_PER_STALE
        while not self._stop.wait(interval):
            try:
                if not hadoop_files.exists(self.spark, self.path) or any(
                        self.application_id in lease.get("took_over", ()) for lease in self._leases()):
                    self.lost = True
                    if self.on_lost:
                        self.on_lost()
                    return
                self._write()
            except Exception:  # noqa: BLE001 - a failed renewal is retried at the next; staleness is the bound
                continue

    def _write(self) -> None:
        lease = {"application_id": self.application_id, "job": self.job, "host": socket.gethostname(),
                 "pid": os.getpid(), "started": self._started, "renewed": _now().isoformat(timespec="milliseconds"),
                 "stale_seconds": self.stale_seconds,
                 # the file name is the application id, also for a lease caught mid-write
                 "took_over": self.took_over_ids}
        hadoop_files.write_text(self.spark, self.path, json.dumps(lease, sort_keys=True))

    def _delete(self) -> None:
        hadoop_files.delete(self.spark, self.path)

    def _leases(self) -> list[dict]:
        """Every lease under the folder with its file name and age (from the FileSystem's
        modification time, so a lease caught mid-write, with nothing to read yet, still counts
        as live until it is stale by the jobs' default)."""
        found = []
        now = _now().timestamp()
        for name, modified in hadoop_files.modified(self.spark, self.folder).items():
            try:
                lease = json.loads(hadoop_files.read_text(self.spark, f"{self.folder}/{name}"))
            except Exception:  # noqa: BLE001 - half written, or deleted since the listing
                if not hadoop_files.exists(self.spark, f"{self.folder}/{name}"):
                    continue  # its run let go
                lease = {}
            found.append({**lease, "file": name, "age_seconds": now - modified,
                          "stale_seconds": float(lease.get("stale_seconds", LEASE_STALE_SECONDS))})
        return found
