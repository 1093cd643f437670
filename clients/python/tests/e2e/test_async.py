# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""The asyncio client end to end, as a claim-only tenant. Each test runs its own event loop."""

from __future__ import annotations

import asyncio
import os

import aiohttp
import pytest

import sandbox_apiserver as sdk

from .test_sync import tenant_claims


async def claim_names(plane, selector: str = "", live: bool = False) -> set[str]:
    """The names of the tenant's claims matching selector (live: those not being deleted)."""
    claims = await asyncio.to_thread(tenant_claims, plane, selector)
    return {n for n, c in claims.items() if not (live and c["metadata"].get("deletionTimestamp"))}


def test_async_lifecycle_files_and_streaming(plane, scratch):
    async def main() -> None:
        async with sdk.AsyncSandboxClient(kubeconfig=plane.kubeconfig) as client:
            sb = await client.create_sandbox(plane.http_template, labels={"test": "async"})
            assert sb.is_active and client.list_active_sandboxes() == [(plane.namespace, sb.claim_name)]
            res = await sb.commands.run("echo out; echo err >&2; exit 5")
            assert (res.stdout, res.stderr, res.exit_code) == ("out\n", "err\n", 5)

            await sb.commands.run(["mkdir", "-p", scratch])
            data = os.urandom(1 << 20)
            await sb.files.write(scratch + "/blob", data)
            assert await sb.files.read(scratch + "/blob") == data
            assert [(e.name, e.size) for e in await sb.files.list(scratch)] == [("blob", 1 << 20)]
            assert await sb.files.exists(scratch + "/blob") and not await sb.files.exists(scratch + "/nope")

            # Streaming: the command waits for a file the test creates only once the first
            # line has reached it, so the output came while the command ran.
            first = asyncio.Event()
            chunks: list[bytes] = []

            def on_stdout(chunk: bytes) -> None:
                chunks.append(chunk)
                first.set()

            script = f"echo first; while [ ! -e {scratch}/go ]; do sleep 0.05; done; echo second"
            run = asyncio.create_task(sb.commands.run(script, timeout=60, on_stdout=on_stdout))
            await asyncio.wait_for(first.wait(), 60)
            assert not run.done()
            await sb.commands.run(["touch", scratch + "/go"])
            assert (await run).stdout == "first\nsecond\n"
            assert b"".join(chunks) == b"first\nsecond\n"

            # The timeout stops the command.
            with pytest.raises(sdk.SandboxTimeoutError):
                await sb.commands.run("sleep 600", timeout=2)

            async with sb.port_forward(plane.http_port) as pf, aiohttp.ClientSession() as http:
                for path in ("/async", "/again"):
                    async with http.get(pf.url + path, timeout=aiohttp.ClientTimeout(total=30)) as resp:
                        assert await resp.text() == "hello from " + path
            assert (await sb.proxy_request("GET", "/healthz", port=plane.http_port)).text == "ok\n"

            await sb.commands.run(["rm", "-rf", scratch])
            name = sb.claim_name
            await client.delete_sandbox(name)
            assert not sb.is_active and client.list_active_sandboxes() == []
            with pytest.raises(sdk.SandboxNotFoundError):
                await client.get_sandbox(name, resolve_timeout=60)

    asyncio.run(main())


def test_async_warm_pool_and_errors(plane):
    async def main() -> None:
        async with sdk.AsyncSandboxClient(kubeconfig=plane.kubeconfig) as client:
            sb = await client.create_sandbox(warmpool=plane.pool)
            assert sb.sandbox_id != sb.claim_name
            assert (await sb.commands.run("echo warm")).stdout == "warm\n"
            with pytest.raises(sdk.SandboxTemplateNotFoundError):
                await client.create_sandbox("no-such-template")
            with pytest.raises(sdk.SandboxForbiddenError):
                await client.create_sandbox(plane.template, namespace=plane.forbidden_namespace)
            # Cancelled while it waits for the sandbox: the claim is rolled back.
            before = await claim_names(plane)
            task = asyncio.create_task(client.create_sandbox(plane.pending_template, labels={"cancelled": "yes"}))
            while not (await claim_names(plane, "cancelled=yes")) - before:
                assert not task.done(), task
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            while await claim_names(plane, "cancelled=yes", live=True):
                pass
        # async with deleted the pool's sandbox too.
        assert sb.claim_name is None

    asyncio.run(main())


def test_async_fifty_concurrent(plane):
    """50 sandboxes created, used and deleted at once in one event loop."""

    async def one(client: sdk.AsyncSandboxClient, i: int) -> str:
        sb = await client.create_sandbox(plane.template, labels={"fifty": "yes"})
        try:
            return (await sb.commands.run(f"echo {i}")).stdout
        finally:
            await sb.terminate()

    async def main() -> None:
        async with sdk.AsyncSandboxClient(kubeconfig=plane.kubeconfig) as client:
            outs = await asyncio.gather(*(one(client, i) for i in range(50)))
            assert outs == [f"{i}\n" for i in range(50)]
            assert client.list_active_sandboxes() == []

    asyncio.run(main())
