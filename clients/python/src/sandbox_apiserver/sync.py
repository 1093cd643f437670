# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""The synchronous client: the asyncio one (aio.py) run on a private event loop in one thread
per client, so that both speak the API's protocols with one implementation. Callbacks
(on_stdout, on_stderr) run on that thread."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
from typing import Any, Awaitable, Iterator, Mapping, TypeVar

from . import _exec, _files, _proxy
from .aio import DEFAULT_MAX_LINE_BYTES, DEFAULT_READY_TIMEOUT, AsyncPortForward, AsyncSandbox, AsyncSandboxClient, ProxyResponse
from .models import ExecutionResult, FileEntry

T = TypeVar("T")
log = logging.getLogger(__name__)


class _Loop:
    """An event loop running in a daemon thread; run() waits for a coroutine on it."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sandbox-sdk-loop", daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._loop.is_closed()

    def run(self, coro: Awaitable[T]) -> T:
        if self._loop.is_closed():
            raise RuntimeError("the SandboxClient is closed")
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]
        try:
            return future.result()
        except BaseException:
            # Ctrl-C in the caller's thread: cancel the work (which rolls back a claim being made).
            future.cancel()
            raise

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


class SandboxClient:
    """Claims sandboxes and keeps handles on them (see AsyncSandboxClient). ``with`` deletes
    every sandbox it still holds on exit; so does the end of the process, unless cleanup=False."""

    def __init__(self, *, kubeconfig: str | None = None, context: str | None = None, namespace: str | None = None,
                 cleanup: bool = True) -> None:
        self._loop = _Loop()
        self._async = AsyncSandboxClient(kubeconfig=kubeconfig, context=context, namespace=namespace)
        self._handles: dict[int, Sandbox] = {}
        self._cleanup = cleanup
        if cleanup:
            atexit.register(self._at_exit)

    def __enter__(self) -> SandboxClient:
        self._loop.run(self._async._connect())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop.closed:
            return
        try:
            self.delete_all()
        finally:
            self.close()

    def _at_exit(self) -> None:
        try:
            self.delete_all()
            self.close()
        except Exception as e:  # noqa: BLE001 - the process is ending: say it, do not raise
            log.warning("cleaning up sandboxes at exit: %s", e)

    def _wrap(self, handle: AsyncSandbox) -> Sandbox:
        wrapped = self._handles.get(id(handle))
        if wrapped is None:
            wrapped = self._handles[id(handle)] = Sandbox(self._loop, handle)
        return wrapped

    def create_sandbox(self, template: str | None = None, namespace: str | None = None,
                       sandbox_ready_timeout: float = DEFAULT_READY_TIMEOUT, labels: Mapping[str, str] | None = None,
                       warmpool: str | None = None, *, shutdown_after_seconds: int | None = None,
                       env: Mapping[str, str] | None = None) -> Sandbox:
        return self._wrap(self._loop.run(self._async.create_sandbox(
            template, namespace, sandbox_ready_timeout, labels, warmpool, shutdown_after_seconds=shutdown_after_seconds,
            env=env)))

    def get_sandbox(self, claim_name: str, namespace: str | None = None, resolve_timeout: float = 30.0) -> Sandbox:
        return self._wrap(self._loop.run(self._async.get_sandbox(claim_name, namespace, resolve_timeout)))

    def delete_sandbox(self, claim_name: str, namespace: str | None = None) -> None:
        self._loop.run(self._async.delete_sandbox(claim_name, namespace))

    def delete_all(self) -> None:
        self._loop.run(self._async.delete_all())

    def list_active_sandboxes(self) -> list[tuple[str, str]]:
        return self._async.list_active_sandboxes()

    def close(self) -> None:
        """Closes the handles and the connection (the claims stay) and stops the loop."""
        if self._loop.closed:
            return
        if self._cleanup:
            atexit.unregister(self._at_exit)
        self._loop.run(self._async.close())
        self._loop.close()


class Sandbox:
    """A handle on one claimed sandbox (see AsyncSandbox)."""

    def __init__(self, loop: _Loop, handle: AsyncSandbox) -> None:
        self._loop = loop
        self._async = handle
        self.commands = Commands(self)
        self.files = Files(self)

    def __repr__(self) -> str:
        return repr(self._async).replace("AsyncSandbox", "Sandbox", 1)

    @property
    def namespace(self) -> str:
        return self._async.namespace

    @property
    def claim_name(self) -> str | None:
        return self._async.claim_name

    @property
    def sandbox_id(self) -> str:
        return self._async.sandbox_id

    @property
    def is_active(self) -> bool:
        return self._async.is_active

    def close_connection(self) -> None:
        self._async.close_connection()

    def terminate(self) -> None:
        self._loop.run(self._async.terminate())

    def logs(self, *, follow: bool = False, tail_lines: int | None = None, container: str | None = None,
             timestamps: bool = False, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[str]:
        lines = self._async.logs(follow=follow, tail_lines=tail_lines, container=container, timestamps=timestamps,
                                 max_line_bytes=max_line_bytes)
        try:
            while True:
                try:
                    yield self._loop.run(lines.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            self._loop.run(lines.aclose())

    def port_forward(self, port: int, local_port: int = 0) -> PortForward:
        return PortForward(self._loop, self._async.port_forward(port, local_port))

    def proxy_request(self, method: str, path: str = "/", *, port: int | str | None = None, body: bytes | None = None,
                      headers: Mapping[str, str] | None = None, timeout: float | None = 60,
                      max_body_bytes: int = _proxy.DEFAULT_MAX_BODY_BYTES) -> ProxyResponse:
        return self._loop.run(self._async.proxy_request(method, path, port=port, body=body, headers=headers, timeout=timeout,
                                                        max_body_bytes=max_body_bytes))

    def suspend(self, timeout: float = DEFAULT_READY_TIMEOUT) -> None:
        self._loop.run(self._async.suspend(timeout))

    def resume(self, timeout: float = DEFAULT_READY_TIMEOUT) -> None:
        self._loop.run(self._async.resume(timeout))


class Commands:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    def run(self, command: _exec.Command, timeout: float | None = 60, *, stdin: bytes | str | None = None,
            on_stdout: _exec.OutputCallback | None = None, on_stderr: _exec.OutputCallback | None = None,
            container: str | None = None, max_output_bytes: int | None = _exec.DEFAULT_MAX_OUTPUT_BYTES) -> ExecutionResult:
        s = self._sandbox
        return s._loop.run(s._async.commands.run(command, timeout, stdin=stdin, on_stdout=on_stdout, on_stderr=on_stderr,
                                                 container=container, max_output_bytes=max_output_bytes))


class Files:
    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox

    def write(self, path: str, content: bytes | str, timeout: float | None = 60, *, mode: int = 0o644,
              max_bytes: int = _files.DEFAULT_MAX_FILE_BYTES) -> None:
        s = self._sandbox
        s._loop.run(s._async.files.write(path, content, timeout, mode=mode, max_bytes=max_bytes))

    def read(self, path: str, timeout: float | None = 60, *, max_bytes: int = _files.DEFAULT_MAX_FILE_BYTES) -> bytes:
        s = self._sandbox
        return s._loop.run(s._async.files.read(path, timeout, max_bytes=max_bytes))

    def list(self, path: str, timeout: float | None = 60) -> list[FileEntry]:
        s = self._sandbox
        return s._loop.run(s._async.files.list(path, timeout))

    def exists(self, path: str, timeout: float | None = 60) -> bool:
        s = self._sandbox
        return s._loop.run(s._async.files.exists(path, timeout))


class PortForward:
    """``with sandbox.port_forward(8080) as pf:`` forwards pf.local_address to the sandbox."""

    def __init__(self, loop: _Loop, forward: AsyncPortForward) -> None:
        self._loop, self._async = loop, forward

    @property
    def local_address(self) -> tuple[str, int]:
        return self._async.local_address

    @property
    def url(self) -> str:
        return self._async.url

    def __enter__(self) -> PortForward:
        self._loop.run(self._async.__aenter__())
        return self

    def __exit__(self, *exc: Any) -> None:
        self._loop.run(self._async.__aexit__(*exc))
