# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""The exceptions of the SDK, all rooted at SandboxError (a RuntimeError, as in the seed SDK)."""

from __future__ import annotations

import json
from typing import Any


class SandboxError(RuntimeError):
    """Any failure of the SDK. ``status`` is the HTTP status of the API's answer, when there was one."""

    def __init__(self, message: str, *, status: int | None = None, reason: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class SandboxNotFoundError(SandboxError):
    """The claim or sandbox does not exist (any more)."""


class SandboxTemplateNotFoundError(SandboxError):
    """The claim names a template (or warm pool) that does not exist."""


class SandboxNotReadyError(SandboxError):
    """The sandbox will not become Ready without a change (an expiry, refused metadata), or the
    handle was closed."""


class SandboxForbiddenError(SandboxError):
    """The caller's RBAC rights do not allow the request (HTTP 403): the message names the right."""


class SandboxClaimRefusedError(SandboxError):
    """The API refused the claim (HTTP 422/400): ``message`` is the server's, naming the fields."""


class SandboxTimeoutError(SandboxError, TimeoutError):
    """A wait or a command ran out of time. A timed-out command has been stopped."""


class SandboxConflictError(SandboxError):
    """An object of that name exists already, or changed meanwhile (HTTP 409)."""


class SandboxRequestError(SandboxError):
    """A request to the sandbox (proxy, port-forward, exec stream) failed."""


class SandboxFileError(SandboxError):
    """A file operation failed in the sandbox: missing file, bad path, too large, short copy."""


class SandboxMetadataError(SandboxError):
    """The claim was deleted while the SDK waited for its sandbox (the seed SDK's name)."""


class SandboxPortForwardError(SandboxRequestError):
    """A port-forward could not be set up or broke."""


def api_error(status: int, body: str | bytes | None, what: str) -> SandboxError:
    """The exception for an API answer of ``status`` whose body is a Kubernetes Status (or not),
    about ``what`` (e.g. "creating claim ns/name"). The server's message is kept whole: for a
    refused claim it names every bad field."""
    message, reason, causes = _status_message(body)
    text = f"{what}: {message}" if message else f"{what}: HTTP {status}"
    if status == 422 and any(c.get("reason") == "FieldValueNotFound" and str(c.get("field", "")).endswith(_SOURCE_FIELDS) for c in causes):
        # A claim from a warm pool that does not exist (a missing template is reported by the
        # claim's Ready condition instead: it may yet be created).
        return SandboxTemplateNotFoundError(text, status=status, reason=reason)
    if status == 404:
        return SandboxNotFoundError(text, status=status, reason=reason)
    if status == 403:
        return SandboxForbiddenError(text, status=status, reason=reason)
    if status in (400, 422):
        return SandboxClaimRefusedError(text, status=status, reason=reason)
    if status == 409:
        return SandboxConflictError(text, status=status, reason=reason)
    if status == 504 or reason == "Timeout":
        return SandboxTimeoutError(text, status=status, reason=reason)
    return SandboxError(text, status=status, reason=reason)


_SOURCE_FIELDS = ("spec.warmPoolRef.name", "spec.sandboxTemplateRef.name")


def _status_message(body: str | bytes | None) -> tuple[str, str | None, list[dict[str, Any]]]:
    """The message, reason and causes of a Status body (a body that is none: its text)."""
    if body is None:
        return "", None, []
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        status: Any = json.loads(body)
    except ValueError:
        return body.strip()[:2000], None, []
    if isinstance(status, dict) and status.get("kind") == "Status":
        causes = (status.get("details") or {}).get("causes") or []
        return str(status.get("message", "")), status.get("reason"), [c for c in causes if isinstance(c, dict)]
    return body.strip()[:2000], None, []
