"""Where model artifacts live: a local folder, or an ``s3://`` prefix copied once per node.

An artifact is a directory whose ``manifest.json`` lists every other file with its sha256
(``{"files": {"model.onnx": "<hex>", "tokenizer/tokenizer.json": "<hex>"}, ...}``).

``localize(uri)`` turns an artifact URI into a local directory:

- a local path or ``file://`` URI is returned as a ``Path``, unchanged and not copied;
- an ``s3://bucket/prefix/`` URI (``s3a://`` and ``s3n://`` are read the same way) is
  downloaded into ``<cache_dir>/<sha256 of manifest.json>/``. Every process on a node that asks
  for the same artifact gets the same directory, and only one of them downloads it: the others
  wait on a file lock (``fcntl.flock``) and then reuse what it wrote. Files are written into a
  temporary directory next to the cache entry, each checked against the manifest's sha256, and
  the directory is renamed into place only when all of them match, so a cache entry that exists
  is complete. A crashed download leaves only a temporary directory, removed by the next
  process that takes the lock.

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
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import urllib.parse
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

__all__ = ["ArtifactStoreError", "CACHE_ENV", "DEFAULT_CACHE_DIR", "MANIFEST", "localize"]

MANIFEST = "manifest.json"
CACHE_ENV = "ACCEL_SCORING_CACHE"
DEFAULT_CACHE_DIR = "/tmp/accel-scoring-cache"
_S3_SCHEMES = ("s3", "s3a", "s3n")
_CHUNK = 1 << 20


class ArtifactStoreError(RuntimeError):
    """An artifact could not be read or did not match its manifest; the message says which."""


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
        ArtifactStoreError: the manifest or a file is missing, unreadable (access denied, no
            credentials, endpoint unreachable) or its sha256 differs from the manifest.
    """
    if isinstance(uri, os.PathLike):
        return Path(uri)
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme == "file":
        return Path(urllib.parse.unquote(parsed.path))
    if parsed.scheme in _S3_SCHEMES:
        if not parsed.netloc:
            raise ArtifactStoreError(f"{uri!r} names no bucket; expected s3://bucket/prefix/")
        prefix = parsed.path.lstrip("/")
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        root = Path(cache_dir if cache_dir is not None else os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR)
        return _localize_s3(s3_client or _default_s3_client(), parsed.netloc, prefix, root)
    if len(parsed.scheme) > 1:  # a one-letter "scheme" is a Windows drive, not a URI
        raise ArtifactStoreError(
            f"unsupported artifact URI scheme {parsed.scheme!r} in {uri!r}; "
            "use a local path, file://, or s3://"
        )
    return Path(uri)


def _default_s3_client() -> Any:
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:  # executors that only read local artifacts never get here
        raise ArtifactStoreError(
            "reading s3:// artifacts needs boto3: the aws extra (README.md, 'Installing on executors')"
        ) from exc
    return boto3.client("s3", config=Config(retries={"mode": "standard", "max_attempts": 5}))


def _localize_s3(client: Any, bucket: str, prefix: str, root: Path) -> Path:
    location = f"s3://{bucket}/{prefix}"
    manifest_bytes = _read_object(client, bucket, prefix + MANIFEST, location)
    files = _manifest_files(manifest_bytes, location)
    key = hashlib.sha256(manifest_bytes).hexdigest()
    final = root / key
    if (final / MANIFEST).is_file():
        return final
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArtifactStoreError(
            f"cannot create the artifact cache {root}: {exc}; set {CACHE_ENV} to a writable folder"
        ) from exc
    with _exclusive_lock(root / f".{key}.lock"):
        if (final / MANIFEST).is_file():  # another process finished while we waited
            return final
        _remove_leftovers(root, key)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.tmp-", dir=root))
        try:
            for rel, expected in files.items():
                _download_checked(client, bucket, prefix, rel, tmp / rel, expected)
            (tmp / MANIFEST).write_bytes(manifest_bytes)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return final


def _manifest_files(manifest_bytes: bytes, location: str) -> dict[str, str]:
    try:
        manifest = json.loads(manifest_bytes)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArtifactStoreError(f"{location}{MANIFEST} is not valid JSON: {exc}") from exc
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not files:
        raise ArtifactStoreError(
            f"{location}{MANIFEST} has no 'files' mapping of relative path -> sha256"
        )
    for rel, digest in files.items():
        pure = PurePosixPath(rel)
        if not rel or pure.is_absolute() or ".." in pure.parts or "\\" in rel or rel == MANIFEST:
            raise ArtifactStoreError(f"{location}{MANIFEST} lists an unsafe file path {rel!r}")
        if not (isinstance(digest, str) and len(digest) == 64 and _is_hex(digest)):
            raise ArtifactStoreError(
                f"{location}{MANIFEST} gives {rel!r} the sha256 {digest!r}; expected 64 hex digits"
            )
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


def _get_object(client: Any, bucket: str, key: str, location: str) -> Any:
    from botocore.exceptions import BotoCoreError, ClientError

    uri = f"s3://{bucket}/{key}"
    try:
        return client.get_object(Bucket=bucket, Key=key)["Body"]
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("NoSuchKey", "404", "NotFound"):
            what = "has no manifest.json" if key.endswith(MANIFEST) else f"is missing {key!r}"
            raise ArtifactStoreError(f"artifact {location} {what} ({uri} does not exist)") from exc
        if code == "NoSuchBucket":
            raise ArtifactStoreError(f"cannot read {uri}: bucket {bucket!r} does not exist") from exc
        if code in ("AccessDenied", "403", "Forbidden", "AllAccessDisabled"):
            raise ArtifactStoreError(
                f"access denied reading {uri}: the bucket may belong to another account, or "
                "these credentials lack s3:GetObject on it"
            ) from exc
        raise ArtifactStoreError(f"cannot read {uri}: {code or exc}") from exc
    except BotoCoreError as exc:  # no credentials, endpoint unreachable, ...
        raise ArtifactStoreError(f"cannot read {uri}: {exc}") from exc


def _read_object(client: Any, bucket: str, key: str, location: str) -> bytes:
    return _get_object(client, bucket, key, location).read()


def _download_checked(
    client: Any, bucket: str, prefix: str, rel: str, dest: Path, expected: str
) -> None:
    from botocore.exceptions import BotoCoreError

    location = f"s3://{bucket}/{prefix}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    body = _get_object(client, bucket, prefix + rel, location)
    digest = hashlib.sha256()
    try:
        with open(dest, "wb") as out:
            for chunk in body.iter_chunks(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
    except BotoCoreError as exc:
        raise ArtifactStoreError(f"download of {location}{rel} broke off: {exc}") from exc
    actual = digest.hexdigest()
    if actual != expected:
        raise ArtifactStoreError(
            f"sha256 mismatch for {rel!r} in artifact {location}: manifest.json says {expected}, "
            f"the downloaded file has {actual}"
        )
