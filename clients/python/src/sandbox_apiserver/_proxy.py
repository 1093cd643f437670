# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""The rules of a request through the proxy subresource, shared by the sync and async clients
and kept as the Go SDK keeps them (pkg/sdk/sandbox/proxy.go); no I/O here.

The request goes to the cluster's API with the caller's credentials, so its path must stay below
the sandbox's proxy path (aiohttp resolves ``..`` and ``%2e%2e`` before sending, which would
make it any API request the caller may make) and the caller's headers must not carry an
identity of their own to the API server."""

from __future__ import annotations

import re
from typing import Mapping
from urllib.parse import unquote

# proxy_request reads at most this many bytes of a response body by default.
DEFAULT_MAX_BODY_BYTES = 64 << 20

# Header names kube-apiserver authenticates or impersonates by, compared in lower case with "_"
# read as "-" (as CGI-style servers read them): the caller's own credentials are added after.
_IDENTITY_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "host"})
_IDENTITY_PREFIXES = ("impersonate-", "x-remote-")


def is_identity_header(name: str) -> bool:
    """Whether the caller's header name is one the SDK does not send (see _IDENTITY_HEADERS)."""
    key = name.strip().lower().replace("_", "-")
    return key in _IDENTITY_HEADERS or key.startswith(_IDENTITY_PREFIXES)


def request_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """The caller's headers without those is_identity_header names."""
    return {k: v for k, v in (headers or {}).items() if not is_identity_header(k)}


_SEPARATORS = re.compile(r"[/\\]")


def split_target(path: str) -> tuple[str, list[tuple[str, str]] | None]:
    """The path below the sandbox's proxy path and the query parameters of a proxy_request path.
    A path that would climb above the proxy path, with ``..`` segments as they are or
    percent-encoded (``%2e%2e``, ``..%2f``), or with a backslash for a slash, raises ValueError,
    as do control characters."""
    if not isinstance(path, str):
        raise ValueError(f"the proxy path must be a string, not {type(path).__name__}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise ValueError(f"the proxy path {path!r} holds a control character")
    path_only, _, query = path.partition("?")
    path_only = path_only.partition("#")[0]
    depth = 0
    for segment in _SEPARATORS.split(unquote(path_only)):
        if segment == "..":
            depth -= 1
            if depth < 0:
                raise ValueError(f"the proxy path {path!r} climbs out of the sandbox's proxy path")
        elif segment not in ("", "."):
            depth += 1
    params = [(k, v) for k, _, v in (kv.partition("=") for kv in query.split("&") if kv)] if query else None
    return path_only.lstrip("/"), params


class BodyTooLarge(ValueError):
    """A response body over the caller's bound."""


def check_body(read: int, max_bytes: int) -> None:
    """Raises BodyTooLarge once more than max_bytes of a body were read."""
    if read > max_bytes:
        raise BodyTooLarge(f"the response body exceeds {max_bytes} bytes (max_body_bytes)")
