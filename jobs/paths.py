"""Whether a job's folders are apart: --output inside --input (or the reverse, or one folder for
both) would write the scores into the table the job reads, and the next run over that input
fails on files that are not rows; --cache inside either mixes its entries into them.

Standard library only, so `python -m emr` and the Airflow DAGs refuse such a step before a
cluster runs it (emr/steps.py), as the job's driver does before it writes anything
(jobs/runner.py, with Hadoop-qualified paths). Locations compare by store and path segments:
the S3 schemes (s3, s3a, s3n) are one store, a local path is made absolute with its symlinks
resolved, and a glob counts from the folder before its first wildcard.
"""
from __future__ import annotations

import os
import posixpath
import re
from typing import Callable, Mapping
from urllib.parse import urlsplit

S3_SCHEMES = ("s3", "s3a", "s3n")
_GLOB = re.compile(r"[*?\[{]")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def location(path: str) -> tuple[tuple[str, str], tuple[str, ...]]:
    """((store, bucket or host), path segments) of a path or URI."""
    if _SCHEME.match(path):
        parts = urlsplit(path)
        scheme, host, folder = parts.scheme.lower(), parts.netloc, parts.path
    else:
        scheme, host, folder = "file", "", path
    if scheme in S3_SCHEMES:
        scheme = "s3"
    elif scheme == "file":
        folder = os.path.realpath(folder or "/")
    segments = []
    for segment in posixpath.normpath("/" + folder).split("/"):
        if _GLOB.search(segment):
            break
        if segment:
            segments.append(segment)
    return (scheme, host), tuple(segments)


def _within(inner: tuple, outer: tuple) -> bool:
    return inner[0] == outer[0] and inner[1][:len(outer[1])] == outer[1]


def clash(flags: Mapping[str, str | None], resolve: Callable[[str], str] = str) -> str | None:
    """The first pair of `{flag: path}` where one path is the other or lies inside it, said in
    one sentence; None when every pair is apart. Flags without a path are skipped; `resolve`
    turns a path as typed into the URI compared (the job's: Hadoop's qualified path)."""
    given = [(flag, path, location(resolve(path))) for flag, path in flags.items() if path]
    for i, (flag_a, path_a, a) in enumerate(given):
        for flag_b, path_b, b in given[i + 1:]:
            if a == b:
                return f"{flag_a} and {flag_b} are the same folder ({path_a})"
            if _within(a, b):
                return f"{flag_a} {path_a} is inside {flag_b} {path_b}"
            if _within(b, a):
                return f"{flag_b} {path_b} is inside {flag_a} {path_a}"
    return None


def refusal(flags: Mapping[str, str | None], resolve: Callable[[str], str] = str) -> str | None:
    """`clash` as a refusal: what is wrong and what to do instead."""
    found = clash(flags, resolve)
    return found and f"{found}: a run would write into what it reads; give each a folder of its own"
