# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
import json

import pytest

from sandbox_apiserver import SandboxRequestError, _exec


def test_argv():
    assert _exec.argv("echo hi")[-3:] == ["sh", "-c", "echo hi"]
    assert _exec.argv(["ls", "-l"])[-2:] == ["ls", "-l"]
    assert _exec.argv(["ls"])[:4] == ["sh", "-c", 'echo "$$" >&2; exec "$@"', "sh"]
    for empty in ("", "  ", []):
        with pytest.raises(ValueError):
            _exec.argv(empty)


def status(obj):
    return bytes([_exec.STATUS]) + json.dumps(obj).encode()


def test_session_routes_output_and_takes_the_pid_off_stderr():
    seen = []
    s = _exec.Session(on_stdout=lambda b: seen.append(("out", b)), on_stderr=lambda b: seen.append(("err", b)))
    for message in [b"\x01", b"\x0212", b"\x0234\nwar", b"\x01hello", b"\x02ning\n", status({"status": "Success"})]:
        s.feed(message)
    assert s.pid == 1234
    assert s.out[_exec.STDOUT] == b"hello" and s.out[_exec.STDERR] == b"warning\n"
    assert seen == [("err", b"war"), ("out", b"hello"), ("err", b"ning\n")]
    assert s.done and s.exit_code() == 0


def test_session_bounds_output():
    s = _exec.Session(max_output_bytes=4)
    s.feed(b"\x021\n")
    s.feed(b"\x011234")
    with pytest.raises(_exec.OutputTooLarge, match="stdout exceeds 4"):
        s.feed(b"\x015")


@pytest.mark.parametrize(
    "st, code",
    [
        ({"status": "Success"}, 0),
        ({"status": "Failure", "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}, 3),
        ({"status": "Failure", "message": "command terminated with non-zero exit code: exit status 7"}, 7),
    ],
)
def test_exit_code(st, code):
    assert _exec.exit_code(st) == code


def test_exit_code_of_a_command_that_did_not_run():
    with pytest.raises(SandboxRequestError, match="executable file not found"):
        _exec.exit_code({"status": "Failure", "reason": "InternalError", "message": 'exec: "nope": executable file not found'})
    with pytest.raises(SandboxRequestError, match="ended before"):
        _exec.Session().exit_code()


def test_session_bounds_the_pid_line():
    # A sandbox without the wrapper's sh (or a hostile one) writes a first stderr line that never
    # ends: it is passed on as output once longer than a PID line can be, not held.
    s = _exec.Session(max_output_bytes=1 << 20)
    s.feed(b"\x02" + b"9" * 20)
    assert s.pid is None and s.out[_exec.STDERR] == b""
    s.feed(b"\x02" + b"9" * 20)
    assert s.pid == 0 and s.out[_exec.STDERR] == b"9" * 40
    s.feed(b"\x02more")
    assert s.out[_exec.STDERR] == b"9" * 40 + b"more"
    # The wrapper's line and the command's first output in one message.
    s = _exec.Session()
    s.feed(b"\x0242\nfirst")
    assert s.pid == 42 and s.out[_exec.STDERR] == b"first"
