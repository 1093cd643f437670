# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""What the sync and async clients share about claims: the API's coordinates, label
validation, the claim they create and how its status reads. No I/O here."""

from __future__ import annotations

import datetime
import re
import uuid
from typing import Any, Mapping

from .errors import SandboxNotFoundError, SandboxNotReadyError, SandboxTemplateNotFoundError

CLAIM_GROUP = "extensions.agents.x-k8s.io"
SANDBOX_GROUP = "agents.x-k8s.io"
VERSION = "v1beta1"
CLAIMS = "sandboxclaims"
SANDBOXES = "sandboxes"

# Informational marks the server's startup metric reads (see pkg/apis/agents/v1beta1).
CREATED_BY_LABEL = "agents.x-k8s.io/created-by"
CREATED_BY_VALUE = "sandbox-sdk-python"
REQUESTED_AT_ANNOTATION = "agents.x-k8s.io/client-first-requested-at"

CLAIM_NAME_PREFIX = "sandbox-claim-"

# The Ready=False reasons no waiting cures (the Go SDK's terminalReasons).
TEMPLATE_NOT_FOUND = "TemplateNotFound"
_TERMINAL_REASONS = {"InvalidMetadata", "ClaimExpired", "SandboxExpired"}

_LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_LABEL_PREFIX_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME_MAX = 63
_LABEL_PREFIX_MAX = 253


def validate_labels(labels: Mapping[str, str] | None) -> dict[str, str]:
    """Checks labels against Kubernetes' rules before any request, raising ValueError naming the
    first bad key or value; returns a copy."""
    if labels is None:
        return {}
    out: dict[str, str] = {}
    for key, value in labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValueError(f"label {key!r}: keys and values must be strings")
        prefix, slash, name = key.rpartition("/")
        if slash:
            if not prefix or len(prefix) > _LABEL_PREFIX_MAX or not _LABEL_PREFIX_RE.match(prefix):
                raise ValueError(
                    f"label key {key!r}: the prefix must be a DNS subdomain of at most "
                    f"{_LABEL_PREFIX_MAX} characters (lower case alphanumerics, '-' and '.')"
                )
        if not name or len(name) > _LABEL_NAME_MAX or not _LABEL_NAME_RE.match(name):
            raise ValueError(
                f"label key {key!r}: the name must be 1-{_LABEL_NAME_MAX} characters, alphanumerics, "
                "'-', '_' or '.', starting and ending with an alphanumeric"
            )
        if value and (len(value) > _LABEL_NAME_MAX or not _LABEL_NAME_RE.match(value)):
            raise ValueError(
                f"label {key!r}: the value {value!r} must be empty or at most {_LABEL_NAME_MAX} "
                "characters, alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric"
            )
        out[key] = value
    return out


def new_claim_name() -> str:
    """The seed SDK's claim names: known before the create, so a lost answer can be cleaned up."""
    return CLAIM_NAME_PREFIX + uuid.uuid4().hex[:8]


def claim_manifest(
    name: str,
    *,
    template: str | None,
    warmpool: str | None,
    labels: Mapping[str, str],
    shutdown_after_seconds: int | None,
    env: Mapping[str, str] | None = None,
    now: datetime.datetime | None = None,
) -> dict[str, Any]:
    """The SandboxClaim create_sandbox sends. ``warmpool`` is the seed's policy ("none",
    "default") or the name of a warm pool to claim from (spec.warmPoolRef); ``env`` goes to the
    sandbox's main container (spec.env, as the template allows; a warm sandbox gets it too)."""
    if not template and warmpool in (None, "none", "default"):
        raise ValueError("create_sandbox needs a template, or the name of a warm pool as warmpool")
    if template is not None and not isinstance(template, str):
        raise ValueError("template must be a string")
    now = now or datetime.datetime.now(datetime.timezone.utc)
    spec: dict[str, Any] = {}
    if template:
        spec["sandboxTemplateRef"] = {"name": template}
    if warmpool in ("none", "default"):
        spec["warmpool"] = warmpool
    elif warmpool:
        spec["warmPoolRef"] = {"name": warmpool}
    if env:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ValueError("env must map names (str) to values (str)")
        spec["env"] = [{"name": k, "value": v} for k, v in env.items()]
    if shutdown_after_seconds is not None:
        if type(shutdown_after_seconds) is not int or shutdown_after_seconds <= 0:
            raise ValueError("shutdown_after_seconds must be a positive int")
        try:
            at = now + datetime.timedelta(seconds=shutdown_after_seconds)
        except OverflowError as e:
            raise ValueError("shutdown_after_seconds is too large") from e
        spec["lifecycle"] = {"shutdownTime": rfc3339(at), "shutdownPolicy": "Delete"}
    all_labels = dict(labels)
    all_labels[CREATED_BY_LABEL] = CREATED_BY_VALUE
    return {
        "apiVersion": f"{CLAIM_GROUP}/{VERSION}",
        "kind": "SandboxClaim",
        "metadata": {
            "name": name,
            "labels": all_labels,
            "annotations": {REQUESTED_AT_ANNOTATION: rfc3339(now)},
        },
        "spec": spec,
    }


def rfc3339(t: datetime.datetime) -> str:
    return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return c  # type: ignore[no-any-return]
    return None


def ready_sandbox_name(obj: Mapping[str, Any], what: str) -> str | None:
    """The name of the ready sandbox of a claim (or of a Sandbox: its own name), None while it is
    not Ready; raises when it will not become Ready (a claim being deleted among those)."""
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        raise SandboxNotFoundError(f"{what} is being deleted", status=404)
    c = condition(obj, "Ready")
    if c is None:
        return None
    if c.get("status") == "True":
        if obj.get("kind") == "Sandbox":
            return str(obj["metadata"]["name"])
        name = ((obj.get("status") or {}).get("sandbox") or {}).get("name")
        return str(name) if name else None
    reason = c.get("reason", "")
    if reason == TEMPLATE_NOT_FOUND:
        raise SandboxTemplateNotFoundError(f"{what}: {c.get('message', 'template not found')}", reason=reason)
    if reason in _TERMINAL_REASONS:
        raise SandboxNotReadyError(f"{what} will not become Ready: {reason}: {c.get('message', '')}", reason=reason)
    return None


def condition_true(obj: Mapping[str, Any], kind: str, generation: int) -> bool:
    """Whether the condition is True at an observed generation of at least generation."""
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True" and int(c.get("observedGeneration", 0)) >= generation


def describe_wait(obj: Mapping[str, Any] | None, kind: str) -> str:
    """Where a wait stood when it ran out: the condition's reason and message."""
    c = condition(obj, kind) if obj else None
    if c is None:
        return f"no {kind} condition yet"
    return f"{kind}={c.get('status')} ({c.get('reason', '')}: {c.get('message', '')})"


def object_path(namespace: str, plural: str, name: str, sub: str = "") -> str:
    """The API path of a claim or sandbox (and of one of its subresources)."""
    group = CLAIM_GROUP if plural == CLAIMS else SANDBOX_GROUP
    path = f"/apis/{group}/{VERSION}/namespaces/{namespace}/{plural}/{name}"
    return f"{path}/{sub}" if sub else path
