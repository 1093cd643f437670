// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestParseFileSpec(t *testing.T) {
	cases := []struct {
		in      string
		want    fileSpec
		wantErr bool
	}{
		{in: "local.txt", want: fileSpec{path: "local.txt"}},
		{in: "/abs/path", want: fileSpec{path: "/abs/path"}},
		{in: "./a:b", want: fileSpec{path: "./a:b"}},
		{in: "mine:/work/x", want: fileSpec{name: "mine", path: "/work/x"}},
		{in: "mine:rel/x", want: fileSpec{name: "mine", path: "rel/x"}},
		{in: "team-a/mine:/work/x", want: fileSpec{namespace: "team-a", name: "mine", path: "/work/x"}},
		{in: "sandbox/web:/tmp/x", want: fileSpec{name: "sandbox/web", path: "/tmp/x"}},
		{in: "sandboxclaim/mine:/tmp/x", want: fileSpec{name: "sandboxclaim/mine", path: "/tmp/x"}},
		{in: ":/tmp/x", wantErr: true},
		{in: "mine:", wantErr: true},
		{in: "a/b/c:/x", wantErr: true},
		{in: "ns/:/x", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range cases {
		got, err := parseFileSpec(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseFileSpec(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseExecArgs(t *testing.T) {
	cases := []struct {
		args    []string
		dash    int
		name    string
		command []string
		wantErr bool
	}{
		{args: []string{"mine", "echo", "hi"}, dash: 1, name: "mine", command: []string{"echo", "hi"}},
		{args: []string{"sandbox/web", "sh", "-c", "exit 3"}, dash: 1, name: "sandbox/web", command: []string{"sh", "-c", "exit 3"}},
		{args: []string{"mine", "echo"}, dash: -1, wantErr: true},
		{args: []string{"mine"}, dash: 1, wantErr: true},
		{args: []string{"echo"}, dash: 0, wantErr: true},
		{args: []string{"a", "b", "echo"}, dash: 2, wantErr: true},
	}
	for _, tc := range cases {
		name, command, err := parseExecArgs(tc.args, tc.dash)
		if (err != nil) != tc.wantErr || name != tc.name || !slices.Equal(command, tc.command) {
			t.Errorf("parseExecArgs(%q, %d) = %q, %q, %v; want %q, %q, error %v", tc.args, tc.dash, name, command, err, tc.name, tc.command, tc.wantErr)
		}
	}
}

func TestParsePortSpec(t *testing.T) {
	cases := []struct {
		in            string
		local, remote int
		wantErr       bool
	}{
		{in: "8080", local: 8080, remote: 8080},
		{in: "18080:8080", local: 18080, remote: 8080},
		{in: ":8080", local: 0, remote: 8080},
		{in: "0:8080", local: 0, remote: 8080},
		{in: "8080:0", wantErr: true},
		{in: "http", wantErr: true},
		{in: "70000:80", wantErr: true},
		{in: "1:2:3", wantErr: true},
	}
	for _, tc := range cases {
		local, remote, err := parsePortSpec(tc.in)
		if (err != nil) != tc.wantErr || local != tc.local || remote != tc.remote {
			t.Errorf("parsePortSpec(%q) = %d, %d, %v; want %d, %d, error %v", tc.in, local, remote, err, tc.local, tc.remote, tc.wantErr)
		}
	}
}

func TestParsePairs(t *testing.T) {
	got, err := parsePairs("--label", []string{"team=a", "empty=", "with=equals=sign"})
	if err != nil || got["team"] != "a" || got["empty"] != "" || got["with"] != "equals=sign" {
		t.Errorf("parsePairs = %v, %v", got, err)
	}
	for _, bad := range []string{"novalue", "=x"} {
		if _, err := parsePairs("--label", []string{bad}); err == nil {
			t.Errorf("parsePairs(%q): no error", bad)
		}
	}
}

// TestHostFilter: by default only loopback names are served, as kubectl proxy does; a rebound
// name is refused with a 403 before anything reaches the sandbox.
func TestHostFilter(t *testing.T) {
	accept, err := hostFilter(defaultAcceptHosts)
	if err != nil {
		t.Fatal(err)
	}
	reached := 0
	h := accept(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached++ }))
	for host, want := range map[string]int{
		"127.0.0.1:8001": http.StatusOK, "localhost:8001": http.StatusOK, "[::1]:8001": http.StatusOK, "localhost": http.StatusOK,
		"evil.example:8001": http.StatusForbidden, "127.0.0.1.evil.example:8001": http.StatusForbidden, "localhost.evil": http.StatusForbidden, "": http.StatusForbidden,
	} {
		before := reached
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want || (want == http.StatusOK) != (reached > before) {
			t.Errorf("Host %q: %d, reached %v; want %d", host, rec.Code, reached > before, want)
		}
	}
	if _, err := hostFilter("("); err == nil {
		t.Error("an invalid expression was accepted")
	}
}

func TestParseMaxBytes(t *testing.T) {
	for in, want := range map[string]int64{"8Gi": 8 << 30, "512Mi": 512 << 20, "1": 1, "1k": 1000} {
		if got, err := parseMaxBytes(in); err != nil || got != want {
			t.Errorf("parseMaxBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1Gi", "0.5", "lots", ""} {
		if got, err := parseMaxBytes(in); err == nil || !strings.Contains(err.Error(), "--max-bytes") {
			t.Errorf("parseMaxBytes(%q) = %d, %v; want an error naming --max-bytes", in, got, err)
		}
	}
}
