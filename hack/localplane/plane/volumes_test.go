// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureOwnDir(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "volumes")
	if err := EnsureOwnDir(dir); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 || !info.IsDir() {
		t.Fatalf("made %v, %v; want a directory of mode 0700", info, err)
	}
	// Reused when it is the user's own, its mode put back.
	os.Chmod(dir, 0o755)
	if err := EnsureOwnDir(dir); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(dir); info.Mode().Perm() != 0o700 {
		t.Errorf("mode %v after reuse, want 0700", info.Mode().Perm())
	}

	link := filepath.Join(base, "link")
	os.Symlink(dir, link)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	for path, want := range map[string]string{link: "symbolic link", file: "not a directory"} {
		if err := EnsureOwnDir(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("EnsureOwnDir(%s) = %v; want an error saying %q", path, err, want)
		}
	}
}

// A directory another user made first is refused (root only: it takes a chown).
func TestEnsureOwnDirRefusesAnotherUsers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	dir := filepath.Join(t.TempDir(), "volumes")
	os.Mkdir(dir, 0o777)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := EnsureOwnDir(dir); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("EnsureOwnDir of nobody's directory = %v; want a refusal naming its owner", err)
	}
}
