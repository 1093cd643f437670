// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entry is one member of a test archive.
type entry struct {
	name, body, link string
	typ              byte
}

func archive(t *testing.T, entries ...entry) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if e.typ == tar.TypeDir {
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// TestExtractTarConfined feeds hostile archives to the extraction and checks that nothing
// lands outside the destination, whatever the archive says.
func TestExtractTarConfined(t *testing.T) {
	cases := []struct {
		name    string
		entries []entry
		wantErr error  // errors.Is; nil: no error wanted
		anyErr  bool   // some error, of any kind
		want    string // a file below dest that must exist with body "ok"
	}{
		{name: "a tree", entries: []entry{{name: "d/", typ: tar.TypeDir}, {name: "d/sub/", typ: tar.TypeDir}, {name: "d/sub/f", body: "ok", typ: tar.TypeReg}}, want: "sub/f"},
		{name: "dot-dot", entries: []entry{{name: "d/", typ: tar.TypeDir}, {name: "d/../../escaped", body: "x", typ: tar.TypeReg}}, wantErr: ErrUnsafeEntry},
		{name: "absolute", entries: []entry{{name: "d/", typ: tar.TypeDir}, {name: "/tmp/escaped", body: "x", typ: tar.TypeReg}}, wantErr: ErrUnsafeEntry},
		{name: "another top", entries: []entry{{name: "d/", typ: tar.TypeDir}, {name: "other/escaped", body: "x", typ: tar.TypeReg}}, wantErr: ErrUnsafeEntry},
		// Links out are skipped: the file meant to go through one lands inside.
		{name: "a link out, then a file through it", entries: []entry{{name: "d/", typ: tar.TypeDir},
			{name: "d/out", link: "../..", typ: tar.TypeSymlink}, {name: "d/out/escaped", body: "ok", typ: tar.TypeReg}}, want: "out/escaped"},
		{name: "an absolute link, then a file through it", entries: []entry{{name: "d/", typ: tar.TypeDir},
			{name: "d/abs", link: "/tmp", typ: tar.TypeSymlink}, {name: "d/abs/escaped", body: "ok", typ: tar.TypeReg}}, want: "abs/escaped"},
		// Each link stays inside on its words, but resolved they climb out: the os.Root stops it.
		{name: "links that escape only when resolved", entries: []entry{{name: "d/", typ: tar.TypeDir}, {name: "d/sub/", typ: tar.TypeDir},
			{name: "d/sub/here", link: ".", typ: tar.TypeSymlink}, {name: "d/sub/up", link: "here/../..", typ: tar.TypeSymlink},
			{name: "d/sub/up/escaped", body: "x", typ: tar.TypeReg}}, anyErr: true},
		{name: "a hard link to a file outside", entries: []entry{{name: "d/", typ: tar.TypeDir},
			{name: "d/hard", link: "../victim", typ: tar.TypeLink}, {name: "d/f", body: "ok", typ: tar.TypeReg}}, want: "f"},
		{name: "a file with more after it", entries: []entry{{name: "d", body: "x", typ: tar.TypeReg}, {name: "d/../escaped", body: "x", typ: tar.TypeReg}}, wantErr: ErrUnsafeEntry},
		{name: "a link inside is kept", entries: []entry{{name: "d/", typ: tar.TypeDir}, {name: "d/f", body: "ok", typ: tar.TypeReg},
			{name: "d/l", link: "f", typ: tar.TypeSymlink}}, want: "l"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			outside := filepath.Join(base, "outside")
			if err := os.MkdirAll(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(outside, "victim")
			if err := os.WriteFile(victim, []byte("victim"), 0o644); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(outside, "inner", "dest")
			if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
				t.Fatal(err)
			}
			_, err := extractTar(archive(t, tc.entries...), "d", dest, DefaultMaxCopyBytes)
			switch {
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Errorf("error %v, want %v", err, tc.wantErr)
			case tc.anyErr && err == nil:
				t.Error("no error, want one")
			case tc.wantErr == nil && !tc.anyErr && err != nil:
				t.Errorf("error %v", err)
			}
			// Nothing but dest may have appeared anywhere under base.
			_ = filepath.Walk(base, func(p string, info os.FileInfo, err error) error {
				if err != nil || p == base || p == outside || p == victim || p == filepath.Dir(dest) {
					return nil
				}
				if p != dest && !strings.HasPrefix(p, dest+string(filepath.Separator)) {
					t.Errorf("%s was written outside the destination", p)
				}
				return nil
			})
			if b, _ := os.ReadFile(victim); string(b) != "victim" {
				t.Errorf("the file outside now holds %q", b)
			}
			if tc.want != "" {
				if b, err := os.ReadFile(filepath.Join(dest, tc.want)); err != nil || string(b) != "ok" {
					t.Errorf("%s: %q, %v; want \"ok\"", tc.want, b, err)
				}
			}
		})
	}
}

// TestTarRoundTrip writes a local tree as CopyTo does and extracts it as CopyFrom does, under a
// new name.
func TestTarRoundTrip(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	for name, body := range map[string]string{"a": "alpha", "sub/b": strings.Repeat("b", 70000), "sub/deeper/c": ""} {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	padder := &recordPadder{w: &buf}
	tw := tar.NewWriter(padder)
	sizes := tarSizes{}
	if err := writeTarTree(tw, src, "copy", sizes); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := padder.pad(); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%tarRecordSize != 0 {
		t.Errorf("archive of %d bytes is not whole %d-byte records", buf.Len(), tarRecordSize)
	}
	if sizes["copy/sub/b"] != 70000 || sizes["copy/a"] != 5 || len(sizes) != 3 {
		t.Errorf("sizes %v", sizes)
	}
	dest := filepath.Join(t.TempDir(), "dest")
	if _, err := extractTar(&buf, "copy", dest, DefaultMaxCopyBytes); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "sub/b")); len(b) != 70000 {
		t.Errorf("sub/b has %d bytes", len(b))
	}
	if target, err := os.Readlink(filepath.Join(dest, "link")); err != nil || target != "a" {
		t.Errorf("link -> %q, %v", target, err)
	}
	if info, err := os.Stat(filepath.Join(dest, "a")); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("a: %v, %v", info, err)
	}
}

// TestExtractSingleFile renames a single file to the destination.
func TestExtractSingleFile(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "renamed.txt")
	if _, err := extractTar(archive(t, entry{name: "orig.txt", body: "ok", typ: tar.TypeReg}), "orig.txt", dest, DefaultMaxCopyBytes); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dest); err != nil || string(b) != "ok" {
		t.Errorf("%q, %v", b, err)
	}
	if _, err := extractTar(archive(t), "orig.txt", dest, DefaultMaxCopyBytes); err == nil {
		t.Error("an empty archive: no error")
	}
}

// rawHeader is a ustar header block, written by hand: archive/tar writes no sparse entries, which
// a hostile sandbox's tar may.
func rawHeader(name string, typ byte, size int) []byte {
	b := make([]byte, 512)
	copy(b, name)
	copy(b[100:], "0000644\x00")
	copy(b[108:], "0000000\x00")
	copy(b[116:], "0000000\x00")
	copy(b[124:], fmt.Sprintf("%011o\x00", size))
	copy(b[136:], "00000000000\x00")
	b[156] = typ
	copy(b[257:], "ustar\x0000")
	copy(b[148:], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// block pads p to whole 512-byte blocks.
func block(p []byte) []byte {
	return append(p, make([]byte, (512-len(p)%512)%512)...)
}

// sparseArchive is a few kilobytes holding, under prefix, a regular file "small" of 2 bytes and
// then a PAX sparse entry "sparse" of 5 stored bytes that reads as realSize bytes.
func sparseArchive(prefix string, realSize int64) *bytes.Buffer {
	var records []byte
	for _, kv := range []string{"GNU.sparse.map=0,5", "GNU.sparse.numblocks=1", fmt.Sprintf("GNU.sparse.size=%d", realSize)} {
		// A record's length counts its own digits.
		n := len(kv) + 3
		for len(fmt.Sprintf("%d %s\n", n, kv)) != n {
			n++
		}
		records = append(records, fmt.Sprintf("%d %s\n", n, kv)...)
	}
	var buf bytes.Buffer
	if prefix != "" {
		buf.Write(rawHeader(prefix+"/", tar.TypeDir, 0))
		prefix += "/"
	}
	buf.Write(rawHeader(prefix+"small", tar.TypeReg, 2))
	buf.Write(block([]byte("ok")))
	buf.Write(rawHeader("PaxHeaders/sparse", tar.TypeXHeader, len(records)))
	buf.Write(block(records))
	buf.Write(rawHeader(prefix+"sparse", tar.TypeReg, 5))
	buf.Write(block([]byte("hello")))
	buf.Write(make([]byte, 1024))
	return &buf
}

// TestExtractTarBounded: a sparse entry, which would be written as a terabyte of zeros from a
// few kilobytes, is refused before any of it is written, inside a tree or as the single file
// copied, and so is a file that would take the copy past its bound; the files before stay.
func TestExtractTarBounded(t *testing.T) {
	// The archive is what the sandbox's tar could send: archive/tar reads it as a terabyte.
	tr := tar.NewReader(sparseArchive("", 1<<40))
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == "sparse" {
			if hdr.Size != 1<<40 || !sparse(hdr) {
				t.Fatalf("the test archive's sparse entry reads as %d bytes, sparse %v", hdr.Size, sparse(hdr))
			}
			break
		}
	}

	// 64 MiB below: should the refusal ever break, the test writes that much, not a terabyte.
	dest := filepath.Join(t.TempDir(), "dest")
	if _, err := extractTar(sparseArchive("d", 64<<20), "d", dest, 1<<50); !errors.Is(err, ErrSparseEntry) {
		t.Errorf("a sparse entry in a tree: %v, want ErrSparseEntry", err)
	}
	if _, err := os.Lstat(filepath.Join(dest, "sparse")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sparse entry was written: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "small")); err != nil || string(b) != "ok" {
		t.Errorf("the file before it: %q, %v", b, err)
	}

	single := filepath.Join(t.TempDir(), "single")
	var one bytes.Buffer
	one.Write(sparseArchive("", 64<<20).Bytes()[1024:]) // from the PAX header of "sparse" on
	if _, err := extractTar(&one, "sparse", single, 1<<50); !errors.Is(err, ErrSparseEntry) {
		t.Errorf("a sparse single file: %v, want ErrSparseEntry", err)
	}
	if _, err := os.Lstat(single); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sparse single file was written: %v", err)
	}

	bounded := filepath.Join(t.TempDir(), "bounded")
	entries := []entry{{name: "d/", typ: tar.TypeDir}, {name: "d/a", body: "12345", typ: tar.TypeReg}, {name: "d/b", body: "12345", typ: tar.TypeReg}}
	_, err := extractTar(archive(t, entries...), "d", bounded, 9)
	if !errors.Is(err, ErrCopyTooLarge) || !strings.Contains(err.Error(), "at most 9") {
		t.Errorf("a copy past its bound: %v, want ErrCopyTooLarge naming 9", err)
	}
	if _, err := os.Lstat(filepath.Join(bounded, "b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file past the bound was written: %v", err)
	}
	if _, err := extractTar(archive(t, entries...), "d", filepath.Join(t.TempDir(), "fits"), 10); err != nil {
		t.Errorf("a copy of exactly its bound: %v", err)
	}
	if _, err := extractTar(archive(t, entry{name: "f", body: "12345", typ: tar.TypeReg}), "f", filepath.Join(t.TempDir(), "f"), 4); !errors.Is(err, ErrCopyTooLarge) {
		t.Errorf("a single file past the bound: %v, want ErrCopyTooLarge", err)
	}
}
