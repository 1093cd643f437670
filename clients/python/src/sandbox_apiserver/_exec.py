# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""The exec subresource's channel protocol (v5.channel.k8s.io over WebSocket, as kubectl speaks
it), shared by the sync and async clients; no I/O here.

Each binary message starts with its channel: 0 stdin, 1 stdout, 2 stderr, 3 the command's end (a
Kubernetes Status), 255 (v5) closes the channel named by the next byte: how stdin's end reaches the
command.

A command runs under ``sh``, which writes its process ID on stderr (taken off again here) and then
execs the command: so a timeout can stop the command itself with a second exec (``kill``), since
closing an exec stream does not stop what it runs on every runtime."""

from __future__ import annotations

import json
import re
from typing import Callable, Sequence, Union

from .errors import SandboxError, SandboxRequestError

PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
STDIN, STDOUT, STDERR, STATUS, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255

# A command's stdout and stderr that run() collects are each bounded by this by default.
DEFAULT_MAX_OUTPUT_BYTES = 16 << 20
# stdin goes in messages of at most this.
STDIN_CHUNK = 32 << 10

_PID_WRAPPER = 'echo "$$" >&2; exec "$@"'
# The wrapper's line is a process ID: a first stderr line longer than this is not its.
_MAX_PID_LINE = 24

Command = Union[str, Sequence[str]]
OutputCallback = Callable[[bytes], None]


def argv(command: Command) -> list[str]:
    """The argv that runs command: a string through ``sh -c`` (as the seed SDK's commands were),
    a sequence as it is; both under the PID-reporting wrapper."""
    if isinstance(command, str):
        if not command.strip():
            raise ValueError("the command is empty")
        user = ["sh", "-c", command]
    else:
        user = [str(a) for a in command]
        if not user:
            raise ValueError("the command is empty")
    return ["sh", "-c", _PID_WRAPPER, "sh", *user]


def kill_argv(pid: int) -> list[str]:
    return ["sh", "-c", 'kill -KILL "$1"', "sh", str(pid)]


def query(command: list[str], container: str | None, stdin: bool) -> list[tuple[str, str]]:
    """The exec subresource's query, in pods/exec's terms."""
    q = [("command", c) for c in command]
    q += [("stdout", "true"), ("stderr", "true"), ("stdin", "true" if stdin else "false")]
    if container:
        q.append(("container", container))
    return q


def stdin_frames(data: bytes) -> list[bytes]:
    return [bytes([STDIN]) + data[i : i + STDIN_CHUNK] for i in range(0, len(data), STDIN_CHUNK)]


CLOSE_STDIN = bytes([CLOSE, STDIN])


class OutputTooLarge(SandboxError):
    """What a collecting session raises past its bound; the command is then stopped."""


class Session:
    """The state of one exec stream: feed it each message; it routes the output, learns the
    command's PID and, from the status channel, its exit code."""

    def __init__(
        self,
        on_stdout: OutputCallback | None = None,
        on_stderr: OutputCallback | None = None,
        max_output_bytes: int | None = DEFAULT_MAX_OUTPUT_BYTES,
        collect: bool = True,
    ) -> None:
        self._on = {STDOUT: on_stdout, STDERR: on_stderr}
        self._collect = collect
        self._max = max_output_bytes
        self.out = {STDOUT: bytearray(), STDERR: bytearray()}
        self._pid_line = bytearray()
        self.pid: int | None = None
        self._status: dict | None = None
        self.done = False

    def feed(self, message: bytes) -> None:
        if not message:
            return
        channel, data = message[0], message[1:]
        if channel == STATUS:
            if data:
                try:
                    self._status = json.loads(data)
                except ValueError:
                    self._status = {"status": "Failure", "message": data.decode("utf-8", "replace")}
                self.done = True
            return
        if channel not in (STDOUT, STDERR) or not data:
            return
        if channel == STDERR and self.pid is None:
            data = self._take_pid(data)
            if not data:
                return
        callback = self._on[channel]
        if callback is not None:
            callback(bytes(data))
        if self._collect:
            buf = self.out[channel]
            if self._max is not None and len(buf) + len(data) > self._max:
                name = "stdout" if channel == STDOUT else "stderr"
                raise OutputTooLarge(f"the command's {name} exceeds {self._max} bytes (max_output_bytes)")
            buf.extend(data)

    def _take_pid(self, data: bytes) -> bytes:
        """Takes the wrapper's PID line off the start of stderr; what follows it is returned. A
        first line that is no PID, or longer than a PID line can be, is passed on as output."""
        self._pid_line.extend(data)
        end = self._pid_line.find(b"\n", 0, _MAX_PID_LINE + 1)
        if end < 0 and len(self._pid_line) <= _MAX_PID_LINE:
            return b""  # the line goes on in the next message
        pending, self._pid_line = bytes(self._pid_line), bytearray()
        try:
            if end < 0:
                raise ValueError("no PID line")
            self.pid = int(pending[:end])
        except ValueError:
            # Not our wrapper's line (no sh?): pass it on as output.
            self.pid = 0
            return pending
        return pending[end + 1 :]

    def exit_code(self) -> int:
        """The command's exit code; raises when the stream ended without one."""
        if self._status is None:
            raise SandboxRequestError("the exec stream ended before the command's exit status came")
        return exit_code(self._status)


_EXIT_IN_TEXT = re.compile(r"(?:exit code|exit status)[: ]+(\d+)")


def exit_code(status: dict) -> int:
    """The exit code a Status on the status channel reports: 0 for Success, the ExitCode cause
    of NonZeroExitCode (or, from kubelets that only write it as text, the code in the message);
    any other failure (the command could not start) raises, with the server's message."""
    if status.get("status") == "Success":
        return 0
    for cause in (status.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode":
            try:
                return int(cause.get("message", ""))
            except ValueError:
                break
    message = str(status.get("message", ""))
    m = _EXIT_IN_TEXT.search(message)
    if m and int(m.group(1)) != 0:
        return int(m.group(1))
    raise SandboxRequestError(f"the command did not run: {message or status}", reason=status.get("reason"))
