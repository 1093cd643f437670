# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
"""Files in the sandbox as tar over exec (as kubectl cp and the Go SDK move them), shared by the
sync and async clients: the path rules, the archives and the commands; no I/O here."""

from __future__ import annotations

import io
import posixpath
import tarfile
import time

from .errors import SandboxFileError
from .models import FileEntry, FileType

# files.read and files.write hold a file in memory whole: they refuse larger ones by default.
DEFAULT_MAX_FILE_BYTES = 64 << 20
# What a tar stream adds to a file: headers, padding to a record.
_TAR_OVERHEAD = 64 << 10


def split_path(path: str) -> tuple[str, str]:
    """The directory and name of a file path in the sandbox, with the Go SDK's rules: the path is
    cleaned (relative paths are the sandbox's working directory's) and must name a file, not
    "/", "." or "..". As the seed SDK did, a ".." segment (whose meaning cleaning would change
    when a link is on the way) and control characters (a NUL would cut the path short) are
    refused."""
    if not isinstance(path, str) or not path.strip():
        raise SandboxFileError(f"a file path is needed, not {path!r}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise SandboxFileError(f"the path {path!r} holds a control character")
    if ".." in path.split("/"):
        raise SandboxFileError(f"the path {path!r} has a '..' segment")
    clean = posixpath.normpath(path)
    directory, name = posixpath.split(clean)
    if name in ("", ".", "..") or clean == "/":
        raise SandboxFileError(f"the path {path!r} does not name a file")
    return directory or ".", name


def check_dir(path: str) -> str:
    """A directory path (files.list): cleaned, no control characters."""
    if not isinstance(path, str) or not path:
        raise SandboxFileError(f"a directory path is needed, not {path!r}")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise SandboxFileError(f"the path {path!r} holds a control character")
    return posixpath.normpath(path)


def write_archive(name: str, data: bytes, mode: int = 0o644) -> bytes:
    """A tar archive of one regular file. tarfile pads it to whole records (20 blocks), so tar -x
    in the sandbox finishes at the end-of-archive blocks without waiting for stdin's end (which
    some kubelets, kwok's, never pass on)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = mode & 0o7777
        info.mtime = int(time.time())
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def not_option(path: str) -> str:
    """A path that a command would read as an option (it starts with "-") made a path again:
    "-delete" becomes "./-delete", the same file. Every path given to a command goes through
    it, besides the "--" the commands get where they take it (the Go SDK's rule)."""
    return "./" + path if path.startswith("-") else path


def write_argv(directory: str) -> list[str]:
    # -m: the file gets the time it is written; -o: owned by the user tar runs as.
    return ["tar", "-xmof", "-", "-C", not_option(directory)]


def size_argv(directory: str, name: str) -> list[str]:
    return ["stat", "-c", "%s", "--", not_option(posixpath.join(directory, name))]


def read_argv(directory: str, name: str) -> list[str]:
    # -h: the file a link points to, not the link.
    return ["tar", "-chf", "-", "-C", not_option(directory), "--", name]


def read_bound(max_bytes: int) -> int:
    """The bound of the tar stream of a file of at most max_bytes."""
    return max_bytes + _TAR_OVERHEAD


def read_archive(archive: bytes, path: str, max_bytes: int) -> bytes:
    """The one regular file of a tar stream from the sandbox."""
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r|") as tar:
            member = tar.next()
            if member is None:
                raise SandboxFileError(f"{path}: no such file")
            if not member.isfile():
                raise SandboxFileError(f"{path} is not a regular file")
            if member.issparse():
                # Its holes would be read as zeros the archive does not hold.
                raise SandboxFileError(f"{path} came as a sparse archive entry, which the SDK does not read")
            if member.size > max_bytes:
                raise SandboxFileError(f"{path} has {member.size} bytes, more than max_bytes={max_bytes}")
            f = tar.extractfile(member)
            data = f.read() if f else b""
    except tarfile.TarError as e:
        raise SandboxFileError(f"{path}: the archive from the sandbox is broken: {e}") from e
    if len(data) != member.size:
        raise SandboxFileError(f"{path}: {len(data)} of {member.size} bytes came")
    return data


def list_argv(directory: str) -> list[str]:
    # find takes no "--": a directory "-delete" would be an expression.
    return ["find", not_option(directory), "-mindepth", "1", "-maxdepth", "1", "-exec", "stat", "-c", "%s %Y %f %n", "{}", "+"]


def exists_argv(path: str) -> list[str]:
    return ["sh", "-c", 'test -e "$1" || test -L "$1"', "sh", not_option(path)]


def parse_listing(out: str) -> list[FileEntry]:
    """Lines of ``stat -c '%s %Y %f %n'``: size, modification time, raw mode (hex), path."""
    entries = []
    for line in out.splitlines():
        fields = line.split(" ", 3)
        if len(fields) != 4:
            raise SandboxFileError(f"unexpected listing line {line!r}")
        try:
            size, mtime, raw = int(fields[0]), int(fields[1]), int(fields[2], 16)
        except ValueError as e:
            raise SandboxFileError(f"unexpected listing line {line!r}") from e
        entries.append(FileEntry(name=posixpath.basename(fields[3]), type=_file_type(raw), size=size, mod_time=float(mtime)))
    return sorted(entries, key=lambda e: e.name)


def _file_type(raw: int) -> FileType:
    kind = raw & 0o170000
    if kind == 0o100000:
        return "file"
    if kind == 0o040000:
        return "directory"
    if kind == 0o120000:
        return "symlink"
    return "other"


def as_bytes(content: bytes | str) -> bytes:
    """files.write's content: bytes as they are, text as UTF-8 (as the seed SDK took both)."""
    if isinstance(content, str):
        return content.encode("utf-8")
    if isinstance(content, (bytes, bytearray, memoryview)):
        return bytes(content)
    raise TypeError(f"file content must be bytes or str, not {type(content).__name__}")
