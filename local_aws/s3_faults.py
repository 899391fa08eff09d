"""Faults an S3 endpoint adds under load, injected in front of the moto server (WSGI middleware).

Real S3 answers `503 SlowDown` when a prefix's request rate is exceeded, `500 InternalError` now
and then, drops connections, and cuts long reads short. Each `Rule` picks a share of the
requests whose method and `host + path` it matches, and answers each picked one with one of its
kinds, drawn by a seeded generator:

- ``slowdown``: 503 with S3's `SlowDown` error document;
- ``internal``: 500 with S3's `InternalError` error document;
- ``reset``: the connection closes with no response (the client sees a reset or an empty reply);
- ``truncate``: a GET's status and headers, then half its body, then the connection closes;
- ``latency``: the request is answered as usual after `latency_seconds`.

The first three answer before moto sees the request, as S3 does: the request did not happen.
`counts` says what was injected, per kind and method. A rule with share 1.0 and a key pattern is
a key that always fails.
"""
from __future__ import annotations

import contextlib
import random
import re
import socket
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

KINDS = ("slowdown", "internal", "reset", "truncate", "latency")
_ERRORS = {"slowdown": ("503 Slow Down", "SlowDown", "Please reduce your request rate."),
           "internal": ("500 Internal Server Error", "InternalError",
                        "We encountered an internal error. Please try again.")}


@dataclass(frozen=True)
class Rule:
    share: float  # of the requests this rule matches
    kinds: tuple[str, ...] = ("slowdown", "internal", "reset", "truncate")
    methods: frozenset[str] | None = None  # None: every method
    key: str = ""  # a regular expression searched in `host + path`; "" matches every request

    def __post_init__(self):
        unknown = set(self.kinds) - set(KINDS)
        if unknown or not self.kinds or not 0 <= self.share <= 1:
            raise ValueError(f"a fault rule needs a share in [0, 1] and kinds from {KINDS}; got {self}")

    def matches(self, method: str, where: str) -> bool:
        return (self.methods is None or method in self.methods) and re.search(self.key, where) is not None


class FaultInjector:
    """WSGI middleware: what `rules` pick is answered with a fault; everything else goes to `app`."""

    def __init__(self, app: Any, latency_seconds: float = 0.2):
        self.app = app
        self.latency_seconds = latency_seconds
        self.rules: tuple[Rule, ...] = ()
        self.counts: Counter[tuple[str, str]] = Counter()  # (kind, method) -> injected
        self._random = random.Random(0)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def injecting(self, *rules: Rule, seed: int = 0) -> Iterator["FaultInjector"]:
        """Inject `rules` inside the block (counts start at zero); none before or after it."""
        with self._lock:
            self.rules, self._random, self.counts = rules, random.Random(seed), Counter()
        try:
            yield self
        finally:
            with self._lock:
                self.rules = ()

    def injected(self, kind: str | None = None) -> int:
        with self._lock:
            return sum(n for (k, _), n in self.counts.items() if kind in (None, k))

    def _pick(self, method: str, where: str) -> str | None:
        with self._lock:
            for rule in self.rules:
                if rule.matches(method, where) and self._random.random() < rule.share:
                    kind = self._random.choice([k for k in rule.kinds if k != "truncate" or method == "GET"]
                                               or ["internal"])
                    self.counts[kind, method] += 1
                    return kind
        return None

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method, path = environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", "")
        kind = None if path.startswith("/moto-api") else self._pick(method, environ.get("HTTP_HOST", "") + path)
        if kind is None:
            return self.app(environ, start_response)
        if kind == "latency":
            time.sleep(self.latency_seconds)
            return self.app(environ, start_response)
        if kind == "reset":
            return _dropped(environ, start_response)
        if kind == "truncate":
            return self._truncated(environ, start_response)
        status, code, message = _ERRORS[kind]
        body = b"" if method == "HEAD" else (
            f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>injected</RequestId></Error>").encode()
        start_response(status, [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
        return [body]

    def _truncated(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        answered: list[Any] = []
        body = b"".join(self.app(environ, lambda status, headers, exc_info=None: answered.append((status, headers))))
        status, headers = answered[0]
        if not status.startswith("2") or len(body) < 2:  # nothing to cut: the connection drops instead
            return _dropped(environ, start_response)
        start_response(status, headers)

        def half_then_drop() -> Iterator[bytes]:
            yield body[: len(body) // 2]
            _drop(environ)
        return half_then_drop()


def _dropped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """No response at all. (The server's attempt to send this status fails on the closed socket,
    which it takes for a client that went away.)"""
    start_response("500 Internal Server Error", [("Content-Length", "0")])
    _drop(environ)
    return []


def _drop(environ: dict[str, Any]) -> None:
    """Close the client's connection under the server: no (more) response bytes, then a reset."""
    sock = environ["werkzeug.socket"]
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.shutdown(socket.SHUT_RDWR)
