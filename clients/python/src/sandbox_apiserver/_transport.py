# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""The Kubernetes API over aiohttp, with the identity and TLS of the caller's kubeconfig (or the
pod's service account) as the official ``kubernetes`` client loads them."""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import time
from typing import Any, AsyncIterator, Callable, Mapping, Sequence

import aiohttp
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from . import _claims
from .errors import SandboxNotFoundError, SandboxRequestError, SandboxTimeoutError, api_error

_SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
# The largest message of an exec or port-forward stream taken: the kubelet sends a stream's data
# in pieces far smaller, so only a broken or hostile peer sends more.
MAX_STREAM_MESSAGE_BYTES = 16 << 20


def load_configuration(kubeconfig: str | None, context: str | None) -> tuple[k8s_client.Configuration, str]:
    """The client configuration and default namespace: the kubeconfig's (KUBECONFIG or
    ~/.kube/config) unless none is named and the process runs in a pod. Reads files: call it
    off the event loop."""
    cfg = k8s_client.Configuration()
    if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        k8s_config.load_incluster_config(client_configuration=cfg)
        try:
            with open(_SERVICE_ACCOUNT_NAMESPACE) as f:
                return cfg, f.read().strip() or "default"
        except OSError:
            return cfg, "default"
    k8s_config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
    _, active = k8s_config.list_kube_config_contexts(config_file=kubeconfig)
    namespace = "default"
    if context is None and active:
        namespace = active.get("context", {}).get("namespace") or "default"
    elif context is not None:
        contexts, _ = k8s_config.list_kube_config_contexts(config_file=kubeconfig)
        for c in contexts:
            if c.get("name") == context:
                namespace = c.get("context", {}).get("namespace") or "default"
    return cfg, namespace


def ssl_context(cfg: k8s_client.Configuration) -> ssl.SSLContext | bool:
    if not cfg.host.startswith("https"):
        return False
    if not cfg.verify_ssl:
        return False
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    if cfg.assert_hostname is False:
        ctx.check_hostname = False
    return ctx


class Transport:
    """One aiohttp session to the cluster's API, shared by a client and its sandboxes."""

    def __init__(self, cfg: k8s_client.Configuration) -> None:
        self._cfg = cfg
        self.base = cfg.host.rstrip("/")
        self._ssl = ssl_context(cfg)
        # Bounded by the connector, not by us: each exec or watch holds a connection while it lasts.
        # No cookie jar: a cookie a sandbox sets through the proxy is not sent back to the API,
        # nor to another sandbox.
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._ssl, limit=0), cookie_jar=aiohttp.DummyCookieJar())

    async def close(self) -> None:
        await self._session.close()

    async def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        # A credential plugin's refresh hook (exec, OIDC) may run a program or do blocking I/O:
        # the one place a thread is unavoidable, and only when the kubeconfig has such a hook.
        if self._cfg.refresh_api_key_hook is not None:
            token = await asyncio.to_thread(self._cfg.get_api_key_with_prefix, "authorization")
        else:
            token = self._cfg.get_api_key_with_prefix("authorization")
        if token:
            headers["Authorization"] = token
        return headers

    async def request(
        self,
        method: str,
        path: str,
        what: str,
        *,
        body: Any = None,
        params: Sequence[tuple[str, str]] | None = None,
        content_type: str = "application/json",
        timeout: float | None = 60,
    ) -> Any:
        """A JSON request; an answer other than 2xx raises the matching SandboxError."""
        headers = await self._headers()
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body)
        try:
            async with self._session.request(
                method, self.base + path, data=data, params=params, headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as resp:
                text = await resp.read()
                if resp.status >= 300:
                    raise api_error(resp.status, text, what)
                return json.loads(text) if text else None
        except asyncio.TimeoutError as e:
            raise SandboxTimeoutError(f"{what}: no answer within {timeout}s") from e
        except aiohttp.ClientError as e:
            raise SandboxRequestError(f"{what}: {e}") from e

    async def raw(
        self,
        method: str,
        path: str,
        *,
        params: Sequence[tuple[str, str]] | None = None,
        headers: Mapping[str, str] | None = None,
        data: bytes | None = None,
        timeout: float | None = None,
    ) -> aiohttp.ClientResponse:
        """A request whose answer the caller reads (and releases) itself."""
        all_headers = dict(headers or {})
        auth = await self._headers()
        all_headers["Authorization"] = auth.get("Authorization", "")
        if not all_headers["Authorization"]:
            del all_headers["Authorization"]
        return await self._session.request(
            method, self.base + path, params=params, headers=all_headers, data=data,
            timeout=aiohttp.ClientTimeout(total=timeout), allow_redirects=False,
        )

    async def websocket(
        self, path: str, params: Sequence[tuple[str, str]], protocols: Sequence[str], what: str
    ) -> aiohttp.ClientWebSocketResponse:
        headers = await self._headers()
        headers.pop("Accept")
        try:
            return await self._session.ws_connect(
                self.base + path, params=list(params), protocols=tuple(protocols), headers=headers,
                max_msg_size=MAX_STREAM_MESSAGE_BYTES, autoping=True,
            )
        except aiohttp.WSServerHandshakeError as e:
            # The API's refusal (403, 404) comes as the handshake's status.
            raise api_error(e.status, e.message, what) from e
        except aiohttp.ClientError as e:
            raise SandboxRequestError(f"{what}: {e}") from e

    async def wait(
        self,
        namespace: str,
        plural: str,
        name: str,
        check: Callable[[dict], Any],
        timeout: float,
        what: str,
        condition: str = "Ready",
    ) -> Any:
        """Lists the one object name, then watches it until check returns something other than
        None (which is returned) or raises; a watch that ends is started again from a new list.
        The object's deletion raises SandboxNotFoundError, the end of timeout SandboxTimeoutError."""
        group = _claims.CLAIM_GROUP if plural == _claims.CLAIMS else _claims.SANDBOX_GROUP
        path = f"/apis/{group}/{_claims.VERSION}/namespaces/{namespace}/{plural}"
        selector = ("fieldSelector", f"metadata.name={name}")
        deadline = time.monotonic() + timeout
        last: dict | None = None

        def remaining() -> float:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SandboxTimeoutError(f"{what}: not {condition} after {timeout:g}s: {_claims.describe_wait(last, condition)}")
            return left

        while True:
            listed = await self.request("GET", path, what, params=[selector], timeout=remaining())
            items = listed.get("items") or []
            if not items:
                raise SandboxNotFoundError(f"{what}: {plural}/{name} not found", status=404)
            last = items[0]
            result = check(last)
            if result is not None:
                return result
            params = [selector, ("watch", "1"), ("resourceVersion", listed["metadata"]["resourceVersion"]),
                      ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(max(1, int(remaining()))))]
            try:
                async with asyncio.timeout(remaining()):
                    async for event in self._watch(path, params, what):
                        kind = event.get("type")
                        if kind == "ERROR":
                            break
                        if kind == "BOOKMARK":
                            continue
                        if kind == "DELETED":
                            raise SandboxNotFoundError(f"{what}: {plural}/{name} was deleted", status=404)
                        last = event["object"]
                        result = check(last)
                        if result is not None:
                            return result
            except TimeoutError:
                remaining()

    async def _watch(self, path: str, params: list[tuple[str, str]], what: str) -> AsyncIterator[dict]:
        resp = await self.raw("GET", path, params=params, headers={"Accept": "application/json"})
        async with resp:
            if resp.status >= 300:
                raise api_error(resp.status, await resp.read(), what)
            buf = b""
            async for chunk in resp.content.iter_any():
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)

