# Copyright The sandbox-apiserver Authors.
# SPDX-License-Identifier: Apache-2.0
import io
import tarfile

import pytest

from sandbox_apiserver import SandboxFileError, _files


@pytest.mark.parametrize(
    "path, want",
    [
        ("/tmp/a.txt", ("/tmp", "a.txt")),
        ("/tmp//x/./a.txt", ("/tmp/x", "a.txt")),
        ("a.txt", (".", "a.txt")),
        ("sub/a.txt", ("sub", "a.txt")),
        ("/a", ("/", "a")),
    ],
)
def test_split_path(path, want):
    assert _files.split_path(path) == want


@pytest.mark.parametrize("path", ["", " ", "/", ".", "..", "/tmp/..", "../a", "/tmp/x/../a", "foo\x00../etc/passwd", "a\nb", "a\x7fb"])
def test_split_path_refuses(path):
    with pytest.raises(SandboxFileError):
        _files.split_path(path)


def test_archive_round_trip_is_binary_safe():
    data = bytes(range(256)) * 4099
    archive = _files.write_archive("f.bin", data, 0o600)
    # Whole records, so tar -x ends without stdin's end.
    assert len(archive) % (20 * 512) == 0
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        (member,) = tar.getmembers()
        assert (member.name, member.size, member.mode) == ("f.bin", len(data), 0o600)
    assert _files.read_archive(archive, "/f.bin", len(data)) == data


def test_read_archive_bounds_and_kinds():
    archive = _files.write_archive("f", b"12345")
    with pytest.raises(SandboxFileError, match="max_bytes=4"):
        _files.read_archive(archive, "/f", 4)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("d")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    with pytest.raises(SandboxFileError, match="not a regular file"):
        _files.read_archive(buf.getvalue(), "/d", 10)
    with pytest.raises(SandboxFileError):
        _files.read_archive(b"not a tar", "/x", 10)


def test_parse_listing():
    out = "12 1700000000 81a4 /tmp/d/b.txt\n4096 1700000001 41ed /tmp/d/a dir\n3 1700000002 a1ff /tmp/d/l\n"
    entries = _files.parse_listing(out)
    assert [(e.name, e.type, e.size) for e in entries] == [("a dir", "directory", 4096), ("b.txt", "file", 12), ("l", "symlink", 3)]
    with pytest.raises(SandboxFileError):
        _files.parse_listing("garbage\n")


def test_content():
    assert _files.as_bytes("é") == "é".encode()
    assert _files.as_bytes(bytearray(b"\x00")) == b"\x00"
    with pytest.raises(TypeError):
        _files.as_bytes(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", ["-delete", "-exec", "--help"])
def test_paths_are_never_options(path):
    assert _files.list_argv(path)[1] == "./" + path
    assert _files.exists_argv(path)[-1] == "./" + path
    assert _files.write_argv(path)[-1] == "./" + path
    assert _files.read_argv(path, "f")[-3] == "./" + path
    assert _files.size_argv(path, "f")[-1] == "./" + path + "/f"
    assert _files.list_argv("/tmp/" + path)[1] == "/tmp/" + path


def test_read_archive_refuses_sparse_entries():
    # Ten kilobytes that read as a terabyte of zeros.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("f")
        info.size = 5
        info.pax_headers = {"GNU.sparse.size": str(1 << 40), "GNU.sparse.map": "0,5", "GNU.sparse.numblocks": "1"}
        tar.addfile(info, io.BytesIO(b"hello"))
    for max_bytes in (64 << 20, 1 << 41):
        with pytest.raises(SandboxFileError, match="sparse"):
            _files.read_archive(buf.getvalue(), "/f", max_bytes)
