# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""Values the SDK returns."""

from __future__ import annotations

import dataclasses
from typing import Literal


@dataclasses.dataclass(frozen=True)
class ExecutionResult:
    """What a command printed and how it exited (the seed SDK's shape)."""

    stdout: str
    stderr: str
    exit_code: int


FileType = Literal["file", "directory", "symlink", "other"]


@dataclasses.dataclass(frozen=True)
class FileEntry:
    """One entry of a directory listing."""

    name: str
    type: FileType
    size: int
    mod_time: float
    """Seconds since the epoch."""
