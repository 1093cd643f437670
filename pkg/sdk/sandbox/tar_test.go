// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"archive/tar"
	"bytes"
	"errors"
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
			_, err := extractTar(archive(t, tc.entries...), "d", dest)
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
	if _, err := extractTar(&buf, "copy", dest); err != nil {
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
	if _, err := extractTar(archive(t, entry{name: "orig.txt", body: "ok", typ: tar.TypeReg}), "orig.txt", dest); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dest); err != nil || string(b) != "ok" {
		t.Errorf("%q, %v", b, err)
	}
	if _, err := extractTar(archive(t), "orig.txt", dest); err == nil {
		t.Error("an empty archive: no error")
	}
}
