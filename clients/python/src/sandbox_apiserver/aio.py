# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""The asyncio client: AsyncSandboxClient claims sandboxes, AsyncSandbox works in one. Every
request goes through the Kubernetes API with the caller's identity (the claim, its exec, log,
portforward and proxy subresources; the Sandbox for suspend and resume) over aiohttp, so nothing
here blocks the event loop (but see Transport._headers)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import AsyncIterator, Mapping

import aiohttp

from . import _claims, _exec, _files, _proxy
from ._transport import Transport, load_configuration
from .errors import (
    SandboxError,
    SandboxFileError,
    SandboxNotFoundError,
    SandboxNotReadyError,
    SandboxPortForwardError,
    SandboxRequestError,
    SandboxTimeoutError,
    api_error,
)
from .models import ExecutionResult, FileEntry

log = logging.getLogger(__name__)

DEFAULT_READY_TIMEOUT = 180.0
# logs() hands a longer line over in pieces of this many bytes.
DEFAULT_MAX_LINE_BYTES = 1 << 20
_KILL_TIMEOUT = 10.0
_WRITE_ATTEMPTS = 3


class AsyncSandboxClient:
    """Claims sandboxes and keeps handles on them, keyed by (namespace, claim name).

    ``kubeconfig`` and ``context`` pick the identity (default: KUBECONFIG or ~/.kube/config, or the
    pod's service account in a cluster); ``namespace`` defaults to the context's. ``async with``
    deletes every sandbox the client still holds and closes it."""

    def __init__(self, *, kubeconfig: str | None = None, context: str | None = None, namespace: str | None = None) -> None:
        self._kubeconfig, self._context, self._namespace = kubeconfig, context, namespace
        self._transport: Transport | None = None
        self._init_lock = asyncio.Lock()
        self._sandboxes: dict[tuple[str, str], AsyncSandbox] = {}

    async def __aenter__(self) -> AsyncSandboxClient:
        await self._connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.delete_all()
        finally:
            await self.close()

    async def _connect(self) -> Transport:
        async with self._init_lock:
            if self._transport is None:
                # Reading the kubeconfig (and the certificates it names) is file I/O: off the loop.
                cfg, namespace = await asyncio.to_thread(load_configuration, self._kubeconfig, self._context)
                self._namespace = self._namespace or namespace
                self._transport = Transport(cfg)
            return self._transport

    def _ns(self, namespace: str | None) -> str:
        ns = namespace or self._namespace
        assert ns, "connected clients know their namespace"
        return ns

    async def create_sandbox(
        self,
        template: str | None = None,
        namespace: str | None = None,
        sandbox_ready_timeout: float = DEFAULT_READY_TIMEOUT,
        labels: Mapping[str, str] | None = None,
        warmpool: str | None = None,
        *,
        shutdown_after_seconds: int | None = None,
        env: Mapping[str, str] | None = None,
    ) -> AsyncSandbox:
        """Claims a sandbox from template (or from the warm pool named by warmpool; "none" and
        "default" are the seed's policies for the template's pools) and waits until it is Ready.
        env sets variables in its main container, as the template allows (a warm one too: they
        reach commands run through the API, and its process as the template says).
        When anything after the claim's creation fails, or the call is cancelled, the claim is
        deleted before the exception propagates."""
        manifest = _claims.claim_manifest(
            _claims.new_claim_name(), template=template, warmpool=warmpool,
            labels=_claims.validate_labels(labels), shutdown_after_seconds=shutdown_after_seconds, env=env,
        )
        transport = await self._connect()
        ns = self._ns(namespace)
        name = manifest["metadata"]["name"]
        source = f"template {template}" if template else f"warm pool {warmpool}"
        what = f"claiming a sandbox from {source} in {ns}"
        try:
            await transport.request("POST", f"/apis/{_claims.CLAIM_GROUP}/{_claims.VERSION}/namespaces/{ns}/{_claims.CLAIMS}", what, body=manifest)
        except SandboxError as e:
            if e.status is None:
                # No answer: the claim may have been made. Do not leave it behind.
                await asyncio.shield(self._delete_claim(ns, name))
            raise
        except BaseException:
            # Cancelled (or interrupted) with the request out: the claim may have been made.
            await asyncio.shield(self._delete_claim(ns, name))
            raise
        try:
            sandbox_name = await transport.wait(
                ns, _claims.CLAIMS, name, lambda obj: _claims.ready_sandbox_name(obj, f"sandboxclaim {ns}/{name}"),
                sandbox_ready_timeout, f"sandboxclaim {ns}/{name} from {source}",
            )
        except BaseException as e:
            await asyncio.shield(self._delete_claim(ns, name))
            if isinstance(e, SandboxNotFoundError):
                raise SandboxNotReadyError(f"sandboxclaim {ns}/{name} was deleted before it was Ready") from e
            raise
        sandbox = AsyncSandbox(self, transport, ns, name, sandbox_name)
        self._sandboxes[(ns, name)] = sandbox
        return sandbox

    async def get_sandbox(self, claim_name: str, namespace: str | None = None, resolve_timeout: float = 30.0) -> AsyncSandbox:
        """A handle on the existing claim claim_name, once its sandbox is Ready."""
        transport = await self._connect()
        ns = self._ns(namespace)
        try:
            sandbox_name = await transport.wait(
                ns, _claims.CLAIMS, claim_name, lambda obj: _claims.ready_sandbox_name(obj, f"sandboxclaim {ns}/{claim_name}"),
                resolve_timeout, f"sandboxclaim {ns}/{claim_name}",
            )
        except SandboxNotFoundError:
            self._sandboxes.pop((ns, claim_name), None)
            raise
        held = self._sandboxes.get((ns, claim_name))
        if held is not None and held.is_active:
            held.sandbox_id = sandbox_name
            return held
        sandbox = AsyncSandbox(self, transport, ns, claim_name, sandbox_name)
        self._sandboxes[(ns, claim_name)] = sandbox
        return sandbox

    async def delete_sandbox(self, claim_name: str, namespace: str | None = None) -> None:
        """Deletes the claim (and so its sandbox); one already gone is no error."""
        await self._connect()
        ns = self._ns(namespace)
        sandbox = self._sandboxes.pop((ns, claim_name), None)
        if sandbox is not None:
            await sandbox.terminate()
        else:
            await self._delete_claim(ns, claim_name, quiet=False)

    async def delete_all(self) -> None:
        """Deletes every claim the client holds, best effort: failures are logged."""
        for (ns, name), sandbox in list(self._sandboxes.items()):
            try:
                await sandbox.terminate()
            except SandboxError as e:
                log.warning("deleting sandboxclaim %s/%s: %s", ns, name, e)
            self._sandboxes.pop((ns, name), None)

    def list_active_sandboxes(self) -> list[tuple[str, str]]:
        """(namespace, claim name) of the handles still active."""
        for key, sandbox in list(self._sandboxes.items()):
            if not sandbox.is_active:
                del self._sandboxes[key]
        return list(self._sandboxes)

    async def close(self) -> None:
        """Closes the handles and the connection; the claims stay."""
        for sandbox in self._sandboxes.values():
            sandbox.close_connection()
        if self._transport is not None:
            await self._transport.close()
            self._transport = None

    async def _delete_claim(self, ns: str, name: str, quiet: bool = True) -> None:
        transport = await self._connect()
        try:
            await transport.request("DELETE", _claims.object_path(ns, _claims.CLAIMS, name), f"deleting sandboxclaim {ns}/{name}")
        except SandboxNotFoundError:
            pass
        except SandboxError as e:
            if not quiet:
                raise
            log.warning("rolling back sandboxclaim %s/%s: %s", ns, name, e)


class AsyncSandbox:
    """A handle on one claimed sandbox. ``commands`` runs commands, ``files`` moves files."""

    def __init__(self, client: AsyncSandboxClient, transport: Transport, namespace: str, claim_name: str, sandbox_id: str) -> None:
        self._client = client
        self._transport: Transport | None = transport
        self.namespace = namespace
        self.claim_name: str | None = claim_name
        self.sandbox_id = sandbox_id
        self._name = claim_name
        self.commands = AsyncCommands(self)
        self.files = AsyncFiles(self)

    def __repr__(self) -> str:
        return f"AsyncSandbox(sandboxclaim {self.namespace}/{self._name})"

    @property
    def is_active(self) -> bool:
        return self._transport is not None

    def close_connection(self) -> None:
        """Ends the handle's use here; the claim and its sandbox stay."""
        self._transport = None

    async def terminate(self) -> None:
        """Closes the handle and deletes the claim (and so the sandbox); idempotent."""
        self.close_connection()
        if self.claim_name is not None:
            await self._client._delete_claim(self.namespace, self.claim_name, quiet=False)
            self._client._sandboxes.pop((self.namespace, self.claim_name), None)
            self.claim_name = None

    def _live(self) -> Transport:
        if self._transport is None:
            raise SandboxNotReadyError(f"{self!r} is closed")
        return self._transport

    def _path(self, sub: str, name: str | None = None) -> str:
        return _claims.object_path(self.namespace, _claims.CLAIMS, name or self._name, sub)

    # Commands.

    async def _run_stream(
        self,
        command: _exec.Command,
        *,
        stdin: bytes | None = None,
        timeout: float | None = 60,
        on_stdout: _exec.OutputCallback | None = None,
        on_stderr: _exec.OutputCallback | None = None,
        max_output_bytes: int | None = _exec.DEFAULT_MAX_OUTPUT_BYTES,
        container: str | None = None,
    ) -> tuple[int, _exec.Session]:
        transport = self._live()
        argv = _exec.argv(command)
        what = f"running a command in {self!r}"
        ws = await transport.websocket(self._path("exec"), _exec.query(argv, container, stdin is not None), _exec.PROTOCOLS, what)
        session = _exec.Session(on_stdout, on_stderr, max_output_bytes)

        async def send_stdin() -> None:
            assert stdin is not None
            for frame in _exec.stdin_frames(stdin):
                await ws.send_bytes(frame)
            if ws.protocol == _exec.PROTOCOLS[0]:
                await ws.send_bytes(_exec.CLOSE_STDIN)

        async def receive() -> None:
            async for msg in ws:
                if msg.type == aiohttp.WSMsgType.BINARY:
                    session.feed(msg.data)
                    if session.done:
                        return
                elif msg.type in (aiohttp.WSMsgType.ERROR, aiohttp.WSMsgType.CLOSE):
                    return

        sender = asyncio.create_task(send_stdin()) if stdin is not None else None
        try:
            async with asyncio.timeout(timeout):
                await receive()
        except TimeoutError as e:
            await asyncio.shield(self._kill(session.pid))
            raise SandboxTimeoutError(f"{what}: stopped after {timeout:g}s: {command!r}") from e
        except BaseException:
            await asyncio.shield(self._kill(session.pid))
            raise
        finally:
            if sender is not None:
                sender.cancel()
                with contextlib.suppress(BaseException):
                    await sender
            await ws.close()
        return session.exit_code(), session

    async def _kill(self, pid: int | None) -> None:
        """Stops a command whose stream is given up (closing the stream does not, on every
        runtime); best effort."""
        if not pid or self._transport is None:
            return
        try:
            await self._run_stream(_exec.kill_argv(pid), timeout=_KILL_TIMEOUT)
        except (SandboxError, asyncio.CancelledError) as e:
            log.debug("stopping process %d in %r: %s", pid, self, e)

    async def _run_bytes(self, argv: list[str], *, stdin: bytes | None = None, timeout: float | None = 60,
                         max_output_bytes: int | None = _exec.DEFAULT_MAX_OUTPUT_BYTES) -> tuple[int, bytes, str]:
        code, session = await self._run_stream(argv, stdin=stdin, timeout=timeout, max_output_bytes=max_output_bytes)
        return code, bytes(session.out[_exec.STDOUT]), session.out[_exec.STDERR].decode("utf-8", "replace").strip()

    # Logs, ports, HTTP.

    async def logs(self, *, follow: bool = False, tail_lines: int | None = None, container: str | None = None,
                   timestamps: bool = False, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> AsyncIterator[str]:
        """The main container's log, line by line; with follow, new lines as they come until the
        caller stops iterating or the container ends. A line longer than max_line_bytes comes in
        pieces of that many bytes: what the sandbox writes is never held whole."""
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be positive, not {max_line_bytes}")
        transport = self._live()
        params = [("follow", "true" if follow else "false")]
        if tail_lines is not None:
            params.append(("tailLines", str(tail_lines)))
        if container:
            params.append(("container", container))
        if timestamps:
            params.append(("timestamps", "true"))
        resp = await transport.raw("GET", self._path("log"), params=params)
        async with resp:
            if resp.status >= 300:
                raise api_error(resp.status, await resp.read(), f"reading the log of {self!r}")
            buf = bytearray()
            async for chunk in resp.content.iter_chunked(64 << 10):
                buf += chunk
                while True:
                    end = buf.find(b"\n", 0, max_line_bytes + 1)
                    if end >= 0:
                        line, buf = bytes(buf[:end]), buf[end + 1 :]
                    elif len(buf) >= max_line_bytes:
                        line, buf = bytes(buf[:max_line_bytes]), buf[max_line_bytes:]
                    else:
                        break
                    yield line.decode("utf-8", "replace")
            if buf:
                yield buf.decode("utf-8", "replace")

    def port_forward(self, port: int, local_port: int = 0) -> AsyncPortForward:
        """``async with sandbox.port_forward(8080) as pf:`` listens on pf.local_address
        (127.0.0.1, any free port unless local_port) and forwards each connection to port of the
        sandbox through the claim's portforward subresource."""
        if not 0 < port <= 65535 or not 0 <= local_port <= 65535:
            raise ValueError(f"port-forward {local_port}:{port}: ports are 1-65535 (0: any local port)")
        return AsyncPortForward(self, port, local_port)

    async def proxy_request(self, method: str, path: str = "/", *, port: int | str | None = None,
                            body: bytes | None = None, headers: Mapping[str, str] | None = None,
                            timeout: float | None = 60, max_body_bytes: int = _proxy.DEFAULT_MAX_BODY_BYTES) -> ProxyResponse:
        """An HTTP request to port (default: the first the pod declares) of the sandbox through
        the claim's proxy subresource; a suspended sandbox is woken by it. The path stays below
        the sandbox's proxy path (one that climbs out of it, ``..`` encoded or not, raises
        ValueError); identity headers of the caller's (Authorization, Cookie, Impersonate-*,
        X-Remote-*) are not sent. A response body over max_body_bytes raises SandboxRequestError."""
        below, params = _proxy.split_target(path)
        transport = self._live()
        name = f"{self._name}:{port}" if port else self._name
        target = self._path("proxy", name) + "/" + below
        try:
            resp = await transport.raw(method, target, params=params, headers=_proxy.request_headers(headers), data=body, timeout=timeout)
            async with resp:
                data = bytearray()
                async for chunk in resp.content.iter_chunked(64 << 10):
                    data += chunk
                    _proxy.check_body(len(data), max_body_bytes)
                return ProxyResponse(resp.status, dict(resp.headers), bytes(data))
        except _proxy.BodyTooLarge as e:
            raise SandboxRequestError(f"{method} {path} on {self!r}: {e}") from None
        except asyncio.TimeoutError as e:
            raise SandboxTimeoutError(f"{method} {path} on {self!r}: no answer within {timeout}s") from e
        except aiohttp.ClientError as e:
            raise SandboxRequestError(f"{method} {path} on {self!r}: {e}") from e

    # Suspend and resume write the Sandbox (patch on sandboxes: not a claim-only tenant's right).

    async def suspend(self, timeout: float = DEFAULT_READY_TIMEOUT) -> None:
        """Stops the sandbox's pod, keeping its volumes, and waits until it is Suspended."""
        await self._set_mode("Suspended", "Suspended", timeout)

    async def resume(self, timeout: float = DEFAULT_READY_TIMEOUT) -> None:
        """Starts a suspended sandbox again and waits until it is Ready."""
        await self._set_mode("Running", "Ready", timeout)

    async def _set_mode(self, mode: str, cond: str, timeout: float) -> None:
        transport = self._live()
        what = f"setting sandbox {self.namespace}/{self.sandbox_id} to {mode}"
        patched = await transport.request(
            "PATCH", _claims.object_path(self.namespace, _claims.SANDBOXES, self.sandbox_id), what,
            body={"spec": {"operatingMode": mode}}, content_type="application/merge-patch+json",
        )
        generation = int(patched["metadata"].get("generation", 0))
        await transport.wait(
            self.namespace, _claims.SANDBOXES, self.sandbox_id,
            lambda obj: True if _claims.condition_true(obj, cond, generation) else None,
            timeout, what, condition=cond,
        )


class ProxyResponse:
    """The answer of a request through the proxy."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def __repr__(self) -> str:
        return f"ProxyResponse(status={self.status}, {len(self.body)} bytes)"


class AsyncCommands:
    def __init__(self, sandbox: AsyncSandbox) -> None:
        self._sandbox = sandbox

    async def run(
        self,
        command: _exec.Command,
        timeout: float | None = 60,
        *,
        stdin: bytes | str | None = None,
        on_stdout: _exec.OutputCallback | None = None,
        on_stderr: _exec.OutputCallback | None = None,
        container: str | None = None,
        max_output_bytes: int | None = _exec.DEFAULT_MAX_OUTPUT_BYTES,
    ) -> ExecutionResult:
        """Runs command (a string through ``sh -c``, or an argv list) and returns its output and
        exit code; on_stdout and on_stderr get the output as it comes. stdin is sent and then
        closed. A command running longer than timeout is stopped (SandboxTimeoutError); one
        printing more than max_output_bytes on a stream too (SandboxError)."""
        data = _files.as_bytes(stdin) if stdin is not None else None
        try:
            code, session = await self._sandbox._run_stream(
                command, stdin=data, timeout=timeout, on_stdout=on_stdout, on_stderr=on_stderr,
                container=container, max_output_bytes=max_output_bytes,
            )
        except _exec.OutputTooLarge as e:
            raise SandboxError(str(e)) from None
        return ExecutionResult(
            stdout=session.out[_exec.STDOUT].decode("utf-8", "replace"),
            stderr=session.out[_exec.STDERR].decode("utf-8", "replace"),
            exit_code=code,
        )


class AsyncFiles:
    """Files of the sandbox, as tar over exec: the sandbox needs tar, stat, find and sh."""

    def __init__(self, sandbox: AsyncSandbox) -> None:
        self._sandbox = sandbox

    async def write(self, path: str, content: bytes | str, timeout: float | None = 60, *, mode: int = 0o644,
                    max_bytes: int = _files.DEFAULT_MAX_FILE_BYTES) -> None:
        """Creates or replaces the file path (its directory must exist) with content; its size is
        checked afterwards and the copy sent again when it came short."""
        directory, name = _files.split_path(path)
        data = _files.as_bytes(content)
        if len(data) > max_bytes:
            raise SandboxFileError(f"{path}: {len(data)} bytes, more than max_bytes={max_bytes}")
        archive = _files.write_archive(name, data, mode)
        got = ""
        for _ in range(_WRITE_ATTEMPTS):
            code, _out, err = await self._sandbox._run_bytes(_files.write_argv(directory), stdin=archive, timeout=timeout)
            if code != 0:
                raise SandboxFileError(f"writing {path}: tar exited with {code}: {err}")
            code, out, err = await self._sandbox._run_bytes(_files.size_argv(directory, name), timeout=timeout)
            got = out.decode().strip() if code == 0 else err
            if got == str(len(data)):
                return
        raise SandboxFileError(f"writing {path}: the sandbox did not receive the whole file ({got} of {len(data)} bytes)")

    async def read(self, path: str, timeout: float | None = 60, *, max_bytes: int = _files.DEFAULT_MAX_FILE_BYTES) -> bytes:
        """The contents of the file path (a link is followed)."""
        directory, name = _files.split_path(path)
        try:
            code, out, err = await self._sandbox._run_bytes(
                _files.read_argv(directory, name), timeout=timeout, max_output_bytes=_files.read_bound(max_bytes))
        except _exec.OutputTooLarge:
            raise SandboxFileError(f"{path} is larger than max_bytes={max_bytes}") from None
        if code != 0:
            raise SandboxFileError(f"reading {path}: {err or f'tar exited with {code}'}")
        return _files.read_archive(out, path, max_bytes)

    async def list(self, path: str, timeout: float | None = 60) -> list[FileEntry]:
        """The entries of the directory path (not recursive), sorted by name."""
        directory = _files.check_dir(path)
        code, out, err = await self._sandbox._run_bytes(_files.list_argv(directory), timeout=timeout)
        if code != 0:
            raise SandboxFileError(f"listing {path}: {err}")
        return _files.parse_listing(out.decode("utf-8", "replace"))

    async def exists(self, path: str, timeout: float | None = 60) -> bool:
        _files.check_dir(path)
        code, _out, _err = await self._sandbox._run_bytes(_files.exists_argv(path), timeout=timeout)
        return code == 0


class AsyncPortForward:
    """A local listener whose connections go to a port of the sandbox, one WebSocket each
    (v4.channel.k8s.io: channel 0 the data, 1 the errors, each starting with the port)."""

    _PROTOCOLS = ("v4.channel.k8s.io",)

    def __init__(self, sandbox: AsyncSandbox, port: int, local_port: int) -> None:
        self._sandbox, self.port, self._local_port = sandbox, port, local_port
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.local_address: tuple[str, int] = ("127.0.0.1", 0)

    @property
    def url(self) -> str:
        host, port = self.local_address
        return f"http://{host}:{port}"

    async def __aenter__(self) -> AsyncPortForward:
        self._sandbox._live()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self._local_port)
        self.local_address = self._server.sockets[0].getsockname()[:2]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._pump(reader, writer)
        except (SandboxError, aiohttp.ClientError, ConnectionError) as e:
            log.warning("port-forward to %r port %d: %s", self._sandbox, self.port, e)
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sandbox = self._sandbox
        ws = await sandbox._live().websocket(
            sandbox._path("portforward"), [("ports", str(self.port))], self._PROTOCOLS,
            f"port-forward to {sandbox!r} port {self.port}",
        )

        async def upstream() -> None:
            while data := await reader.read(64 << 10):
                await ws.send_bytes(b"\x00" + data)

        sender = asyncio.create_task(upstream())
        seen = {0: False, 1: False}
        try:
            async for msg in ws:
                if msg.type != aiohttp.WSMsgType.BINARY or not msg.data:
                    break
                channel, data = msg.data[0], msg.data[1:]
                if channel in seen and not seen[channel]:
                    # Each channel's first message is the port it is for.
                    seen[channel] = True
                    data = data[2:]
                if not data:
                    continue
                if channel == 0:
                    writer.write(data)
                    await writer.drain()
                elif channel == 1:
                    raise SandboxPortForwardError(data.decode("utf-8", "replace"))
        finally:
            sender.cancel()
            with contextlib.suppress(BaseException):
                await sender
            await ws.close()
