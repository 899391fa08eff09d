"""Scoring steps on EMR on EC2: the spark-submit command, adding steps, waiting for them.

A step runs ``command-runner.jar spark-submit --deploy-mode cluster ...`` with the staged job,
the ``--py-files`` zip and (``python_env="archive"``) the venv-pack archive unpacked as
``./environment`` on the driver and every executor.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from emr import layout as L
from emr import tables
from emr.errors import EmrError, explain_client_error
from emr.s3 import S3Uri, tail_log
from jobs import paths

STEP_FAILED_STATES = ("FAILED", "CANCELLED", "INTERRUPTED")
STEP_ACTIVE_STATES = ("PENDING", "CANCEL_PENDING", "RUNNING")
_RUN_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class StepFailed(EmrError):
    """A step ended in FAILED, CANCELLED or INTERRUPTED; the message has reason and logs."""


@dataclass(frozen=True)
class JobRequest:
    """What to score: the job, its four required flags, and further job flags verbatim."""

    job: str
    input: str
    output: str
    model: str
    run_date: str
    extra_args: Sequence[str] = ()
    cache_root: str | None = None  # result cache root: the job gets --cache <root>/<job>/
    runs_dir: str | None = None  # an Iceberg output's --runs-dir
    iceberg_warehouse: str | None = None  # s3://... of the Glue-backed Iceberg catalog an Iceberg output names

    def __post_init__(self) -> None:
        if self.job not in L.JOBS:
            raise EmrError(f"unknown job {self.job!r}; expected one of {', '.join(L.JOBS)}", 2)
        if "{{" not in self.run_date and not _RUN_DATE.match(self.run_date):
            raise EmrError(f"--run-date must be YYYY-MM-DD, got {self.run_date!r}", 2)
        table = tables.iceberg_catalog(self.output)
        if table and not (self.runs_dir and self.iceberg_warehouse):
            raise EmrError(f"--output {self.output} is an Iceberg table: it needs a runs folder (--runs-dir, or "
                           f"runs_dir in the Variable's job) and the Glue catalog's warehouse (--iceberg-warehouse, "
                           f"or iceberg_warehouse in the Variable)", 2)
        if not table and self.runs_dir:
            raise EmrError(f"a runs folder is for an Iceberg --output; {self.output} keeps its runs in <output>/_runs", 2)
        folders = {"--input": self.input, "--output": None if table else self.output, "--runs-dir": self.runs_dir,
                   "--cache": self.cache}
        apart = paths.refusal(folders)
        if apart:  # the job's driver would refuse it too, once a cluster is paid for
            raise EmrError(apart, 2)

    @property
    def backend(self) -> str:
        """The job's ``--backend`` among the further flags (the jobs' default, ``auto``, without one)."""
        args = list(self.extra_args)
        for i, arg in enumerate(args):
            if arg == "--backend" and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith("--backend="):
                return arg.partition("=")[2]
        return "auto"

    @property
    def cache(self) -> str | None:
        """One cache folder per job under the configured root (README.md, "Incremental runs")."""
        return f"{self.cache_root.rstrip('/')}/{self.job}/" if self.cache_root else None

    def arguments(self) -> list[str]:
        cache = ["--cache", self.cache] if self.cache and "--cache" not in self.extra_args else []
        runs = ["--runs-dir", self.runs_dir] if self.runs_dir else []
        return ["--input", self.input, "--output", self.output, "--model", self.model,
                "--run-date", self.run_date, *runs, *cache, *self.extra_args]

    def table_conf(self) -> dict[str, str]:
        """Spark settings the output's table needs (emr/tables.py): an Iceberg catalog on Glue,
        or, with --register-table, Spark's Hive catalog on Glue."""
        catalog = tables.iceberg_catalog(self.output)
        if catalog:
            return tables.glue_iceberg_conf(catalog, self.iceberg_warehouse)
        if any(a == "--register-table" or a.startswith("--register-table=") for a in self.extra_args):
            return tables.glue_hive_conf()
        return {}

    @property
    def jars(self) -> list[str]:
        """Jars on the nodes the job needs: the cluster's Iceberg runtime for an Iceberg output."""
        return [tables.RUNTIME_JAR] if tables.iceberg_catalog(self.output) else []


def python_env_conf(layout: L.Layout, python_env: str) -> dict[str, str]:
    """Spark settings that make the driver and executors use the staged environment."""
    if python_env == "bootstrap":  # the cluster's spark-defaults already point at the venv
        return {}
    if python_env != "archive":
        raise EmrError(f"python_env must be 'archive' or 'bootstrap', got {python_env!r}", 2)
    python = f"./{L.ENV_ALIAS}/bin/python"
    return {
        "spark.archives": f"{layout.env_archive}#{L.ENV_ALIAS}",
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python,
        "spark.executorEnv.PYSPARK_PYTHON": python,
    }


def spark_submit_args(
    layout: L.Layout, job: JobRequest, *, python_env: str = "archive",
    conf: Mapping[str, str] | None = None,
) -> list[str]:
    """The ``spark-submit`` command line of one scoring step (YARN cluster mode)."""
    settings = {**python_env_conf(layout, python_env), **job.table_conf(), **(conf or {})}
    args = ["spark-submit", "--deploy-mode", "cluster", "--master", "yarn",
            "--name", f"accel-scoring-{job.job}-{job.run_date}",
            "--py-files", str(layout.pyfiles)]
    if job.jars:
        args += ["--jars", ",".join(job.jars)]
    for key in sorted(settings):
        args += ["--conf", f"{key}={settings[key]}"]
    return args + [str(layout.job(job.job)), *job.arguments()]


def build_step(
    layout: L.Layout, job: JobRequest, *, python_env: str = "archive",
    conf: Mapping[str, str] | None = None, action_on_failure: str = "CONTINUE",
) -> dict[str, Any]:
    """One ``Steps`` entry for ``AddJobFlowSteps`` / ``RunJobFlow``."""
    return {
        "Name": f"score-{job.job}-{job.run_date}",
        "ActionOnFailure": action_on_failure,
        "HadoopJarStep": {
            "Jar": "command-runner.jar",
            "Args": spark_submit_args(layout, job, python_env=python_env, conf=conf),
        },
    }


def add_steps(client: Any, cluster_id: str, steps: Sequence[Mapping[str, Any]]) -> list[str]:
    from botocore.exceptions import ClientError

    try:
        return client.add_job_flow_steps(JobFlowId=cluster_id, Steps=[dict(s) for s in steps])["StepIds"]
    except ClientError as exc:
        raise explain_client_error(exc, f"adding steps to cluster {cluster_id}") from exc


def describe_step(client: Any, cluster_id: str, step_id: str) -> dict[str, Any]:
    from botocore.exceptions import ClientError

    try:
        return client.describe_step(ClusterId=cluster_id, StepId=step_id)["Step"]
    except ClientError as exc:
        raise explain_client_error(exc, f"describing step {step_id} on {cluster_id}") from exc


def step_log_folder(log_uri: str | None, cluster_id: str, step_id: str) -> str | None:
    """Where EMR writes a step's controller/stdout/stderr logs (``<LogUri>/<cluster>/steps/<step>/``)."""
    if not log_uri:
        return None
    base = S3Uri.parse(log_uri).as_prefix()
    return str(base.join(cluster_id, "steps", step_id).as_prefix())


def failure_report(
    step: Mapping[str, Any], cluster_id: str, log_uri: str | None, s3: Any = None, tail: int = 20
) -> str:
    """Explain a failed step: state, reason, message, log file and folder, stderr's last lines."""
    status = step.get("Status", {})
    details = status.get("FailureDetails") or {}
    reason_msg = status.get("StateChangeReason", {}).get("Message")
    lines = [f"step {step.get('Id')} ({step.get('Name')}) on {cluster_id} ended {status.get('State')}"]
    if details.get("Reason") or details.get("Message"):
        lines.append(f"  reason: {details.get('Reason') or '-'}")
        if details.get("Message"):
            lines.append(f"  message: {details['Message']}")
    elif reason_msg:
        lines.append(f"  reason: {reason_msg}")
    folder = step_log_folder(log_uri, cluster_id, step.get("Id", ""))
    log_file = details.get("LogFile")
    if log_file:
        lines.append(f"  log file: {log_file}")
    if folder:
        lines.append(f"  step logs: {folder}  (stderr.gz, stdout.gz, controller.gz)")
        containers = S3Uri.parse(str(log_uri)).as_prefix().join(cluster_id, "containers").as_prefix()
        lines.append(f"  Spark driver and executor logs (YARN): {containers}")
    else:
        lines.append("  step logs: the cluster has no LogUri; see the EMR console")
    if s3 is not None:
        source = log_file or (folder + "stderr.gz" if folder else None)
        if source and source.startswith("s3"):
            last = tail_log(s3, S3Uri.parse(source), tail)
            if last:
                lines.append(f"  last {len(last)} lines of {source}:")
                lines.extend("    " + line for line in last)
    return "\n".join(lines)


def wait_for_step(
    client: Any, cluster_id: str, step_id: str, *, log_uri: str | None = None, s3: Any = None,
    poll_s: float = 30, timeout_s: float = 6 * 3600, echo: Callable[[str], None] = print,
    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
    heartbeat_s: float = 300,
) -> dict[str, Any]:
    """Poll a step until it ends; print each state change and a heartbeat while it runs.

    Returns:
        the final ``DescribeStep`` step when it COMPLETED.

    Raises:
        StepFailed: it ended FAILED, CANCELLED or INTERRUPTED (message from ``failure_report``).
        EmrError: it did not end within ``timeout_s``.
    """
    start = clock()
    last_state, last_echo = None, start
    while True:
        step = describe_step(client, cluster_id, step_id)
        state = step.get("Status", {}).get("State")
        now = clock()
        if state != last_state or now - last_echo >= heartbeat_s:
            echo(f"step {step_id} ({step.get('Name')}): {state} after {now - start:.0f}s")
            last_state, last_echo = state, now
        if state == "COMPLETED":
            return step
        if state in STEP_FAILED_STATES:
            raise StepFailed(failure_report(step, cluster_id, log_uri, s3))
        if now - start > timeout_s:
            raise EmrError(f"step {step_id} still {state} after {timeout_s:.0f}s; it keeps running "
                           f"on {cluster_id} (wait again with `python -m emr wait`)")
        sleep(poll_s)
