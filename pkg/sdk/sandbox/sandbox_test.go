// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"testing"
	"time"

	utilexec "k8s.io/client-go/util/exec"
)

func TestParseName(t *testing.T) {
	cases := []struct {
		in       string
		wantKind Kind
		wantName string
		wantErr  bool
	}{
		{in: "mine", wantName: "mine"},
		{in: "sandboxclaim/mine", wantKind: KindClaim, wantName: "mine"},
		{in: "sandboxclaims/mine", wantKind: KindClaim, wantName: "mine"},
		{in: "sandboxclaim.extensions.agents.x-k8s.io/mine", wantKind: KindClaim, wantName: "mine"},
		{in: "sandbox/web", wantKind: KindSandbox, wantName: "web"},
		{in: "Sandboxes/web", wantKind: KindSandbox, wantName: "web"},
		{in: "pod/web", wantErr: true},
		{in: "sandbox/", wantErr: true},
		{in: "a/b/c", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range cases {
		kind, name, err := ParseName(tc.in)
		if (err != nil) != tc.wantErr || kind != tc.wantKind || name != tc.wantName {
			t.Errorf("ParseName(%q) = %q, %q, %v; want %q, %q, error %v", tc.in, kind, name, err, tc.wantKind, tc.wantName, tc.wantErr)
		}
	}
}

func TestExitError(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want int
	}{
		{name: "none", err: nil, want: 0},
		{name: "the kubelet's exit code", err: utilexec.CodeExitError{Err: errors.New("command terminated with non-zero exit code"), Code: 3}, want: 3},
		{name: "wrapped", err: fmt.Errorf("exec: %w", utilexec.CodeExitError{Err: errors.New("x"), Code: 42}), want: 42},
		{name: "kwok's text", err: errors.New("error executing command in container: exit status 7"), want: 7},
		{name: "another failure", err: errors.New("connection reset by peer"), want: -1},
	}
	for _, tc := range cases {
		if got := ExitCode(exitError(tc.err)); got != tc.want {
			t.Errorf("%s: ExitCode = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestNewClaim(t *testing.T) {
	at := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)
	shutdown := at.Add(time.Hour)
	claim := newClaim(FromPool("python"), claimSettings{labels: map[string]string{"team": "a"}, shutdownTime: &shutdown}, at)
	if claim.GenerateName != DefaultGenerateName || claim.Name != "" {
		t.Errorf("name %q, generateName %q", claim.Name, claim.GenerateName)
	}
	if claim.Labels[CreatedByLabel] != CreatedByValue || claim.Labels["team"] != "a" {
		t.Errorf("labels %v", claim.Labels)
	}
	if got := claim.Annotations[FirstRequestedAtAnnotation]; got != "2026-11-26T18:00:00Z" {
		t.Errorf("%s = %q", FirstRequestedAtAnnotation, got)
	}
	if claim.Spec.WarmPoolRef == nil || claim.Spec.WarmPoolRef.Name != "python" || claim.Spec.TemplateRef.Name != "" {
		t.Errorf("spec %+v", claim.Spec)
	}
	if l := claim.Spec.Lifecycle; l == nil || !l.ShutdownTime.Time.Equal(shutdown) || l.ShutdownPolicy == nil || *l.ShutdownPolicy != "Delete" {
		t.Errorf("lifecycle %+v", claim.Spec.Lifecycle)
	}
	claim = newClaim(FromTemplate("python-runtime"), claimSettings{name: "mine"}, at)
	if claim.Name != "mine" || claim.GenerateName != "" || claim.Spec.TemplateRef.Name != "python-runtime" || claim.Spec.Lifecycle != nil {
		t.Errorf("claim %+v", claim)
	}
}

func TestParseListing(t *testing.T) {
	files, err := parseListing("12 1764180000 81a4 /work/a file.txt\n4096 1764180001 41ed /work/dir\n1 1764180002 a1ff /work/link\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []FileInfo{
		{Name: "a file.txt", Size: 12, Mode: 0o644, ModTime: time.Unix(1764180000, 0)},
		{Name: "dir", Size: 4096, Mode: fs.ModeDir | 0o755, ModTime: time.Unix(1764180001, 0)},
		{Name: "link", Size: 1, Mode: fs.ModeSymlink | 0o777, ModTime: time.Unix(1764180002, 0)},
	}
	if len(files) != len(want) {
		t.Fatalf("%d files, want %d", len(files), len(want))
	}
	for i := range want {
		if files[i] != want[i] {
			t.Errorf("file %d = %+v, want %+v", i, files[i], want[i])
		}
	}
	if _, err := parseListing("garbage\n"); err == nil {
		t.Error("garbage parsed")
	}
}

func TestRetryAfter(t *testing.T) {
	cases := []struct {
		code   int
		header string
		want   time.Duration
		retry  bool
	}{
		{code: 200},
		{code: 500},
		{code: 503, header: "5", want: 5 * time.Second, retry: true},
		{code: 503, header: "600", want: 10 * time.Second, retry: true},
		{code: 429, want: 500 * time.Millisecond, retry: true},
		{code: 502, want: 500 * time.Millisecond, retry: true},
	}
	for _, tc := range cases {
		resp := &http.Response{StatusCode: tc.code, Header: http.Header{}}
		if tc.header != "" {
			resp.Header.Set("Retry-After", tc.header)
		}
		got, retry := retryAfter(resp, 1)
		if got != tc.want || retry != tc.retry {
			t.Errorf("%d Retry-After %q: %v %v; want %v %v", tc.code, tc.header, got, retry, tc.want, tc.retry)
		}
	}
}

func TestDropAPIServerHeaders(t *testing.T) {
	h := http.Header{}
	for _, key := range []string{"Authorization", "Proxy-Authorization", "Impersonate-User", "Impersonate-Group", "Impersonate-Extra-Scopes", "Content-Type", "X-Request-Id"} {
		h.Set(key, "x")
	}
	dropAPIServerHeaders(h)
	if len(h) != 2 || h.Get("Content-Type") == "" || h.Get("X-Request-Id") == "" {
		t.Errorf("left %v; want only Content-Type and X-Request-Id", h)
	}
}
