# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""The end-to-end tests run against a plane prepared by test/e2e/python_sdk_test.go, which names
what it made in these environment variables."""

from __future__ import annotations

import dataclasses
import os
import uuid

import pytest


@dataclasses.dataclass(frozen=True)
class Plane:
    kubeconfig: str  # the claim-only tenant's; its context's namespace is namespace
    operator_kubeconfig: str  # the same rights, and patch on sandboxes (suspend, resume)
    namespace: str
    forbidden_namespace: str  # one the tenant has no right in
    template: str
    pool: str  # a warm pool of template
    http_template: str  # serves HTTP on http_port (on kwok: one sandbox per node at a time)
    http_port: int
    pending_template: str  # its sandboxes never become Ready
    real_node: bool  # the sandboxes run on a real node (kwok's run their commands on the host)


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise pytest.UsageError(f"{name} is not set: run these tests through test/e2e/python_sdk_test.go")
    return value


@pytest.fixture(scope="session")
def plane() -> Plane:
    return Plane(
        kubeconfig=_env("SANDBOX_E2E_KUBECONFIG"),
        operator_kubeconfig=_env("SANDBOX_E2E_OPERATOR_KUBECONFIG"),
        namespace=_env("SANDBOX_E2E_NAMESPACE"),
        forbidden_namespace=_env("SANDBOX_E2E_FORBIDDEN_NAMESPACE"),
        template=_env("SANDBOX_E2E_TEMPLATE"),
        pool=_env("SANDBOX_E2E_POOL"),
        http_template=_env("SANDBOX_E2E_HTTP_TEMPLATE"),
        http_port=int(_env("SANDBOX_E2E_HTTP_PORT")),
        pending_template=_env("SANDBOX_E2E_PENDING_TEMPLATE"),
        real_node=os.environ.get("SANDBOX_E2E_REAL_NODE") == "1",
    )


@pytest.fixture
def scratch() -> str:
    """A directory name for a test's files in the sandbox (which, on kwok, is this machine)."""
    return f"/tmp/sandbox-sdk-e2e-{uuid.uuid4().hex[:10]}"
