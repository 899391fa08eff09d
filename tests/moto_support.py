"""What the tests add to the local moto server (local_aws/moto_server.py): the state changes the
emulator does not make itself, role credentials, IAM users and another account.

moto answers S3, EMR, EMR on EKS and IAM requests on 127.0.0.1, and botocore validates every
request's shape on the way. What moto does not emulate, the tests do here, by changing the
in-process emulator's state: a step or job run finishing (moto leaves them RUNNING / PENDING),
the failure details EMR reports for a failed step, and a delay on chosen GETs (to make
concurrent downloads overlap). IAM checks, off in moto by default, can be switched on for a
test (``iam_enforced``), so that a user without a permission gets a real AccessDenied.

What this proves: the requests our code sends and how it reacts to the answers. What it does
not: that real EMR accepts our configurations or that a cluster actually starts.

Imports neither pytest nor airflow, so both test suites can use it.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

from local_aws.moto_server import REGION, moto_api

ACCOUNT = "123456789012"  # moto's default account for the "testing" credentials
OTHER_ACCOUNT = "210987654321"


class RoleCredentials:
    """What a platform's IAM role gives a process: temporary credentials served on 127.0.0.1 at
    the address in AWS_CONTAINER_CREDENTIALS_FULL_URI (as ECS and EKS Pod Identity serve them),
    read by botocore's and the AWS SDK for Java's default chains. No key is in any command."""

    ACCESS_KEY, SECRET_KEY, TOKEN = "ASIAROLECREDENTIALS1", "role-secret-from-the-platform", "role-session-token"

    def __init__(self) -> None:
        import http.server

        body = json.dumps({"AccessKeyId": self.ACCESS_KEY, "SecretAccessKey": self.SECRET_KEY, "Token": self.TOKEN,
                           "Expiration": datetime.fromtimestamp(time.time() + 3600, timezone.utc)
                           .strftime("%Y-%m-%dT%H:%M:%SZ")}).encode()

        self.served = 0  # credential requests answered: how a test knows the role was used
        role = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                role.served += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "RoleCredentials":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def env(self) -> dict[str, str]:
        host, port = self._server.server_address[:2]
        return {"AWS_CONTAINER_CREDENTIALS_FULL_URI": f"http://{host}:{port}/v1/credentials", "AWS_REGION": REGION}


def aws_env(url: str) -> dict[str, str]:
    """Environment for boto3 (and the CLI in a subprocess) to talk to the moto server only."""
    return {
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


@contextlib.contextmanager
def iam_enforced(url: str) -> Iterator[None]:
    """Inside: moto authenticates every request and evaluates the caller's IAM policies (it
    allows everything by default). Restored on the way out, also when the test fails."""
    moto_api(url, "reset-auth", b"0")  # how many more requests may skip the checks
    try:
        yield
    finally:
        moto_api(url, "reset-auth", b"inf")


def iam_user_env(name: str, policy: dict[str, Any]) -> dict[str, str]:
    """Create an IAM user whose only permissions are ``policy``; its credentials as environment."""
    import boto3

    iam = boto3.client("iam")
    iam.create_user(UserName=name)
    iam.put_user_policy(UserName=name, PolicyName=f"{name}-only", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}


def foreign_s3_client(url: str) -> Any:
    """An S3 client acting as another AWS account (moto reads the x-moto-account-id header)."""
    import boto3

    client = boto3.client("s3", endpoint_url=url, region_name=REGION,
                          aws_access_key_id="testing", aws_secret_access_key="testing")

    def add_header(request: Any, **_: Any) -> None:
        request.headers["x-moto-account-id"] = OTHER_ACCOUNT

    client.meta.events.register("before-sign.s3.*", add_header)
    return client


GPU_STACK = {"torch": "2.13.0+cu126", "tensorrt": "10.16.1.11"}  # module -> version in a staged GPU archive


def stage_deployment(prefix: str, stack: dict[str, str] = GPU_STACK, leave_out: tuple[str, ...] = ()) -> None:
    """What `python -m emr stage` uploads under ``prefix``, with boto3's default client: the entry
    files, the package, the EKS pod template (each but those named in ``leave_out``), and an
    environment archive whose manifest (emr/envinfo.py) lists ``stack``'s modules beside the project."""
    import hashlib

    import boto3

    from emr import layout as L
    from emr.envinfo import EnvInfo
    from emr.s3 import SHA256_METADATA

    layout = L.Layout.at(prefix)
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=layout.prefix.bucket)
    for uri in (*(layout.job(job) for job in L.JOBS), layout.pyfiles, layout.eks(L.EXECUTOR_POD_TEMPLATE)):
        if uri.key.rpartition("/")[2] not in leave_out:
            s3.put_object(Bucket=uri.bucket, Key=uri.key, Body=b"staged")
    archive = b"a venv-pack archive"
    sha = hashlib.sha256(archive).hexdigest()
    s3.put_object(Bucket=layout.env_archive.bucket, Key=layout.env_archive.key, Body=archive,
                  Metadata={SHA256_METADATA: sha})
    info = EnvInfo(python="3.11", interpreter="/usr/bin/python3.11", modules=("accel_scoring", *stack),
                   distributions={"accel-scoring": "0.1.0", **stack}, spark_requirements=(),
                   archive_sha256=sha, archive_size=len(archive))
    s3.put_object(Bucket=layout.env_manifest.bucket, Key=layout.env_manifest.key,
                  Body=json.dumps(info.to_dict()).encode())


# --- EMR on EC2 ---------------------------------------------------------------------------------

def _emr_backend() -> Any:
    from moto.emr.models import emr_backends

    return emr_backends[ACCOUNT][REGION]


def emr_step(cluster_id: str, step_id: str) -> Any:
    for step in _emr_backend().clusters[cluster_id].steps:
        if step.id == step_id:
            return step
    raise KeyError(step_id)


def finish_step(cluster_id: str, step_id: str, state: str = "COMPLETED", *, reason: str | None = None,
                message: str | None = None, log_file: str | None = None) -> None:
    """End a step as EMR would. moto serialises ``Status`` ahead of its own ``status``."""
    step = emr_step(cluster_id, step_id)
    now = datetime.now(timezone.utc)
    status: dict[str, Any] = {
        "State": state,
        "StateChangeReason": {"Message": message or ""},
        "Timeline": {"CreationDateTime": step.creation_date_time, "StartDateTime": now, "EndDateTime": now},
    }
    if state == "FAILED":
        status["FailureDetails"] = {"Reason": reason, "Message": message, "LogFile": log_file}
    step.state = state
    step.end_date_time = now
    step.Status = status


def set_cluster_state(cluster_id: str, state: str) -> None:
    _emr_backend().clusters[cluster_id].state = state


def cluster_state(cluster_id: str) -> str:
    return _emr_backend().clusters[cluster_id].state


def emr_clusters() -> dict[str, Any]:
    return dict(_emr_backend().clusters)


def finish_steps_when_added(cluster_pick: Callable[[], str | None], outcome: Callable[[Any], dict[str, Any]],
                            *, stop: threading.Event, poll_s: float = 0.05) -> threading.Thread:
    """Background thread: end each new step of the cluster with ``outcome(step)`` kwargs."""

    def run() -> None:
        done: set[str] = set()
        while not stop.is_set():
            cluster_id = cluster_pick()
            if cluster_id and cluster_id in _emr_backend().clusters:
                for step in list(_emr_backend().clusters[cluster_id].steps):
                    if step.id not in done:
                        time.sleep(poll_s)  # let the caller see RUNNING first
                        finish_step(cluster_id, step.id, **outcome(step))
                        done.add(step.id)
            time.sleep(poll_s)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# --- EMR on EKS ---------------------------------------------------------------------------------

def _containers_backend() -> Any:
    from moto.emrcontainers.models import emrcontainers_backends

    return emrcontainers_backends[ACCOUNT][REGION]


def job_runs() -> dict[str, Any]:
    return dict(_containers_backend().job_runs)


def finish_job_run(job_run_id: str, state: str = "COMPLETED", *, reason: str | None = None,
                   details: str | None = None) -> None:
    run = _containers_backend().job_runs[job_run_id]
    run.state = state
    run.failure_reason = reason
    run.state_details = details
    run.finished_at = datetime.now(timezone.utc)
