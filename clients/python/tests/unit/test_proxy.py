# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""proxy_request and logs against a stand-in API server (a real HTTP server on loopback): what
reaches the API when the path, the headers or the answer come from a hostile sandbox."""
import asyncio

import pytest
from aiohttp import web
from kubernetes import client as k8s_client

from sandbox_apiserver import SandboxRequestError, _proxy
from sandbox_apiserver._transport import Transport
from sandbox_apiserver.aio import AsyncSandbox

PROXY = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/team-a/sandboxclaims/mine/proxy"


class StandIn:
    """A loopback HTTP server recording every request; routes answer as the test sets them."""

    def __init__(self, handler):
        self.seen = []
        self._handler = handler

    async def __aenter__(self):
        async def record(request):
            self.seen.append(request)
            return await self._handler(request)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", record)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        cfg = k8s_client.Configuration()
        cfg.host = f"http://127.0.0.1:{port}"
        cfg.api_key = {"authorization": "the-client's"}
        cfg.api_key_prefix = {"authorization": "Bearer"}
        self.transport = Transport(cfg)
        self.sandbox = AsyncSandbox(None, self.transport, "team-a", "mine", "mine-sandbox")
        return self

    async def __aexit__(self, *exc):
        await self.transport.close()
        await self._runner.cleanup()


async def ok(request):
    return web.Response(text="ok", headers={"Set-Cookie": "planted=by-the-sandbox; Path=/"})


@pytest.mark.parametrize(
    "path",
    [
        "../../../../../../api/v1/namespaces/team-a/secrets",
        "/a/../../../../../../../api/v1/namespaces/team-a/secrets",
        "%2e%2e/%2E%2E/%2e%2e/%2e%2e/%2e%2e/%2e%2e/api/v1/secrets",
        ".%2e/.%2e/.%2e/.%2e/.%2e/.%2e/api/v1/secrets",
        "..%2f..%2f..%2f..%2f..%2f..%2fapi/v1/secrets",
        "..\\..\\..\\..\\..\\..\\api\\v1\\secrets",
        "ok/../..",
        "..",
        "x\r\nImpersonate-User: admin",
    ],
)
def test_a_path_out_of_the_proxy_is_refused_before_any_request(path):
    async def run():
        async with StandIn(ok) as api:
            with pytest.raises(ValueError):
                await api.sandbox.proxy_request("DELETE", path)
            assert api.seen == []

    asyncio.run(run())


@pytest.mark.parametrize(
    "path, want",
    [
        ("/", PROXY + "/"),
        ("healthz", PROXY + "/healthz"),
        ("/a/./b/../c?x=1&y", PROXY + "/a/c?x=1&y="),
        ("/a%2Fb/c", PROXY + "/a%2Fb/c"),
        ("/%252e%252e/x", PROXY + "/%252e%252e/x"),
    ],
)
def test_a_path_below_the_proxy_is_sent(path, want):
    async def run():
        async with StandIn(ok) as api:
            resp = await api.sandbox.proxy_request("GET", path)
            assert resp.status == 200 and resp.text == "ok"
            assert [r.raw_path for r in api.seen] == [want]

    asyncio.run(run())


def test_identity_headers_and_cookies_are_not_sent():
    forged = {
        "Authorization": "Bearer meant-for-the-sandbox",
        "proxy-authorization": "Basic x",
        "Impersonate-User": "admin",
        "impersonate_group": "system:masters",
        "Impersonate-Extra-Scopes": "all",
        "X-Remote-User": "admin",
        "x_remote_group": "system:masters",
        "Cookie": "session=stolen",
        "Host": "kubernetes.default",
        "X-Request-Id": "kept",
    }

    async def run():
        async with StandIn(ok) as api:
            await api.sandbox.proxy_request("GET", "/first", headers=forged)
            # The first answer set a cookie: it is not sent back, to this sandbox or another.
            await api.sandbox.proxy_request("GET", "/second")
            for r in api.seen:
                names = {k.lower().replace("_", "-") for k in r.headers}
                assert r.headers["Authorization"] == "Bearer the-client's"
                assert not {n for n in names if n.startswith(("impersonate-", "x-remote-"))}, r.headers
                assert "cookie" not in names and "proxy-authorization" not in names
                assert r.headers["Host"].startswith("127.0.0.1:")
            assert api.seen[0].headers["X-Request-Id"] == "kept"

    asyncio.run(run())


def test_identity_header_names():
    for name in ["Authorization", "AUTHORIZATION", " cookie", "Impersonate-Uid", "impersonate_user", "X-Remote-Extra-Foo",
                 "x_remote_user", "Proxy-Authorization", "host"]:
        assert _proxy.is_identity_header(name), name
    for name in ["X-Request-Id", "Content-Type", "Accept", "X-Remotely", "Authorization-Hint"]:
        assert not _proxy.is_identity_header(name), name


def test_a_body_over_the_bound_is_refused():
    async def big(request):
        resp = web.StreamResponse()
        await resp.prepare(request)
        for _ in range(64):
            await resp.write(b"x" * (64 << 10))
        return resp

    async def run():
        async with StandIn(big) as api:
            with pytest.raises(SandboxRequestError, match=r"exceeds 1048576 bytes \(max_body_bytes\)"):
                await api.sandbox.proxy_request("GET", "/", max_body_bytes=1 << 20)
            resp = await api.sandbox.proxy_request("GET", "/", max_body_bytes=4 << 20)
            assert len(resp.body) == 4 << 20

    asyncio.run(run())


def test_log_lines_are_bounded():
    async def log(request):
        resp = web.StreamResponse()
        await resp.prepare(request)
        # Three and a half bounds without a newline, then a short line and an unfinished one.
        await resp.write(b"a" * 3000 + b"b" * 500 + b"\nshort\nend")
        return resp

    async def run():
        async with StandIn(log) as api:
            lines = [line async for line in api.sandbox.logs(max_line_bytes=1000)]
            assert [len(line) for line in lines] == [1000, 1000, 1000, 500, 5, 3]
            assert lines[-2:] == ["short", "end"]
            with pytest.raises(ValueError):
                [line async for line in api.sandbox.logs(max_line_bytes=0)]

    asyncio.run(run())
