# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""A Python client for agent sandboxes served by sandbox-apiserver, with the seed Python SDK's
shape: SandboxClient and Sandbox (sync), AsyncSandboxClient and AsyncSandbox (asyncio). Everything
goes through the Kubernetes API with the caller's kubeconfig and RBAC rights."""

from .aio import AsyncCommands, AsyncFiles, AsyncPortForward, AsyncSandbox, AsyncSandboxClient, ProxyResponse
from .errors import (
    SandboxClaimRefusedError,
    SandboxConflictError,
    SandboxError,
    SandboxFileError,
    SandboxForbiddenError,
    SandboxMetadataError,
    SandboxNotFoundError,
    SandboxNotReadyError,
    SandboxPortForwardError,
    SandboxRequestError,
    SandboxTemplateNotFoundError,
    SandboxTimeoutError,
)
from .models import ExecutionResult, FileEntry
from .sync import Commands, Files, PortForward, Sandbox, SandboxClient

__all__ = [
    "AsyncCommands", "AsyncFiles", "AsyncPortForward", "AsyncSandbox", "AsyncSandboxClient", "Commands",
    "ExecutionResult", "FileEntry", "Files", "PortForward", "ProxyResponse", "Sandbox", "SandboxClaimRefusedError",
    "SandboxClient", "SandboxConflictError", "SandboxError", "SandboxFileError", "SandboxForbiddenError",
    "SandboxMetadataError", "SandboxNotFoundError", "SandboxNotReadyError", "SandboxPortForwardError",
    "SandboxRequestError", "SandboxTemplateNotFoundError", "SandboxTimeoutError",
]
