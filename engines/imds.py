"""The EC2 instance type of the host a task runs on, read from instance metadata (IMDSv2).

Executors ask, not the driver: on EMR the primary node is often a smaller type than the core
nodes that score, and the run is billed for those. Off EC2 nothing is sent, and on EC2 a
metadata service that does not answer within the timeout only means no cost in the summary.
"""
from __future__ import annotations

import functools
import urllib.request

ENDPOINT = "http://169.254.169.254"
TIMEOUT_SECONDS = 1.0
# Nitro instances name their vendor in DMI; Xen ones have a hypervisor uuid starting "ec2".
_EC2_MARKERS = (("/sys/devices/virtual/dmi/id/sys_vendor", "amazon ec2"), ("/sys/hypervisor/uuid", "ec2"))
# Metadata is link-local: never through an http_proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def on_ec2() -> bool:
    for path, prefix in _EC2_MARKERS:
        try:
            with open(path) as f:
                if f.read().strip().lower().startswith(prefix):
                    return True
        except OSError:
            pass
    return False


def instance_type(endpoint: str = ENDPOINT, timeout: float = TIMEOUT_SECONDS) -> str | None:
    """IMDSv2: PUT for a session token, then GET the instance type with it; None on any failure."""
    token_request = urllib.request.Request(f"{endpoint}/latest/api/token", method="PUT",
                                           headers={"X-aws-ec2-metadata-token-ttl-seconds": "60"})
    try:
        with _OPENER.open(token_request, timeout=timeout) as r:
            token = r.read().decode()
        request = urllib.request.Request(f"{endpoint}/latest/meta-data/instance-type",
                                         headers={"X-aws-ec2-metadata-token": token})
        with _OPENER.open(request, timeout=timeout) as r:
            return r.read().decode().strip() or None
    except (OSError, ValueError):  # refused, timed out, HTTP error (a URLError), or a garbled answer
        return None


@functools.cache
def this_host() -> str | None:
    """Once per worker process: the type of this host when it is an EC2 instance, else None."""
    return instance_type() if on_ec2() else None
