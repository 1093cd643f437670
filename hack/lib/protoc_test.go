// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Tests of the shell functions in protoc.sh, run through bash as the scripts run them.
package lib

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// revisionFromMadison runs madison_revisions | newest_revision_of VERSION on input under the
// scripts' errexit and pipefail, and returns what it printed.
func revisionFromMadison(t *testing.T, version, input string) string {
	t.Helper()
	script := `set -o errexit -o nounset -o pipefail
source ./common.sh
source ./debian.sh
source ./protoc.sh
madison_revisions | newest_revision_of "$1"`
	cmd := exec.Command("bash", "-c", script, "bash", version)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestMadisonRevisionParsing(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name, input, version, want string
	}{
		// Captured from Debian bookworm: the lists a new machine's image ships (madison pads the
		// short revision with two spaces) and the lists after apt-get update (one space).
		{"image lists", read("madison-image-lists.txt"), "3.21.12", "3.21.12-3"},
		{"updated lists", read("madison-updated-lists.txt"), "3.21.12", "3.21.12-3+deb12u1"},
		{"both sources listed", read("madison-updated-lists.txt") + read("madison-image-lists.txt"), "3.21.12", "3.21.12-3+deb12u1"},
		{"a later point release", strings.ReplaceAll(read("madison-updated-lists.txt"), "deb12u1", "deb12u12") + read("madison-updated-lists.txt"),
			"3.21.12", "3.21.12-3+deb12u12"},
		{"other upstream versions only", read("madison-image-lists.txt"), "3.21.13", ""},
		{"a version that is a prefix of the listed one", read("madison-image-lists.txt"), "3.21.1", ""},
		{"no lists", "", "3.21.12", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := revisionFromMadison(t, tt.version, tt.input); got != tt.want {
				t.Errorf("revision of %s = %q, want %q", tt.version, got, tt.want)
			}
		})
	}
}
