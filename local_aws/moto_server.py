"""A moto server on 127.0.0.1 with a free port, a recorder of the requests it answered and a fault
injector in front (local_aws/s3_faults.py, off unless a test turns it on): the
S3 (and EMR, IAM) that the tests and bench/s3_commit.py talk to. tests/moto_support.py adds what
only the tests need (emulated step and job-run outcomes, IAM users, another account).

Imports neither pytest nor airflow, so every test suite and the benches can use it.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from local_aws.s3_faults import FaultInjector

REGION = "us-east-1"


@dataclass
class Recorder:
    """WSGI middleware recording (method, path) of every request and delaying chosen ones."""

    app: Any
    requests: list[tuple[str, str]] = field(default_factory=list)
    delays: dict[str, float] = field(default_factory=dict)  # path suffix -> seconds (GET only)
    copies: int = 0  # server-side copies (PUT with x-amz-copy-source): what an s3a rename costs
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        method, path = environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", "")
        with self.lock:
            self.requests.append((method, path))
            self.copies += method == "PUT" and "HTTP_X_AMZ_COPY_SOURCE" in environ
        if method == "GET":
            for suffix, seconds in self.delays.items():
                if path.endswith(suffix):
                    time.sleep(seconds)
        return self.app(environ, start_response)

    def count(self, method: str, path_suffix: str) -> int:
        with self.lock:
            return sum(1 for m, p in self.requests if m == method and p.endswith(path_suffix))

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()
            self.copies = 0
        self.delays.clear()


class MotoServer:
    """``ThreadedMotoServer`` on 127.0.0.1 with a free port and a request recorder."""

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.recorder: Recorder | None = None
        self.faults: FaultInjector | None = None
        self.url = ""

    def start(self) -> "MotoServer":
        import logging

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.url = f"http://{host}:{port}"
        wsgi = self._server._server  # werkzeug server; requests read .app on each call
        self.faults = FaultInjector(wsgi.app)
        self.recorder = Recorder(self.faults)  # records every request, the faulted ones too
        wsgi.app = self.recorder
        return self

    def stop(self) -> None:
        self._server.stop()

    def reset(self) -> None:
        moto_api(self.url, "reset")
        if self.recorder:
            self.recorder.clear()


def moto_api(url: str, action: str, data: bytes = b"") -> None:
    """POST to moto's own control API: `reset` (every backend's state), `reset-auth` (IAM checks)."""
    import urllib.request

    request = urllib.request.Request(f"{url}/moto-api/{action}", data=data, method="POST", headers={"Content-Type": "text/plain"})
    urllib.request.urlopen(request).read()
