"""What must hold before a scoring step or job run is sent, so that none is sent that can only
fail on the cluster: its entry file and the package are staged, and the executors' Python can run
its backend. `python -m emr add-step` / `eks-submit` and the Airflow DAGs (emr/deployment.py) apply
the same checks; each raises EmrError with exit code 2.

The executors' Python is the staged archive (`--python-env archive`: its accel-scoring-env.json
says what it holds) or a cluster's install-python-env bootstrap action (its arguments do,
emr/bootstrap_env.py). It is read only when a step's backend needs more than the default's
libraries. A step's backend is its `--backend`, or with `auto` and an artifact on S3 that
artifact's own (engines/store.py reads its manifest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from emr import envinfo, gpu_envs
from emr import layout as L
from emr.bootstrap_env import ACTION_NAME, BootstrapEnv, fix_for
from emr.errors import EmrError
from emr.s3 import S3Uri, head, require_object
from emr.steps import JobRequest

STAGE_HINT = "stage it first with `python -m emr stage`"


@dataclass(frozen=True)
class ExecutorPython:
    """Where the executors' Python comes from, for messages; how to read what it holds; and, for
    a backend it lacks, how to get one that has it (None: the archive to build, emr/gpu_envs.py)."""

    where: str
    read: Callable[[], envinfo.EnvInfo | None]
    fix: Callable[[str], str] | None = None


def _bootstrap_fix(backend: str) -> str:
    return fix_for(gpu_envs.for_backend(backend) or gpu_envs.FULL)


def staged_archive(s3: Any, layout: L.Layout) -> ExecutorPython:
    """The archive `python -m emr stage` uploaded, which must be there."""
    archive = require_object(s3, layout.env_archive, STAGE_HINT)
    return ExecutorPython(str(layout.env_archive), lambda: envinfo.staged(s3, layout, archive))


def cluster_bootstrap(emr: Any, cluster_id: str) -> ExecutorPython:
    """The environment a running cluster's install-python-env action installed."""

    def read() -> envinfo.EnvInfo:
        actions = emr.list_bootstrap_actions(ClusterId=cluster_id)["BootstrapActions"]
        installs = [a.get("Args", []) for a in actions if a.get("Name") == ACTION_NAME]
        if not installs:
            raise EmrError(f"cluster {cluster_id} has no {ACTION_NAME} bootstrap action: it was not created "
                           "with --python-env bootstrap", exit_code=2)
        return BootstrapEnv.from_script_args(installs[0]).info()

    return ExecutorPython(f"cluster {cluster_id}'s bootstrap environment", read, _bootstrap_fix)


def planned_bootstrap(env: BootstrapEnv) -> ExecutorPython:
    """The environment a cluster about to be created will install (an Airflow run's own cluster)."""
    return ExecutorPython(f"the bootstrap environment of --pip-extras {env.extras}", env.info, _bootstrap_fix)


def require_staged(s3: Any, layout: L.Layout, job: JobRequest, *more: S3Uri) -> None:
    """The job's entry file, the package, and any `more` (EKS: the pod template) are on S3."""
    for uri in (layout.job(job.job), layout.pyfiles, *more):
        require_object(s3, uri, STAGE_HINT)


def step_backend(s3: Any, job: JobRequest) -> tuple[str, str]:
    """The backend a step runs, and what chose it for messages ('' for an explicit --backend)."""
    if job.backend == "auto" and job.model.startswith("s3://"):
        backend = _artifact_backend(s3, job.model) or "auto"
        return backend, f"--backend auto (artifact {job.model} is a {backend} build)"
    return job.backend, ""


def _artifact_backend(s3: Any, model: str) -> str | None:
    from engines.errors import ArtifactError
    from engines.store import open_manifest

    try:
        return open_manifest(model, s3_client=s3).backend
    except ArtifactError:  # the job's driver explains a broken artifact itself
        return None


def require_runnable(s3: Any, job: JobRequest, python: ExecutorPython) -> None:
    """Refuse a step whose backend `python` lacks the libraries for, or cannot be shown to have."""
    backend, label = step_backend(s3, job)
    if backend not in envinfo.BACKEND_MODULES:
        return
    envinfo.require_backend(python.read(), backend, python.where, label,
                            fix=python.fix(backend) if python.fix else None)


def would_check(job: JobRequest, python_where: str) -> str | None:
    """What a dry run says it would check of the executors' Python, for an explicit --backend."""
    needed = envinfo.BACKEND_MODULES.get(job.backend)
    return f"would check that {python_where} has {' and '.join(needed)}" if needed else None


def gpu_steps_refused(s3: Any, layout: L.Layout) -> str | None:
    """create-cluster adds no step, so it can only warn that GPU steps would be refused: when the
    staged archive runs neither GPU environment's backend, what the full one needs."""
    archive = head(s3, layout.env_archive)
    if archive is None:
        return None
    refusals = []
    try:
        info = envinfo.staged(s3, layout, archive)
        for env in gpu_envs.ENVS:
            try:
                envinfo.require_backend(info, env.backend, str(layout.env_archive))
                return None
            except EmrError as exc:
                refusals.append(exc)
    except EmrError as exc:
        refusals.append(exc)
    return f"{refusals[0]} (add-step refuses such steps)"
