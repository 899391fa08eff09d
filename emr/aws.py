"""boto3 clients for the CLI, and the ``--dry-run`` hook that prints requests instead of sending.

A dry run still goes through botocore up to the wire: parameters are validated against the
service model exactly as for a real call, then a ``before-call`` handler prints the request as
one JSON line and answers with a small canned response, so nothing is signed or sent and no
credentials are needed.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

DRY_RUN_CLUSTER_ID = "j-DRYRUN"
DRY_RUN_JOB_RUN_ID = "dryrun0000000000000"


@dataclass
class Clients:
    """Creates one boto3 client per service on first use.

    Args:
        endpoint_url: send every request there (a local emulator); ``None`` means AWS, or
            ``AWS_ENDPOINT_URL`` when that is set (boto3 reads it itself).
        region: the AWS region; ``None`` uses the usual chain (``AWS_DEFAULT_REGION``, config).
        profile: a named AWS profile from the shared config files.
        dry_run: print requests as JSON lines on ``out`` instead of sending them.
    """

    endpoint_url: str | None = None
    region: str | None = None
    profile: str | None = None
    dry_run: bool = False
    out: TextIO = field(default_factory=lambda: sys.stdout)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def get(self, service: str) -> Any:
        if service not in self._cache:
            import boto3
            from botocore.config import Config

            session = boto3.Session(profile_name=self.profile, region_name=self.region)
            region = session.region_name or ("us-east-1" if self.dry_run else None)
            client = session.client(
                service,
                endpoint_url=self.endpoint_url,
                region_name=region,
                config=Config(retries={"mode": "standard", "max_attempts": 4}),
            )
            if self.dry_run:
                install_dry_run(client, self.out)
            self._cache[service] = client
        return self._cache[service]

    @property
    def s3(self) -> Any:
        return self.get("s3")

    @property
    def emr(self) -> Any:
        return self.get("emr")

    @property
    def emr_containers(self) -> Any:
        return self.get("emr-containers")

    @property
    def iam(self) -> Any:
        return self.get("iam")


def _canned_responses() -> dict[str, Callable[[dict[str, Any]], dict[str, Any]]]:
    return {
        "RunJobFlow": lambda p: {"JobFlowId": DRY_RUN_CLUSTER_ID},
        "AddJobFlowSteps": lambda p: {
            "StepIds": [f"s-DRYRUN{i}" for i in range(1, len(p.get("Steps", [])) + 1)]
        },
        "DescribeCluster": lambda p: {
            "Cluster": {"Id": p.get("ClusterId"), "Name": "dry-run", "Status": {"State": "WAITING"}}
        },
        # The wait commands describe once in a dry run; a run that has not started is PENDING.
        "DescribeStep": lambda p: {
            "Step": {"Id": p.get("StepId"), "Name": "dry-run", "Status": {"State": "PENDING"}}
        },
        "DescribeJobRun": lambda p: {
            "jobRun": {"id": p.get("id"), "name": "dry-run", "virtualClusterId": p.get("virtualClusterId"),
                       "state": "PENDING"}
        },
        "StartJobRun": lambda p: {
            "id": DRY_RUN_JOB_RUN_ID,
            "name": p.get("name"),
            "virtualClusterId": p.get("virtualClusterId"),
        },
        "CreateMultipartUpload": lambda p: {"UploadId": "dry-run"},
        "UploadPart": lambda p: {"ETag": '"dry-run"'},
    }


def _printable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if hasattr(value, "read"):
        return f"<stream {getattr(value, 'name', type(value).__name__)}>"
    if isinstance(value, dict):
        return {k: _printable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_printable(v) for v in value]
    return value


def install_dry_run(client: Any, out: TextIO) -> None:
    """Make ``client`` print each request as a JSON line on ``out`` and not send it.

    Every request is still validated by botocore against the service model first.
    """
    canned = _canned_responses()
    service = client.meta.service_model.service_name

    def remember_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["accel_scoring_api_params"] = dict(params)

    def answer(model: Any, context: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
        from botocore.awsrequest import AWSResponse

        params = context.get("accel_scoring_api_params", {})
        line = {"dry_run": True, "service": service, "operation": model.name, "params": _printable(params)}
        out.write(json.dumps(line, sort_keys=True, default=str) + "\n")
        out.flush()
        body = canned.get(model.name, lambda p: {})(params)
        return AWSResponse(None, 200, {}, None), {**body, "ResponseMetadata": {"HTTPStatusCode": 200}}

    client.meta.events.register("before-parameter-build.*.*", remember_params)
    client.meta.events.register_first("before-call.*.*", answer)
