"""S3 helpers for staging: parse URIs, upload with checksums, skip what is already there.

Every helper takes a boto3 S3 client. Uploads carry the file's sha256 twice: as the S3
additional checksum (``ChecksumSHA256`` on the object or on each part, which S3 checks on
arrival) and as user metadata ``sha256`` (the hex digest of the whole file), which is how a later
upload recognises an object that is already there. After an upload the object is read back with
``HeadObject`` and its size, metadata and checksum compared with the local file.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emr.errors import EmrError, explain_client_error
from engines.artifact import sha256_file

MULTIPART_THRESHOLD = 16 * 1024 * 1024
PART_SIZE = 16 * 1024 * 1024  # S3 allows 5 MiB .. 5 GiB per part and 10,000 parts
SHA256_METADATA = "sha256"


@dataclass(frozen=True)
class S3Uri:
    """``s3://bucket/key``; ``key`` may be a prefix ending in ``/``."""

    bucket: str
    key: str

    @classmethod
    def parse(cls, uri: str) -> "S3Uri":
        for scheme in ("s3://", "s3a://", "s3n://"):
            if uri.startswith(scheme):
                bucket, _, key = uri[len(scheme):].partition("/")
                if bucket:
                    return cls(bucket, key)
        raise EmrError(f"expected an s3://bucket/key URI, got {uri!r}", exit_code=2)

    def join(self, *parts: str) -> "S3Uri":
        key = self.key
        for part in parts:
            key = (key.rstrip("/") + "/" if key else "") + part.lstrip("/")
        return S3Uri(self.bucket, key)

    def as_prefix(self) -> "S3Uri":
        return self if not self.key or self.key.endswith("/") else S3Uri(self.bucket, self.key + "/")

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


@dataclass(frozen=True)
class UploadResult:
    uri: str
    sha256: str
    size: int
    skipped: bool


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode("ascii")


def head(client: Any, uri: S3Uri) -> dict[str, Any] | None:
    """``HeadObject`` with checksums, or ``None`` when the object does not exist."""
    from botocore.exceptions import ClientError

    try:
        return client.head_object(Bucket=uri.bucket, Key=uri.key, ChecksumMode="ENABLED")
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in ("404", "NoSuchKey", "NotFound"):
            return None
        raise explain_client_error(exc, f"reading {uri}") from exc


def require_object(client: Any, uri: S3Uri, hint: str = "") -> dict[str, Any]:
    """``HeadObject``; a missing object is an ``EmrError`` whose message ends with ``hint``."""
    found = head(client, uri)
    if found is None:
        raise EmrError(f"{uri} does not exist" + (f"; {hint}" if hint else ""))
    return found


def upload(
    client: Any,
    path: Path,
    uri: S3Uri,
    *,
    verify: bool = True,
    part_size: int = PART_SIZE,
    multipart_threshold: int = MULTIPART_THRESHOLD,
) -> UploadResult:
    """Upload ``path`` to ``uri`` unless an object with the same sha256 is already there.

    Args:
        verify: read the object back and compare size, metadata and checksum (turned off for
            dry runs, where nothing was written).
        part_size: bytes per part for multipart uploads.
        multipart_threshold: files at least this large go up in parts.

    Raises:
        EmrError: the upload failed, was refused, or the object read back differs.
    """
    from botocore.exceptions import ClientError

    size = path.stat().st_size
    sha = sha256_file(path)
    existing = head(client, uri)
    if existing and existing.get("Metadata", {}).get(SHA256_METADATA) == sha and existing.get(
        "ContentLength"
    ) == size:
        return UploadResult(str(uri), sha, size, skipped=True)
    try:
        if size >= multipart_threshold:
            expected_checksum = _multipart(client, path, uri, sha, part_size)
        else:
            with open(path, "rb") as fh:
                data = fh.read()
            expected_checksum = _b64(hashlib.sha256(data).digest())
            client.put_object(
                Bucket=uri.bucket,
                Key=uri.key,
                Body=data,
                ChecksumAlgorithm="SHA256",
                ChecksumSHA256=expected_checksum,
                Metadata={SHA256_METADATA: sha},
            )
    except ClientError as exc:
        raise explain_client_error(exc, f"uploading {path} to {uri}") from exc
    if verify:
        _verify(client, uri, sha, size, expected_checksum)
    return UploadResult(str(uri), sha, size, skipped=False)


def _multipart(client: Any, path: Path, uri: S3Uri, sha: str, part_size: int) -> str:
    """Upload in parts, each with its own SHA-256; return the expected composite checksum."""
    upload_id = client.create_multipart_upload(
        Bucket=uri.bucket, Key=uri.key, ChecksumAlgorithm="SHA256", ChecksumType="COMPOSITE",
        Metadata={SHA256_METADATA: sha},
    )["UploadId"]
    parts: list[dict[str, Any]] = []
    part_digests = b""
    try:
        with open(path, "rb") as fh:
            for number, chunk in enumerate(iter(lambda: fh.read(part_size), b""), start=1):
                digest = hashlib.sha256(chunk).digest()
                part_digests += digest
                answer = client.upload_part(
                    Bucket=uri.bucket,
                    Key=uri.key,
                    UploadId=upload_id,
                    PartNumber=number,
                    Body=chunk,
                    ChecksumSHA256=_b64(digest),
                )
                parts.append(
                    {"PartNumber": number, "ETag": answer["ETag"], "ChecksumSHA256": _b64(digest)}
                )
        client.complete_multipart_upload(
            Bucket=uri.bucket, Key=uri.key, UploadId=upload_id, MultipartUpload={"Parts": parts}
        )
    except BaseException:
        try:
            client.abort_multipart_upload(Bucket=uri.bucket, Key=uri.key, UploadId=upload_id)
        except Exception:  # the original error is the one worth reporting
            pass
        raise
    return f"{_b64(hashlib.sha256(part_digests).digest())}-{len(parts)}"


def _verify(client: Any, uri: S3Uri, sha: str, size: int, expected_checksum: str) -> None:
    found = head(client, uri)
    problems = []
    if found is None:
        problems.append("the object is not there after the upload")
    else:
        if found.get("ContentLength") != size:
            problems.append(f"size {found.get('ContentLength')} != local {size}")
        if found.get("Metadata", {}).get(SHA256_METADATA) != sha:
            problems.append("sha256 metadata differs from the local file")
        remote_checksum = found.get("ChecksumSHA256")
        if remote_checksum and not _same_checksum(remote_checksum, expected_checksum):
            problems.append(f"S3 checksum {remote_checksum} != expected {expected_checksum}")
    if problems:
        raise EmrError(f"verifying {uri} after upload failed: " + "; ".join(problems))


def _same_checksum(remote: str, expected: str) -> bool:
    """Compare S3's checksum with ours; a composite one may come with or without ``-<parts>``."""
    if remote == expected:
        return True
    base, _, parts = expected.partition("-")
    return bool(parts) and remote == base


def read_bytes(client: Any, uri: S3Uri) -> bytes:
    from botocore.exceptions import ClientError

    try:
        return client.get_object(Bucket=uri.bucket, Key=uri.key)["Body"].read()
    except ClientError as exc:
        raise explain_client_error(exc, f"reading {uri}") from exc


def tail_log(client: Any, uri: S3Uri, lines: int = 25) -> list[str]:
    """Last ``lines`` lines of a (possibly gzipped) log object; ``[]`` if it cannot be read."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        data = client.get_object(Bucket=uri.bucket, Key=uri.key)["Body"].read()
    except (ClientError, BotoCoreError):
        return []
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except OSError:
            return []
    return data.decode("utf-8", errors="replace").splitlines()[-lines:]

