// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestProbeFlags: the seed controller's listener flags parse and map onto listeners.
func TestProbeFlags(t *testing.T) {
	health := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("health " + r.URL.Path)) })
	type get struct {
		addr, path string
		code       int
		body       string // a substring of the body
	}
	cases := []struct {
		name    string
		args    []string
		wantErr bool
		addrs   int
		gets    []get
	}{
		{name: "defaults: no listener", addrs: 0},
		{name: "the seeds' addresses", args: []string{"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"}, addrs: 2,
			gets: []get{
				{":8080", "/metrics", 200, "# TYPE"},
				{":8080", "/debug/pprof/profile", 404, ""},
				{":8081", "/healthz", 200, "health /healthz"},
				{":8081", "/readyz/etcd", 200, "health /readyz/etcd"},
				{":8081", "/metrics", 404, ""},
			}},
		{name: "--enable-pprof adds the CPU profile to the metrics listener", args: []string{"--metrics-bind-address=127.0.0.1:9090", "--enable-pprof"}, addrs: 1,
			gets: []get{{"127.0.0.1:9090", "/debug/pprof/profile?seconds=1", 200, ""}}},
		{name: "one address for both", args: []string{"--metrics-bind-address=127.0.0.1:9090", "--health-probe-bind-address=127.0.0.1:9090"}, addrs: 1,
			gets: []get{{"127.0.0.1:9090", "/metrics", 200, "# TYPE"}, {"127.0.0.1:9090", "/livez", 200, "health /livez"}}},
		{name: `"0" turns a listener off`, args: []string{"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:9091"}, addrs: 1},
		{name: "--enable-pprof without a metrics listener", args: []string{"--enable-pprof"}, wantErr: true},
		{name: "an address without a port", args: []string{"--health-probe-bind-address=localhost"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewProbeOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("parse %q: %v", tc.args, err)
			}
			if errs := o.Validate(); (len(errs) > 0) != tc.wantErr {
				t.Fatalf("Validate(%q) = %v, want an error: %v", tc.args, errs, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			hs := o.handlers(health)
			if len(hs) != tc.addrs {
				t.Fatalf("%d listeners, want %d", len(hs), tc.addrs)
			}
			for _, g := range tc.gets {
				rec := httptest.NewRecorder()
				hs[g.addr].ServeHTTP(rec, httptest.NewRequest(http.MethodGet, g.path, nil))
				if rec.Code != g.code || !strings.Contains(rec.Body.String(), g.body) {
					t.Errorf("GET %s%s = %d %.80q, want %d with %q", g.addr, g.path, rec.Code, rec.Body.String(), g.code, g.body)
				}
			}
		})
	}
}

// TestVersionFlag: --version prints the version and exits without starting a server.
func TestVersionFlag(t *testing.T) {
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version", "--leader-elect=true", "--extensions"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("--version: %v", err)
	}
	if !strings.HasPrefix(out.String(), "sandbox-apiserver ") {
		t.Errorf("--version printed %q", out.String())
	}
}
