"""A real Spark standalone cluster for tests: one master and N workers from the installed pyspark.

Everything listens on 127.0.0.1 only (SPARK_LOCAL_IP, --host) on ephemeral ports. Each worker can
advertise accelerator addresses through a discovery script, the way a GPU or Inferentia host
does (`spark.worker.resource.<name>.amount` + `.discoveryScript`), so Spark's resource scheduler
hands every task an address even though the engines under test run on the CPU.

Logs (master, workers, executors' stdout/stderr under each worker's work dir, drivers) stay in
the cluster's folder, which pytest keeps after the run; `stop()` always ends every process the
cluster started, including Python workers that left the JVMs' process groups.

Linux only: process trees and listening sockets are read from /proc.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyspark

REPO = Path(__file__).resolve().parents[1]
SPARK_HOME = Path(pyspark.__file__).parent
LOCALHOST = "127.0.0.1"
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM it when the test process dies, however that happens
    (prctl PR_SET_PDEATHSIG), so a killed pytest leaves no master, worker or driver behind."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
    except OSError:
        pass


def _spark_env(root: Path, **extra: str) -> dict[str, str]:
    conf_dir = root / "conf"  # empty: no spark-defaults.conf or spark-env.sh from the machine
    conf_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(SPARK_HOME=str(SPARK_HOME), SPARK_CONF_DIR=str(conf_dir), SPARK_LOCAL_IP=LOCALHOST,
               SPARK_LOG_DIR=str(root / "logs"), SPARK_DAEMON_MEMORY="256m",
               # Short-lived test JVMs: C1 only and a serial GC start faster on two shared cores.
               SPARK_DAEMON_JAVA_OPTS=FAST_JVM, SPARK_LAUNCHER_OPTS=FAST_JVM,
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    env.update(extra)
    return env


class StandaloneCluster:
    """`with StandaloneCluster(root, resources={"gpu": [["0"], ["1"]]}) as cluster: ...`

    Args:
        root: a folder for scripts, work dirs and logs.
        resources: resource name -> the addresses each worker advertises (one list per worker; an
            empty list: that worker has none of the resource); the number of lists is the number
            of workers.
        workers: how many workers when no resources are given.
        cores, memory: what each worker offers (`--cores`, `--memory`); `cores` may be one
            count per worker.
    """

    def __init__(self, root: Path, resources: dict[str, list[list[str]]] | None = None, *, workers: int = 2,
                 cores: int | list[int] = 1, memory: str = "1g", start_timeout: float = 90.0,
                 worker_conf: dict[str, str] | None = None):
        self.root = Path(root)
        self.resources = resources or {}
        counts = {len(per_worker) for per_worker in self.resources.values()}
        if len(counts) > 1:
            raise ValueError(f"every resource needs one address list per worker, got {self.resources}")
        self.workers = counts.pop() if counts else workers
        self.cores = list(cores) if isinstance(cores, (list, tuple)) else [cores] * self.workers
        if len(self.cores) != self.workers:
            raise ValueError(f"{len(self.cores)} core counts for {self.workers} workers")
        self.memory, self.start_timeout = memory, start_timeout
        self.worker_conf = worker_conf or {}
        self.master_url: str | None = None
        self._procs: list[tuple[str, subprocess.Popen, Path]] = []

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "StandaloneCluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        log = self._launch("master", ["org.apache.spark.deploy.master.Master", "--host", LOCALHOST,
                                      "--port", "0", "--webui-port", "0"], _spark_env(self.root))
        match = self._wait_for(log, r"Starting Spark master at (spark://\S+)")
        self.master_url = match.group(1)
        self._wait_for(log, r"New state: ALIVE")
        logs = [self._start_worker(i) for i in range(self.workers)]  # in parallel: JVM start-up dominates
        for log in logs:
            self._wait_for(log, r"Successfully registered with master")

    def _start_worker(self, i: int) -> Path:
        home = self.root / f"worker-{i}"
        home.mkdir(parents=True, exist_ok=True)
        opts = [f"-D{key}={value}" for key, value in self.worker_conf.items()]
        for name, per_worker in self.resources.items():
            if not per_worker[i]:  # a worker without this resource advertises nothing
                continue
            script = home / f"discover-{name}.sh"
            script.write_text("#!/bin/sh\n# what a GPU / Neuron host's discovery script prints\n"
                              f"echo '{json.dumps({'name': name, 'addresses': per_worker[i]})}'\n")
            script.chmod(0o755)
            opts += [f"-Dspark.worker.resource.{name}.amount={len(per_worker[i])}",
                     f"-Dspark.worker.resource.{name}.discoveryScript={script}"]
        env = _spark_env(home, SPARK_WORKER_OPTS=" ".join(opts), SPARK_WORKER_DIR=str(home / "work"))
        log = self._launch(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", "--host", LOCALHOST,
                                           "--port", "0", "--webui-port", "0", "--cores", str(self.cores[i]),
                                           "--memory", self.memory, "--work-dir", str(home / "work"),
                                           self.master_url], env)
        return log

    def _launch(self, name: str, args: list[str], env: dict) -> Path:
        log = self.root / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args], env=env, cwd=self.root,
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, preexec_fn=_die_with_parent)
        self._procs.append((name, proc, log))
        return log

    def _wait_for(self, log: Path, pattern: str) -> re.Match:
        deadline = time.monotonic() + self.start_timeout
        proc = next(p for _, p, l in self._procs if l == log)
        while time.monotonic() < deadline:
            match = re.search(pattern, log.read_text(errors="replace"))
            if match:
                return match
            if proc.poll() is not None:
                raise RuntimeError(f"{log.name}: exited with {proc.returncode} before {pattern!r}\n{tail(log)}")
            time.sleep(0.2)
        raise TimeoutError(f"{log.name}: no {pattern!r} within {self.start_timeout:.0f}s\n{tail(log)}")

    def stop(self, grace: float = 10.0) -> None:
        """End every process the cluster started: JVMs, executors and their Python workers."""
        roots = [p.pid for _, p, _ in self._procs if p.poll() is None]
        kill_tree(roots, grace)
        for _, proc, _ in self._procs:
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILLed above
                pass

    def decommission_worker(self, i: int) -> None:
        """SIGPWR to worker i, as a Spot interruption notice handler sends it: with
        `spark.decommission.enabled` in its `worker_conf`, the worker stops taking executors and
        decommissions its executors, which migrate their blocks and leave."""
        workers = [p for name, p, _ in self._procs if name.startswith("worker-")]
        os.kill(workers[i].pid, signal.SIGPWR)  # spark-class execs the JVM: this pid is the worker's

    # -- inspection ---------------------------------------------------------------------------
    def pids(self) -> list[int]:
        """Every live process of the cluster: daemons, executors, Python daemons and workers."""
        roots = [p.pid for _, p, _ in self._procs if p.poll() is None]
        return roots + [d for r in roots for d in descendants(r)]

    def worker_log(self, i: int) -> str:
        return next(log for name, _, log in self._procs if name == f"worker-{i}").read_text(errors="replace")

    def logs(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*") if p.is_file() and (p.suffix == ".log" or p.name in ("stderr", "stdout")))

    def describe_logs(self, lines: int = 40) -> str:
        return "\n".join(f"== {p} ==\n{tail(p, lines)}" for p in self.logs())

    def submit(self, job: str | Path, args: list, *, conf: dict | None = None, env: dict | None = None,
               name: str = "job", timeout: float = 300.0, **kw) -> "Submitted":
        base = {"spark.cores.max": str(sum(self.cores)), "spark.executor.cores": str(min(self.cores)),
                "spark.executor.memory": "512m", "spark.task.maxFailures": "4"}
        return submit(job, args, master=self.master_url, conf={**base, **(conf or {})}, env=env,
                      log_dir=self.root, name=name, timeout=timeout, **kw)


class Submitted:
    """A finished spark-submit: exit code, output, and the run summary's JSON line."""

    def __init__(self, rc: int, stdout: str, stderr: str, seconds: float, log: Path):
        self.rc, self.stdout, self.stderr, self.seconds, self.log = rc, stdout, stderr, seconds, log
        lines = [l for l in stdout.splitlines() if l.startswith("{")]
        self.summary = json.loads(lines[-1]) if lines else None


def submit(job: str | Path, args: list, *, master: str, conf: dict | None = None, env: dict | None = None,
           log_dir: Path, name: str = "job", timeout: float = 300.0, on_start=None,
           kill_on_return: bool = False) -> Submitted:
    """Run `spark-submit job args` with test-friendly settings; the driver binds 127.0.0.1 only.

    Executors' Python workers import this checkout (spark.executorEnv.PYTHONPATH), not an
    installed copy. `on_start(proc)` runs in this thread while the job runs (to watch it); with
    `kill_on_return`, the driver and everything it started are SIGKILLed as soon as it returns,
    as when a node or a scheduler kills a run (no shutdown hooks, no clean-up).
    """
    log_dir = Path(log_dir)
    settings = {
        "spark.ui.enabled": "false", "spark.driver.host": LOCALHOST, "spark.driver.bindAddress": LOCALHOST,
        "spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2", "spark.python.worker.reuse": "true",
        "spark.executorEnv.PYTHONPATH": str(REPO), "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": FAST_JVM, "spark.executor.extraJavaOptions": FAST_JVM,
        **(conf or {}),
    }
    cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master]
    for key, value in settings.items():
        cmd += ["--conf", f"{key}={value}"]
    cmd += [str(REPO / job), *map(str, args), "--progress-seconds", "3600"]
    full_env = _spark_env(log_dir, PYTHONPATH=str(REPO), **(env or {}))
    out_path, err_path = log_dir / f"{name}.stdout", log_dir / f"{name}.log"
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd, env=full_env, cwd=log_dir, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True, preexec_fn=_die_with_parent)
        try:
            if on_start is not None:
                on_start(proc)
            if kill_on_return:
                kill_tree([proc.pid], first=signal.SIGKILL)
            proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None or descendants(proc.pid):
                kill_tree([proc.pid])
            proc.wait()
    return Submitted(proc.returncode, out_path.read_text(errors="replace"), err_path.read_text(errors="replace"),
                     time.monotonic() - t0, err_path)


# -- processes and sockets, from /proc --------------------------------------------------------------
def _parents() -> dict[int, int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return parents


def descendants(pid: int) -> list[int]:
    parents = _parents()
    out, frontier = [], [pid]
    while frontier:
        children = [c for c, p in parents.items() if p in frontier]
        out += children
        frontier = children
    return out


def kill_tree(roots: list[int], grace: float = 10.0, first: int = signal.SIGTERM) -> None:
    """Signal the roots and all their descendants (found first: Python daemons leave the JVM's
    process group and outlive it) with `first`, then SIGKILL whatever is left after `grace`."""
    pids = [p for r in roots for p in [r, *descendants(r)]]
    for sig, wait in ((first, grace), (signal.SIGKILL, 5.0)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(alive(p) for p in pids):
            time.sleep(0.1)
        pids = [p for p in pids if alive(p)]
        if not pids:
            return


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def listening_addresses(pids: list[int]) -> set[str]:
    """The local IP addresses on which these processes hold listening TCP sockets."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for row in f.read().splitlines()[1:]:
                cols = row.split()
                if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                    found.add(_ip(cols[1].split(":")[0]))
    return found


def _ip(hex_addr: str) -> str:
    import ipaddress

    raw = bytes.fromhex(hex_addr)
    # /proc stores each 32-bit word in host (little-endian) order
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    ip = ipaddress.ip_address(words)
    return str(ip.ipv4_mapped or ip) if ip.version == 6 else str(ip)


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError as e:
        return f"<{e}>"
