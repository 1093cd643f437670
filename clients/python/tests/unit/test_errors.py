# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
import json

import pytest

import sandbox_apiserver as sdk
from sandbox_apiserver.errors import api_error


def status(code, reason, message):
    return json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason, "message": message})


@pytest.mark.parametrize(
    "code, reason, kind",
    [
        (404, "NotFound", sdk.SandboxNotFoundError),
        (403, "Forbidden", sdk.SandboxForbiddenError),
        (422, "Invalid", sdk.SandboxClaimRefusedError),
        (409, "AlreadyExists", sdk.SandboxConflictError),
        (504, "Timeout", sdk.SandboxTimeoutError),
        (500, "InternalError", sdk.SandboxError),
    ],
)
def test_api_error(code, reason, kind):
    e = api_error(code, status(code, reason, "the server's words"), "doing it")
    assert type(e) is kind
    assert str(e) == "doing it: the server's words"
    assert (e.status, e.reason) == (code, reason)


def test_refused_claim_keeps_every_field():
    msg = 'SandboxClaim.extensions.agents.x-k8s.io "c" is invalid: [metadata.labels: Invalid value, spec.env[0].name: Forbidden]'
    e = api_error(422, status(422, "Invalid", msg).encode(), "claiming")
    assert msg in str(e)


def test_hierarchy():
    for kind in (sdk.SandboxNotFoundError, sdk.SandboxTemplateNotFoundError, sdk.SandboxNotReadyError, sdk.SandboxForbiddenError,
                 sdk.SandboxClaimRefusedError, sdk.SandboxTimeoutError, sdk.SandboxFileError, sdk.SandboxRequestError):
        assert issubclass(kind, sdk.SandboxError) and issubclass(kind, RuntimeError)
    assert issubclass(sdk.SandboxTimeoutError, TimeoutError)


def test_non_status_body():
    assert str(api_error(502, b"bad gateway\n", "x")) == "x: bad gateway"
    assert str(api_error(500, None, "x")) == "x: HTTP 500"


def test_labels_are_checked_before_any_call():
    # No kubeconfig is read: a bad label fails first.
    client = sdk.SandboxClient(kubeconfig="/nonexistent", cleanup=False)
    try:
        with pytest.raises(ValueError, match="label key"):
            client.create_sandbox("t", labels={"bad key": "v"})
    finally:
        client._loop.close()


def test_missing_pool_is_a_missing_source():
    body = json.dumps({"kind": "Status", "code": 422, "reason": "Invalid", "message": 'spec.warmPoolRef.name: Not found: "p"',
                       "details": {"causes": [{"reason": "FieldValueNotFound", "field": "spec.warmPoolRef.name"}]}})
    assert type(api_error(422, body, "claiming")) is sdk.SandboxTemplateNotFoundError
