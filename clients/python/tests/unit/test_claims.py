# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
import datetime

import pytest

from sandbox_apiserver import SandboxNotFoundError, SandboxNotReadyError, SandboxTemplateNotFoundError, _claims


@pytest.mark.parametrize(
    "labels",
    [
        {"app": "agent"},
        {"example.com/team": "a-b_c.d"},
        {"a": ""},
        {"x" * 63: "y" * 63},
        {("a" * 63 + ".") * 3 + "b" * 61 + "/n": "v"},
    ],
)
def test_valid_labels(labels):
    assert _claims.validate_labels(labels) == labels


@pytest.mark.parametrize(
    "labels, names",
    [
        ({"": "v"}, "the name"),
        ({"-app": "v"}, "the name"),
        ({"x" * 64: "v"}, "the name"),
        ({"Example.com/team": "v"}, "the prefix"),
        ({"/team": "v"}, "the prefix"),
        ({"a" * 254 + "/n": "v"}, "the prefix"),
        ({"app": "-bad"}, "the value"),
        ({"app": "v" * 64}, "the value"),
        ({"app": "has space"}, "the value"),
        ({"app": 3}, "strings"),
    ],
)
def test_invalid_labels(labels, names):
    with pytest.raises(ValueError, match=names):
        _claims.validate_labels(labels)


NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)


def test_claim_from_template():
    m = _claims.claim_manifest("c", template="t", warmpool=None, labels={"a": "b"}, shutdown_after_seconds=60, now=NOW)
    assert m["spec"] == {
        "sandboxTemplateRef": {"name": "t"},
        "lifecycle": {"shutdownTime": "2026-01-02T03:05:05Z", "shutdownPolicy": "Delete"},
    }
    assert m["metadata"]["labels"] == {"a": "b", _claims.CREATED_BY_LABEL: "sandbox-sdk-python"}
    assert m["metadata"]["annotations"] == {_claims.REQUESTED_AT_ANNOTATION: "2026-01-02T03:04:05Z"}


def test_claim_from_pool_and_policies():
    assert _claims.claim_manifest("c", template=None, warmpool="pool", labels={}, shutdown_after_seconds=None)["spec"] == {
        "warmPoolRef": {"name": "pool"}
    }
    assert _claims.claim_manifest("c", template="t", warmpool="none", labels={}, shutdown_after_seconds=None)["spec"] == {
        "sandboxTemplateRef": {"name": "t"},
        "warmpool": "none",
    }


@pytest.mark.parametrize("kwargs", [{"template": None, "warmpool": None}, {"template": None, "warmpool": "default"}])
def test_claim_needs_a_source(kwargs):
    with pytest.raises(ValueError, match="needs a template"):
        _claims.claim_manifest("c", labels={}, shutdown_after_seconds=None, **kwargs)


@pytest.mark.parametrize("seconds", [0, -1, True, 1.5, 10**20])
def test_shutdown_after_seconds(seconds):
    with pytest.raises(ValueError, match="shutdown_after_seconds"):
        _claims.claim_manifest("c", template="t", warmpool=None, labels={}, shutdown_after_seconds=seconds)


def claim(status, reason="", sandbox=""):
    return {"kind": "SandboxClaim", "status": {"conditions": [{"type": "Ready", "status": status, "reason": reason, "message": "m"}],
                                               "sandbox": {"name": sandbox}}}


def test_ready_sandbox_name():
    assert _claims.ready_sandbox_name({"status": {}}, "c") is None
    assert _claims.ready_sandbox_name(claim("False", "SandboxNotReady"), "c") is None
    assert _claims.ready_sandbox_name(claim("True", sandbox="sb"), "c") == "sb"
    with pytest.raises(SandboxTemplateNotFoundError):
        _claims.ready_sandbox_name(claim("False", "TemplateNotFound"), "c")
    with pytest.raises(SandboxNotReadyError, match="ClaimExpired"):
        _claims.ready_sandbox_name(claim("False", "ClaimExpired"), "c")
    deleting = claim("True", sandbox="sb")
    deleting["metadata"] = {"deletionTimestamp": "2026-01-01T00:00:00Z"}
    with pytest.raises(SandboxNotFoundError, match="being deleted"):
        _claims.ready_sandbox_name(deleting, "c")


def test_claim_manifest_env():
    spec = _claims.claim_manifest("c", template="t", warmpool=None, labels={}, shutdown_after_seconds=None,
                                  env={"TASK_ID": "t-1", "TOKEN": "x"})["spec"]
    assert spec["env"] == [{"name": "TASK_ID", "value": "t-1"}, {"name": "TOKEN", "value": "x"}]
    assert "env" not in _claims.claim_manifest("c", template="t", warmpool=None, labels={}, shutdown_after_seconds=None)["spec"]
    with pytest.raises(ValueError, match="env must map"):
        _claims.claim_manifest("c", template="t", warmpool=None, labels={}, shutdown_after_seconds=None, env={"A": 1})
