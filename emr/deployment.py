"""One deployment's settings (an Airflow Variable's JSON, DAG params on top) -> AWS requests.

The Airflow DAGs in emr/airflow/ read the Variable ``accel_scoring`` at run time and call these
functions, so a DAG and ``python -m emr`` build the same clusters, steps and job runs.

Variable ``accel_scoring`` (JSON)::

    {
      "prefix": "s3://bucket/accel-scoring/v1/",        # what `python -m emr stage` uploaded
      "log_uri": "s3://bucket/emr-logs/",
      "profile": "g5", "core_count": 2,                  # EMR on EC2 (optional: defaults)
      "subnet_id": "subnet-..." (or a list, with "fleet": true), "fleet": false,
      "spot_task_count": 0, "instance_profile": "EMR_EC2_DefaultRole",
      "cpu_core_type": "m6i.2xlarge", "gpu_task_count": 2,   # stage-level layout, with fleet and EMR 8
      "service_role": "EMR_DefaultRole_V2", "python_env": "archive", "release_label": "emr-spark-8.1.0",
      "pip_extras": "aws,gpu", "torch_index_url": "...", "nvidia_index_url": "...",  # "bootstrap" only
      # or, torch alone for --backend torch-cuda: "pip_extras": "aws,fast,torch-cuda", "torch_index_url": "..."
      "cluster_id": "j-...",                             # the existing-cluster DAG only
      "cache": "s3://bucket/accel-scoring/cache/",       # optional: each job gets --cache <cache><job>/
      "iceberg_warehouse": "s3://bucket/warehouse/",     # for jobs whose output is iceberg:<catalog>.<db>.<table>
      "jobs": {
        "duplicates":   {"input": "s3://.../pairs/", "output": "s3://.../duplicates/",
                         "model": "s3://.../models/pairs-trt/1/", "args": ["--backend", "tensorrt"]},
        # an Iceberg table in the Glue Data Catalog instead of a folder (README.md, "Output tables"):
        #   "output": "iceberg:glue.scores.duplicates", "runs_dir": "s3://.../runs/duplicates/",
        "query_intent": {"input": "...", "output": "...", "model": "...", "args": ["--top-k", "3"]}
      },
      "eks": {"virtual_cluster_id": "...", "execution_role_arn": "arn:aws:iam::...:role/...",
              "image": "....dkr.ecr....amazonaws.com/accel-scoring-neuron:1",
              "release_label": "emr-spark-8.1.0-latest", "log_uri": "s3://bucket/eks-logs/", "executors": 2,
              "instance_type": "inf2.xlarge", "executor_scheduler": "my-scheduler"}
    }

DAG params (set when triggering) override ``profile``, ``core_count`` and ``cluster_id``, and
``jobs`` (a list) picks which jobs run.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping

from emr import layout as L
from emr import step_policy
from emr.bootstrap_env import BootstrapEnv
from emr.cluster import (DEFAULT_INSTANCE_PROFILE, DEFAULT_SERVICE_ROLE, ClusterSettings,
                         build_run_job_flow_request)
from emr.eks import DEFAULT_EKS_RELEASE_LABEL, EksSettings, build_start_job_run_request
from emr.errors import EmrError
from emr.k8s.sizing import DEFAULT_INSTANCE_TYPE
from emr.profiles import get_profile
from emr.releases import DEFAULT
from emr.steps import JobRequest, build_step

VARIABLE = "accel_scoring"


def merged(variable: Mapping[str, Any], params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The Variable's settings with the DAG run's non-empty params on top."""
    out = dict(variable)
    for key, value in (params or {}).items():
        if value not in (None, "", []):
            out[key] = value
    return out


def _require(settings: Mapping[str, Any], *keys: str) -> None:
    missing = [k for k in keys if not settings.get(k)]
    if missing:
        raise EmrError(f"Variable {VARIABLE!r} lacks {', '.join(missing)}", exit_code=2)


def selected_jobs(settings: Mapping[str, Any]) -> list[str]:
    jobs = settings.get("jobs") or {}
    chosen = settings.get("run_jobs") or [j for j in L.JOBS if j in jobs]  # default: every job it configures
    unknown = [j for j in chosen if j not in jobs]
    if unknown:
        raise EmrError(f"Variable {VARIABLE!r} has no jobs.{unknown[0]} settings", exit_code=2)
    return [j for j in L.JOBS if j in chosen]


def job_request(settings: Mapping[str, Any], job: str, run_date: str) -> JobRequest:
    spec = settings["jobs"][job]
    _require(spec, "input", "output", "model")
    return JobRequest(job, spec["input"], spec["output"], spec["model"], run_date,
                      tuple(str(a) for a in spec.get("args", ())), cache_root=settings.get("cache"),
                      runs_dir=spec.get("runs_dir"), iceberg_warehouse=settings.get("iceberg_warehouse"))


def _subnets(value: str | list[str] | None) -> tuple[str, ...]:
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _bootstrap_env(settings: Mapping[str, Any]) -> BootstrapEnv:
    """The CLI's --pip-extras, --torch-index-url and --nvidia-index-url, from the Variable."""
    given = {"extras": settings.get("pip_extras"), "torch_index_url": settings.get("torch_index_url"),
             "nvidia_index_url": settings.get("nvidia_index_url")}
    return BootstrapEnv(**{k: v for k, v in given.items() if v})


def cluster_request(settings: Mapping[str, Any], *, dag_run: str = "") -> dict[str, Any]:
    """``RunJobFlow`` for the DAG's cluster: kept alive for its steps, ended by the DAG."""
    _require(settings, "prefix", "log_uri")
    cluster = ClusterSettings(
        name=f"accel-scoring {dag_run}".strip(),
        log_uri=settings["log_uri"],
        release_label=settings.get("release_label") or DEFAULT.default_label,
        core_instance_count=int(settings["core_count"]) if settings.get("core_count") else None,
        subnet_ids=_subnets(settings.get("subnet_id")),
        fleet=bool(settings.get("fleet")),
        spot_task_count=int(settings.get("spot_task_count") or 0),
        cpu_core_type=settings.get("cpu_core_type") or None,
        gpu_task_count=int(settings.get("gpu_task_count") or 0),
        instance_profile=settings.get("instance_profile") or DEFAULT_INSTANCE_PROFILE,
        service_role=settings.get("service_role") or DEFAULT_SERVICE_ROLE,
        python_env=settings.get("python_env") or "archive",
        bootstrap_env=_bootstrap_env(settings),
        tags={"accel-scoring:dag-run": dag_run} if dag_run else {},
    )
    return build_run_job_flow_request(get_profile(settings.get("profile") or "g5"),
                                      L.Layout.at(settings["prefix"]), cluster)


def scoring_steps(settings: Mapping[str, Any], run_date: str) -> list[dict[str, Any]]:
    """One EMR step per selected job, in ``emr.layout.JOBS`` order."""
    _require(settings, "prefix")
    layout = L.Layout.at(settings["prefix"])
    return [build_step(layout, job_request(settings, job, run_date),
                       python_env=settings.get("python_env") or "archive")
            for job in selected_jobs(settings)]


def checked_scoring_steps(settings: Mapping[str, Any], run_date: str, *, s3: Any, emr: Any,
                          cluster_id: str | None = None) -> list[dict[str, Any]]:
    """``scoring_steps`` once what `python -m emr add-step` checks holds (emr/step_policy.py): the
    entry files and the package are staged, and the executors' Python (the staged archive, the
    bootstrap environment of ``cluster_id``, or without one that of the cluster the run creates)
    can run each step's backend. EmrError otherwise, before any cluster or step exists."""
    _require(settings, "prefix")
    layout = L.Layout.at(settings["prefix"])
    jobs = [job_request(settings, job, run_date) for job in selected_jobs(settings)]
    for job in jobs:
        step_policy.require_staged(s3, layout, job)
    if (settings.get("python_env") or "archive") == "archive":
        python = step_policy.staged_archive(s3, layout)
    elif cluster_id:
        python = step_policy.cluster_bootstrap(emr, cluster_id)
    else:
        python = step_policy.planned_bootstrap(_bootstrap_env(settings))
    for job in jobs:
        step_policy.require_runnable(s3, job, python)
    return scoring_steps(settings, run_date)


def job_run_token(dag_id: str, run_id: str, job: str, first_try: int) -> str:
    """StartJobRun's ``clientToken`` for one job of one DAG run, within one cycle of task tries.

    EMR on EKS answers a StartJobRun whose token it has seen with the job run it started then, so
    a submit task retried after a lost answer gets that run instead of starting a second one.
    ``first_try`` is the first try number of the task's current cycle (Airflow's own
    ``max_tries - retries + 1``): the same for every retry, new once someone clears the task, so
    clearing still starts the job again. A hash keeps the token within StartJobRun's 64
    characters whatever the run id.
    """
    digest = hashlib.sha256(f"{dag_id}\n{run_id}\n{job}\n{first_try}".encode()).hexdigest()[:40]
    return f"{job}-{digest}"


def eks_job_runs(settings: Mapping[str, Any], run_date: str) -> dict[str, dict[str, Any]]:
    """``StartJobRun`` requests per selected job for EMR on EKS (Inferentia)."""
    _require(settings, "prefix", "eks")
    eks = settings["eks"]
    _require(eks, "virtual_cluster_id", "execution_role_arn", "image")
    eks_settings = EksSettings(
        virtual_cluster_id=eks["virtual_cluster_id"], execution_role_arn=eks["execution_role_arn"],
        image=eks["image"], release_label=eks.get("release_label") or DEFAULT_EKS_RELEASE_LABEL,
        log_uri=eks.get("log_uri"), executor_instances=int(eks.get("executors", 2)),
        instance_type=eks.get("instance_type") or DEFAULT_INSTANCE_TYPE,
        executor_scheduler=eks.get("executor_scheduler"),
    )
    layout = L.Layout.at(settings["prefix"])
    return {job: build_start_job_run_request(layout, job_request(settings, job, run_date), eks_settings)
            for job in selected_jobs(settings)}


def checked_eks_job_runs(settings: Mapping[str, Any], run_date: str, *, s3: Any) -> dict[str, dict[str, Any]]:
    """``eks_job_runs`` once the entry files, the package and the executor pod template are staged,
    as `python -m emr eks-submit` checks (the image holds the executors' Python)."""
    runs = eks_job_runs(settings, run_date)
    layout = L.Layout.at(settings["prefix"])
    for job in selected_jobs(settings):
        step_policy.require_staged(s3, layout, job_request(settings, job, run_date), layout.eks(L.EXECUTOR_POD_TEMPLATE))
    return runs

