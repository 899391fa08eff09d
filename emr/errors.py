"""User-facing errors of the EMR tooling and how AWS errors become one clear sentence."""

from __future__ import annotations

from typing import Any


class EmrError(Exception):
    """A failure the user can act on; the CLI prints the message and exits non-zero.

    ``exit_code`` is 2 for bad input (arguments, local files) and 1 for everything that failed
    while talking to AWS or while a step ran.
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


_ACCESS_DENIED = {"AccessDenied", "AccessDeniedException", "403", "Forbidden", "AllAccessDisabled"}
_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}


def explain_client_error(exc: Any, action: str) -> EmrError:
    """Turn a botocore ``ClientError`` raised while doing ``action`` into an ``EmrError``.

    Args:
        exc: the ``botocore.exceptions.ClientError``.
        action: what was being done, e.g. ``"uploading s3://b/k"`` or ``"describing cluster j-1"``.
    """
    error = exc.response.get("Error", {}) if hasattr(exc, "response") else {}
    code = str(error.get("Code", "")) or "Unknown"
    message = error.get("Message") or str(exc)
    if code in _ACCESS_DENIED:
        hint = (
            "access denied: the bucket may belong to another account, or these credentials lack "
            "the permission"
        )
        return EmrError(f"{action} failed: {hint} ({code})")
    if code == "NoSuchBucket":
        return EmrError(f"{action} failed: the bucket does not exist ({code})")
    if code in _NOT_FOUND:
        return EmrError(f"{action} failed: no such object ({code})")
    if code == "NoSuchEntity":
        return EmrError(f"{action} failed: {message}")
    if code == "InvalidRequestException" and "not valid" in message.lower():
        return EmrError(f"{action} failed: unknown cluster id ({message})")
    return EmrError(f"{action} failed: {code}: {message}")
