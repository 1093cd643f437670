// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2b

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestRouting: a request naming a sandbox (the E2b-Sandbox-Id header, or the host
// <port>-<id>.<domain>) goes to the data plane with the ID in the header; any other to the
// control plane; a sandbox port other than the daemon's is not served.
func TestRouting(t *testing.T) {
	var plane, id string
	s := &Server{
		hostRE:  regexp.MustCompile(`^(\d+)-([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.` + regexp.QuoteMeta("sbx.example.com") + `(:\d+)?$`),
		control: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { plane = "control" }),
		data: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			plane, id = "data", r.Header.Get(sandboxIDHeader)
		}),
	}
	for _, c := range []struct {
		host, header, wantPlane, wantID string
		wantCode                        int
	}{
		{"127.0.0.1:3049", "", "control", "", 200},
		{"127.0.0.1:3049", "e2b-abc", "data", "e2b-abc", 200},
		{"49983-e2b-abc.sbx.example.com", "", "data", "e2b-abc", 200},
		{"49983-e2b-abc.sbx.example.com:443", "", "data", "e2b-abc", 200},
		{"8080-e2b-abc.sbx.example.com", "", "", "", 404},
		{"49983-e2b-abc.other.example.com", "", "control", "", 200},
		{"api.sbx.example.com", "", "control", "", 200},
	} {
		plane, id = "", ""
		req := httptest.NewRequest(http.MethodGet, "/health", nil)
		req.Host = c.host
		if c.header != "" {
			req.Header.Set(sandboxIDHeader, c.header)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if plane != c.wantPlane || id != c.wantID || rec.Code != c.wantCode {
			t.Errorf("host %q header %q: plane %q id %q code %d; want %q %q %d", c.host, c.header, plane, id, rec.Code, c.wantPlane, c.wantID, c.wantCode)
		}
	}
}

// TestControlPlaneRoutes: the routes register (ServeMux panics on conflicting patterns), paths
// of features not served answer 501 and unknown ones 404, both in E2B's error shape.
func TestControlPlaneRoutes(t *testing.T) {
	mux := (&Server{}).controlPlaneRoutes()
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/sandboxes/metrics", 501},
		{"PUT", "/sandboxes/e2b-x/network", 501},
		{"POST", "/sandboxes/e2b-x/snapshots", 501},
		{"POST", "/sandboxes/e2b-x/fork", 501},
		{"GET", "/v2/sandboxes/e2b-x/logs", 501},
		{"POST", "/v3/templates", 501},
		{"GET", "/volumes", 501},
		{"GET", "/nothing-here", 404},
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.want || !strings.Contains(rec.Body.String(), fmt.Sprintf(`"code":%d`, c.want)) {
			t.Errorf("%s %s: %d %s; want %d", c.method, c.path, rec.Code, rec.Body, c.want)
		}
	}
}
