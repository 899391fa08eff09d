"""Where model artifacts live, and the one parser of their URIs (driver and workers alike).

An artifact URI is a local path, a ``file://`` URI (percent-decoded), or an ``s3://bucket/prefix/``
URI (``s3a://`` and ``s3n://`` are read the same way); any other scheme is refused. Every failure
here (unsupported scheme, missing key or manifest, access denied, corrupt or partial download,
boto3 missing) is an ``ArtifactError`` that names the URI and the cause, so a job can report it in
one line.

An artifact is a directory whose ``manifest.json`` lists every other file with its sha256
(``{"files": {"model.onnx": "<hex>", "tokenizer/tokenizer.json": "<hex>"}, ...}``).

``open_manifest(uri)`` is what the driver checks before any task starts: a local artifact is opened
with every file verified; for ``s3://`` only ``manifest.json`` is read and checked (one small GET),
because the workers verify every file as they download it.

``localize(uri)`` turns an artifact URI into a local directory, on the workers:

- a local path or ``file://`` URI is returned as a ``Path``, not copied;
- an ``s3://`` artifact is downloaded into ``<cache_dir>/<sha256 of manifest.json>/``. Every process
  on a node that asks for the same artifact gets the same directory, and only one of them
  downloads it: the others wait on a file lock (``fcntl.flock``) and then reuse what it wrote.
  Files are written into a temporary directory next to the cache entry, each checked against the
  manifest's sha256, and the directory is renamed into place only when all of them match, so a
  cache entry that exists is complete. A crashed download leaves only a temporary directory,
  removed by the next process that takes the lock.

The cache key comes from the manifest's bytes, so publishing a new artifact under the same
prefix gives a new cache entry; each call reads ``manifest.json`` (one small GET) and nothing
else when the entry is already there.

Example::

    from engines.store import localize
    path = localize("s3://models/minilm-dup/1.0/")   # /tmp/accel-scoring-cache/3f2a.../
    path = localize("/opt/models/minilm-dup")         # returned as is
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import io
import json
import os
import shutil
import tempfile
import urllib.parse
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

from engines.artifact import MANIFEST, Manifest, parse_manifest, read_manifest, verify_files
from engines.errors import ArtifactError

__all__ = ["CACHE_ENV", "DEFAULT_CACHE_DIR", "S3Prefix", "localize", "open_artifact", "open_manifest", "parse_uri",
           "s3_retries"]

CACHE_ENV = "ACCEL_SCORING_CACHE"
DEFAULT_CACHE_DIR = "/tmp/accel-scoring-cache"
_S3_SCHEMES = ("s3", "s3a", "s3n")
_CHUNK = 1 << 20


@dataclasses.dataclass(frozen=True)
class S3Prefix:
    """An artifact under ``s3://bucket/prefix/``; ``prefix`` is empty or ends with a slash."""

    bucket: str
    prefix: str

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def parse_uri(uri: str | os.PathLike[str]) -> Path | S3Prefix:
    """A local ``Path`` or an ``S3Prefix`` for an artifact URI; ArtifactError for any other scheme."""
    if isinstance(uri, os.PathLike) or "://" not in uri:
        return Path(uri)
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise ArtifactError(f"{uri} names host {parsed.netloc!r}; a file:// URI is file:///absolute/path")
        return Path(urllib.parse.unquote(parsed.path))
    if parsed.scheme in _S3_SCHEMES:
        if not parsed.netloc:
            raise ArtifactError(f"{uri} names no bucket; expected s3://bucket/prefix/")
        prefix = parsed.path.lstrip("/")
        return S3Prefix(parsed.netloc, prefix + "/" if prefix and not prefix.endswith("/") else prefix)
    raise ArtifactError(f"unsupported scheme {parsed.scheme + '://'!r}; an artifact is a local path, file:// or s3://")


def open_artifact(folder: str | os.PathLike[str], verify: bool = True) -> Manifest:
    """An artifact folder's manifest, its backend checked against the engines (engines/registry.py
    checked) and, by default, every file against its sha256."""
    manifest = _checked(read_manifest(Path(folder)))
    if verify:
        verify_files(Path(folder), manifest)
    return manifest


def open_manifest(uri: str | os.PathLike[str], *, s3_client: Any = None) -> Manifest:
    """The manifest the driver checks: every file verified locally, only manifest.json on S3."""
    where = parse_uri(uri)
    if isinstance(where, Path):
        return open_artifact(where)
    data = _read_object(s3_client or _default_s3_client(), where, MANIFEST)
    _manifest_files(data, where)
    return _checked(parse_manifest(data, f"{where}{MANIFEST}"))


def _checked(manifest: Manifest) -> Manifest:
    # Here, not at the top: emr/profiles.py (the Airflow venv, without numpy) imports this module,
    # and the registry imports every engine.
    from engines import registry

    return registry.checked(manifest)


def localize(
    uri: str | os.PathLike[str],
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    s3_client: Any = None,
) -> Path:
    """Return a local directory holding the artifact at ``uri``.

    Args:
        uri: a local path, a ``file://`` URI, or an ``s3://bucket/prefix/`` URI.
        cache_dir: where S3 artifacts are kept; default ``$ACCEL_SCORING_CACHE``, else
            ``/tmp/accel-scoring-cache``. Unused for local artifacts.
        s3_client: a boto3 S3 client to use instead of ``boto3.client("s3")`` (which honours
            ``AWS_ENDPOINT_URL`` and the usual credential chain).

    Returns:
        The artifact's directory. For S3 it contains ``manifest.json`` and every file it lists.

    Raises:
        ArtifactError: an unsupported URI; the manifest or a file is missing, unreadable (access
            denied, no credentials, endpoint unreachable, boto3 missing), broke off mid-download,
            or its sha256 differs from the manifest.
    """
    where = parse_uri(uri)
    if isinstance(where, Path):
        return where
    root = Path(cache_dir if cache_dir is not None else os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR)
    return _localize_s3(s3_client or _default_s3_client(), where, root)


# botocore's standard retry mode: up to 5 retries after the first attempt ("max_attempts" counts
# retries; "total_max_attempts" would count both), with jittered exponential backoff, for
# throttling (503 SlowDown), 5xx answers and dropped connections alike.
_RETRIES = {"mode": "standard", "max_attempts": 5}
_attempts = {"calls": 0, "sends": 0}  # this process's S3 API calls, and the HTTP requests they took


def s3_retries() -> int:
    """How many S3 requests botocore has sent again in this process, over every client made here:
    the job's summary reports it (a body that broke off mid-download and that s3transfer fetched
    again is a new call, not counted)."""
    return _attempts["sends"] - _attempts["calls"]


def _count(what: str):
    def handler(**_: Any) -> None:
        _attempts[what] += 1
    return handler


_COUNT_CALL, _COUNT_SEND = _count("calls"), _count("sends")


def _default_s3_client() -> Any:
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:  # executors that only read local artifacts never get here
        raise ArtifactError("reading s3:// artifacts needs boto3: the aws extra (README.md, 'Installing on executors')") from exc
    client = boto3.client("s3", config=Config(retries=_RETRIES))
    client.meta.events.register("before-call.s3", _COUNT_CALL)
    client.meta.events.register("before-send.s3", _COUNT_SEND)
    return client


def _localize_s3(client: Any, where: S3Prefix, root: Path) -> Path:
    manifest_bytes = _read_object(client, where, MANIFEST)
    files = _manifest_files(manifest_bytes, where)
    key = hashlib.sha256(manifest_bytes).hexdigest()
    final = root / key
    if (final / MANIFEST).is_file():
        return final
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArtifactError(
            f"cannot create the artifact cache {root}: {exc}; set {CACHE_ENV} to a writable folder"
        ) from exc
    with _exclusive_lock(root / f".{key}.lock"):
        if (final / MANIFEST).is_file():  # another process finished while we waited
            return final
        _remove_leftovers(root, key)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.tmp-", dir=root))
        try:
            for rel, expected in files.items():
                _download_checked(client, where, rel, tmp / rel, expected)
            (tmp / MANIFEST).write_bytes(manifest_bytes)
            os.rename(tmp, final)
        except OSError as exc:  # disk full, cache folder removed under us, ...
            raise ArtifactError(f"cannot write {where} into the artifact cache {root}: {exc}") from exc
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # gone already after the rename
    return final


def _manifest_files(manifest_bytes: bytes, where: S3Prefix) -> dict[str, str]:
    """The manifest's file list, checked before any of it becomes an S3 key or a local path."""
    try:
        manifest = json.loads(manifest_bytes)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{where}{MANIFEST} is not valid JSON: {exc}") from exc
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not files:
        raise ArtifactError(f"{where}{MANIFEST} has no 'files' mapping of relative path -> sha256")
    for rel, digest in files.items():
        pure = PurePosixPath(rel)
        if not rel or pure.is_absolute() or ".." in pure.parts or "\\" in rel or rel == MANIFEST:
            raise ArtifactError(f"{where}{MANIFEST} lists an unsafe file path {rel!r}")
        if not (isinstance(digest, str) and len(digest) == 64 and _is_hex(digest)):
            raise ArtifactError(f"{where}{MANIFEST} gives {rel!r} the sha256 {digest!r}; expected 64 hex digits")
    return {rel: digest.lower() for rel, digest in files.items()}


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released by the kernel if this process dies
        yield
    finally:
        os.close(fd)


def _remove_leftovers(root: Path, key: str) -> None:
    # Only the lock holder downloads this key, so any temp dir for it is from a dead process.
    for leftover in root.glob(f".{key}.tmp-*"):
        shutil.rmtree(leftover, ignore_errors=True)


@contextlib.contextmanager
def _reading(client: Any, where: S3Prefix, rel: str) -> Iterator[None]:
    """S3's and botocore's errors, once their retries are spent, as ArtifactErrors naming the key.
    (s3transfer starts with a HEAD, whose 404 does not say whether the key or the bucket is missing.)"""
    from botocore.exceptions import BotoCoreError, ClientError
    from s3transfer.exceptions import RetriesExceededError

    uri = f"{where}{rel}"
    try:
        yield
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("404", "NotFound") and not _bucket_exists(client, where.bucket):
            code = "NoSuchBucket"
        if code in ("NoSuchKey", "404", "NotFound"):
            why = "not an artifact, or not published yet" if rel == MANIFEST else f"{where}{MANIFEST} lists it"
            raise ArtifactError(f"{uri} does not exist: {why}") from exc
        if code == "NoSuchBucket":
            raise ArtifactError(f"cannot read {uri}: bucket {where.bucket!r} does not exist") from exc
        if code in ("AccessDenied", "403", "Forbidden", "AllAccessDisabled"):
            raise ArtifactError(
                f"access denied reading {uri}: the bucket may belong to another account, or "
                "these credentials lack s3:GetObject on it"
            ) from exc
        raise ArtifactError(f"cannot read {uri}: {exc}") from exc  # botocore says the code and the retries
    except RetriesExceededError as exc:  # s3transfer: the body broke off on every attempt
        raise ArtifactError(f"download of {uri} broke off: {exc.last_exception}") from exc
    except BotoCoreError as exc:  # no credentials, endpoint unreachable, a body that broke off, ...
        raise ArtifactError(f"cannot read {uri}: {exc}") from exc


def _bucket_exists(client: Any, bucket: str) -> bool:
    from botocore.exceptions import ClientError

    try:
        client.head_bucket(Bucket=bucket)
    except ClientError as exc:
        return exc.response.get("Error", {}).get("Code", "") not in ("404", "NoSuchBucket", "NotFound")
    return True


def _read_object(client: Any, where: S3Prefix, rel: str) -> bytes:
    """A small object (the manifest), read whole; a body that breaks off is read again."""
    buffer = io.BytesIO()
    with _reading(client, where, rel):
        client.download_fileobj(where.bucket, where.prefix + rel, buffer, Config=_transfer_config())
    return buffer.getvalue()


def _download_checked(client: Any, where: S3Prefix, rel: str, dest: Path, expected: str) -> None:
    """One artifact file, fetched by s3transfer (ranged GETs in parallel for large files, each
    fetched again when its body breaks off), then checked against the manifest's sha256."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _reading(client, where, rel):
        client.download_file(where.bucket, where.prefix + rel, str(dest), Config=_transfer_config())
    digest = hashlib.sha256()
    with open(dest, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    actual = digest.hexdigest()
    if actual != expected:
        raise ArtifactError(
            f"sha256 mismatch for {rel!r} in artifact {where}: {MANIFEST} says {expected}, "
            f"the downloaded file has {actual}"
        )


def _transfer_config() -> Any:
    """s3transfer fetches a body that broke off again, on top of botocore's retries of each request."""
    from boto3.s3.transfer import TransferConfig

    return TransferConfig(num_download_attempts=5)
