"""Peak resident memory of a command's process tree, by kind of process, read from /proc.

A spark-submit on local[N] is one JVM (the driver, which is also the executor), the job's Python
driver, and the Python workers (pyspark's daemon and the workers it forks). Each is sampled every
`interval` seconds; a kind's peak is the largest sum of its processes' RSS at one sample, and the
largest single worker is kept too. RSS counts pages a forked worker still shares with the daemon
in both, so the workers' sum over-states what they hold together; the single worker's figure
does not. Linux only: elsewhere nothing is sampled and the peaks stay None.
"""
from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

KINDS = ("jvm", "python_driver", "python_workers")
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended while the tree was read
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(root: int) -> list[int]:
    tree, found, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(tree.get(pid, ()))
    return found


def kind(cmdline: str) -> str | None:
    if "java" in cmdline.split(" ", 1)[0]:
        return "jvm"
    if "python" not in cmdline:
        return None
    return "python_workers" if "pyspark.daemon" in cmdline or "pyspark.worker" in cmdline else "python_driver"


def _rss_mb(pid: int) -> tuple[str | None, float]:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None, 0.0
    return kind(cmdline), pages * _PAGE_KB / 1024


class PeakMemory:
    """`with PeakMemory(pid) as peak:` samples the tree under `pid` in a thread until the block
    ends; then `peak.mb` is {kind: peak MB}, plus `largest_worker` and `tree` (all kinds at one
    sample)."""

    def __init__(self, root: int, interval: float = 0.2):
        self.root, self.interval = root, interval
        self.mb: dict[str, float | None] = {k: None for k in (*KINDS, "largest_worker", "tree")}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "PeakMemory":
        if Path("/proc/self/statm").exists():
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def sample(self) -> None:
        sums = dict.fromkeys(KINDS, 0.0)
        largest_worker = 0.0
        for pid in descendants(self.root):
            name, mb = _rss_mb(pid)
            if name:
                sums[name] += mb
                if name == "python_workers":
                    largest_worker = max(largest_worker, mb)
        sums.update(largest_worker=largest_worker, tree=sum(sums[k] for k in KINDS))
        for name, mb in sums.items():
            if mb and (self.mb[name] is None or mb > self.mb[name]):
                self.mb[name] = round(mb, 1)
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)


def cached_in_memory_peak_mb(event_log: Path) -> float:
    """The most a Spark application held on its executors' heaps in persisted blocks at once, from
    its event log (written with spark.eventLog.logBlockUpdates.enabled=true): what a plan that
    persists its rows in memory grows with, however the JVM's heap happens to size itself."""
    held: dict[str, int] = {}
    total = peak = 0
    with open(event_log, encoding="utf-8") as lines:
        for line in lines:
            if '"SparkListenerBlockUpdated"' not in line:
                continue
            info = json.loads(line)["Block Updated Info"]
            if info["Block ID"].startswith("rdd_"):
                total += info["Memory Size"] - held.get(info["Block ID"], 0)
                held[info["Block ID"]] = info["Memory Size"]
                peak = max(peak, total)
    return round(peak / 2**20, 3)


_GC_PAUSE = re.compile(r"Pause .*?(\d+)M->(\d+)M\((\d+)M\)")


def heap_after_gc_peak_mb(gc_log: Path) -> int | None:
    """The JVM's largest heap occupancy just after a collection, from its `-Xlog:gc` file: what the
    heap held at most (live data and garbage no collection had yet reached), as opposed to RSS,
    which follows the heap the collector chose to grow to. None where nothing was collected."""
    after = [int(m.group(2)) for line in gc_log.read_text(encoding="utf-8").splitlines()
             for m in [_GC_PAUSE.search(line)] if m]
    return max(after, default=None)
