"""EMR on EKS for Inferentia: a ``StartJobRun`` request with one NeuronCore per executor.

EMR on EC2 offers no inf2 instances, so Neuron scoring runs on an EKS cluster with an inf2
node group and the Neuron device plugin, registered with EMR on EKS as a virtual cluster.
The image (emr/k8s/Dockerfile) carries the Neuron runtime, torch-neuronx and the project's
dependencies; the code comes from the staged ``--py-files`` zip, as on EMR on EC2.

Spark asks Kubernetes for ``aws.amazon.com/neuroncore`` because the resource ``neuroncore`` has
vendor ``aws.amazon.com``. The device plugin mounts the whole Neuron device (two cores on inf2);
only with the Neuron scheduler extension is ``NEURON_RT_VISIBLE_CORES`` documented to name the
granted core. The discovery script reports that core, and refuses to guess when the variable is
missing and it sees more cores than ``EXECUTOR_NEURONCORES_ENV`` says the executor asked for:
two executors on one device would otherwise both claim core 0.

The release label picks the line (emr/releases.py): by default the newest long-term-support
release's EMR on EKS label, or another line's (``emr-7.14.0-latest`` for Spark 3.5); the image
must be built on that release's base image, since the job's Spark is the image's.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from emr import layout as L
from emr.errors import EmrError, explain_client_error
from emr.k8s.sizing import DEFAULT_INSTANCE_TYPE, INF2
from emr.releases import DEFAULT, require_line
from emr.steps import JobRequest

DEFAULT_EKS_RELEASE_LABEL = DEFAULT.default_eks_label
IMAGE_PYTHON = "/opt/accel-scoring/venv/bin/python"
IMAGE_DISCOVERY_SCRIPT = f"/opt/accel-scoring/{L.NEURON_DISCOVERY}"
JOB_FAILED_STATES = ("FAILED", "CANCELLED")
JOB_ACTIVE_STATES = ("PENDING", "SUBMITTED", "RUNNING", "CANCEL_PENDING")
# Read by emr/scripts/get_neuroncores.py: how many NeuronCores this executor asked Spark for.
EXECUTOR_NEURONCORES_ENV = "ACCEL_SCORING_EXECUTOR_NEURONCORES"
NEURONCORES_PER_EXECUTOR = "1"  # a NeuronCore serves one process: one core, one task per executor


@dataclass(frozen=True)
class EksSettings:
    virtual_cluster_id: str
    execution_role_arn: str
    image: str
    release_label: str = DEFAULT_EKS_RELEASE_LABEL
    log_uri: str | None = None
    executor_instances: int = 2
    instance_type: str = DEFAULT_INSTANCE_TYPE
    # The Neuron scheduler extension's scheduler (its Helm chart names it my-scheduler on EKS):
    # with it the device plugin sets NEURON_RT_VISIBLE_CORES; None keeps the default scheduler.
    executor_scheduler: str | None = None
    extra_conf: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require_line(self.release_label)
        if self.instance_type not in INF2:
            raise EmrError(f"no executor sizing for {self.instance_type!r}; one of {sorted(INF2)} "
                           "(emr/k8s/sizing.py)", exit_code=2)


def neuron_spark_conf(layout: L.Layout, settings: EksSettings) -> dict[str, str]:
    """Spark settings for Neuron executors on EKS: one NeuronCore and one task each, sized to fit the node."""
    conf = {
        "spark.kubernetes.container.image": settings.image,
        "spark.kubernetes.executor.podTemplateFile": str(layout.eks(L.EXECUTOR_POD_TEMPLATE)),
        "spark.kubernetes.driver.podTemplateFile": str(layout.eks(L.DRIVER_POD_TEMPLATE)),
        "spark.executor.instances": str(settings.executor_instances),
        **INF2[settings.instance_type].spark_conf(),
        # One task slot (one Python worker) per executor; the CPU request above, not
        # spark.executor.cores, is what the tokenizer and the runtime's host threads get.
        "spark.executor.cores": "1",
        "spark.task.cpus": "1",
        "spark.executor.resource.neuroncore.amount": NEURONCORES_PER_EXECUTOR,
        "spark.executor.resource.neuroncore.vendor": "aws.amazon.com",
        "spark.executor.resource.neuroncore.discoveryScript": IMAGE_DISCOVERY_SCRIPT,
        f"spark.executorEnv.{EXECUTOR_NEURONCORES_ENV}": NEURONCORES_PER_EXECUTOR,
        "spark.task.resource.neuroncore.amount": NEURONCORES_PER_EXECUTOR,
        "spark.pyspark.python": IMAGE_PYTHON,
        "spark.pyspark.driver.python": IMAGE_PYTHON,
        "spark.python.worker.reuse": "true",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.dynamicAllocation.enabled": "false",
    }
    if settings.executor_scheduler:
        conf["spark.kubernetes.executor.scheduler.name"] = settings.executor_scheduler
    conf.update(settings.extra_conf)
    return conf


def build_start_job_run_request(
    layout: L.Layout, job: JobRequest, settings: EksSettings, *, client_token: str | None = None
) -> dict[str, Any]:
    """The ``StartJobRun`` request (emr-containers) for one scoring job on Neuron executors.

    ``client_token`` makes resubmission idempotent: the same token returns the same job run.
    """
    request: dict[str, Any] = {
        "name": f"accel-scoring-{job.job}-{job.run_date}",
        "virtualClusterId": settings.virtual_cluster_id,
        "executionRoleArn": settings.execution_role_arn,
        "releaseLabel": settings.release_label,
        "clientToken": client_token or str(uuid.uuid4()),
        "jobDriver": {
            "sparkSubmitJobDriver": {
                "entryPoint": str(layout.job(job.job)),
                "entryPointArguments": job.arguments(),
                "sparkSubmitParameters": f"--py-files {layout.pyfiles}"
                                         + "".join(f" --jars local://{jar}" for jar in job.jars),
            }
        },
        "configurationOverrides": {
            "applicationConfiguration": [
                {"classification": "spark-defaults",
                 "properties": {**job.table_conf(), **neuron_spark_conf(layout, settings)}}
            ],
        },
        "tags": {"accel-scoring:job": job.job},
    }
    if settings.log_uri:
        request["configurationOverrides"]["monitoringConfiguration"] = {
            "persistentAppUI": "ENABLED",
            "s3MonitoringConfiguration": {"logUri": settings.log_uri},
        }
    return request


def start_job_run(client: Any, request: Mapping[str, Any]) -> str:
    from botocore.exceptions import ClientError

    try:
        return client.start_job_run(**request)["id"]
    except ClientError as exc:
        error = exc.response.get("Error", {})
        if error.get("Code") == "ResourceNotFoundException":
            raise EmrError(f"cannot start the job run: {error.get('Message')} "
                           "(check --virtual-cluster-id, --release-label and the region)") from exc
        raise explain_client_error(exc, "starting the EMR on EKS job run") from exc


def describe_job_run(client: Any, virtual_cluster_id: str, job_run_id: str) -> dict[str, Any]:
    from botocore.exceptions import ClientError

    try:
        return client.describe_job_run(id=job_run_id, virtualClusterId=virtual_cluster_id)["jobRun"]
    except ClientError as exc:
        error = exc.response.get("Error", {})
        if error.get("Code") in ("ResourceNotFoundException", "ValidationException"):
            raise EmrError(f"unknown job run {job_run_id!r} on virtual cluster "
                           f"{virtual_cluster_id!r}: {error.get('Message')}") from exc
        raise explain_client_error(exc, f"describing job run {job_run_id}") from exc


def job_run_log_folder(log_uri: str | None, virtual_cluster_id: str, job_run_id: str) -> str | None:
    if not log_uri:
        return None
    return f"{log_uri.rstrip('/')}/{virtual_cluster_id}/jobs/{job_run_id}/"


def wait_for_job_run(
    client: Any, virtual_cluster_id: str, job_run_id: str, *, log_uri: str | None = None,
    poll_s: float = 30, timeout_s: float = 6 * 3600, echo: Callable[[str], None] = print,
    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Poll a job run until it ends; raise ``EmrError`` with its failure reason unless COMPLETED."""
    start, last = clock(), None
    while True:
        run = describe_job_run(client, virtual_cluster_id, job_run_id)
        state = run.get("state")
        if state != last:
            echo(f"job run {job_run_id} ({run.get('name')}): {state} after {clock() - start:.0f}s")
            last = state
        if state == "COMPLETED":
            return run
        if state in JOB_FAILED_STATES:
            folder = job_run_log_folder(log_uri, virtual_cluster_id, job_run_id)
            raise EmrError(
                f"job run {job_run_id} on {virtual_cluster_id} ended {state}\n"
                f"  reason: {run.get('failureReason') or '-'}\n"
                f"  details: {run.get('stateDetails') or '-'}\n"
                f"  logs: {folder or 'no logUri was given; see the EMR on EKS console'}"
            )
        if clock() - start > timeout_s:
            raise EmrError(f"job run {job_run_id} still {state} after {timeout_s:.0f}s")
        sleep(poll_s)
