// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2b

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestAccessTokens(t *testing.T) {
	signer := tokenSigner{key: []byte("0123456789abcdef0123456789abcdef")}
	id := strings.Repeat("a", keyIDLength)
	token := signer.token(id, "ns", "e2b-x", "uid-1")
	if keyOf(token) != id {
		t.Fatalf("keyOf(%q) = %q, want %q", token, keyOf(token), id)
	}
	if !signer.valid(token, id, "ns", "e2b-x", "uid-1") {
		t.Fatal("a token is not valid for what it was made for")
	}
	other := strings.Repeat("b", keyIDLength)
	for name, c := range map[string]struct {
		key, ns, name string
		uid           types.UID
	}{
		"another key":          {other, "ns", "e2b-x", "uid-1"},
		"another namespace":    {id, "ns2", "e2b-x", "uid-1"},
		"another claim":        {id, "ns", "e2b-y", "uid-1"},
		"the claim made again": {id, "ns", "e2b-x", "uid-2"},
	} {
		if signer.valid(token, c.key, c.ns, c.name, c.uid) {
			t.Errorf("%s: the token is valid", name)
		}
	}
	if (tokenSigner{key: []byte("another signing key, 32 bytes!!")}).valid(token, id, "ns", "e2b-x", "uid-1") {
		t.Error("a token is valid under another signing key")
	}
	for _, bad := range []string{"", "nodot", "short.sig", id + ".%%%"} {
		if keyOf(bad) != "" && signer.valid(bad, id, "ns", "e2b-x", "uid-1") {
			t.Errorf("malformed token %q is valid", bad)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	ok := func(o *Options) {}
	for name, tc := range map[string]struct {
		mod  func(*Options)
		want string
	}{
		"off":                   {func(o *Options) { o.BindAddress = "" }, ""},
		"plain":                 {ok, ""},
		"tls":                   {func(o *Options) { o.PlainHTTP, o.TLSCertFile, o.TLSKeyFile = false, "c", "k" }, ""},
		"neither tls nor plain": {func(o *Options) { o.PlainHTTP = false }, "--e2b-plain-http"},
		"half tls":              {func(o *Options) { o.PlainHTTP, o.TLSCertFile = false, "c" }, "go together"},
		"bad address":           {func(o *Options) { o.BindAddress = "3000" }, "--e2b-bind-address"},
		"bad namespace":         {func(o *Options) { o.KeysNamespace = "A B" }, "--e2b-api-keys-namespace"},
		"bad domain":            {func(o *Options) { o.Domain = "not a domain" }, "--e2b-domain"},
		"zero limit":            {func(o *Options) { o.MaxRequestsPerKey = 0 }, "--e2b-max-requests-per-key"},
	} {
		o := NewOptions()
		o.BindAddress, o.PlainHTTP = "127.0.0.1:3049", true
		tc.mod(o)
		errs := o.Validate()
		var got string
		for _, err := range errs {
			got += err.Error() + "\n"
		}
		if (tc.want == "") != (len(errs) == 0) || !strings.Contains(got, tc.want) {
			t.Errorf("%s: errors %q, want one naming %q", name, got, tc.want)
		}
	}
}

// TestDecodeBody: malformed bodies are a 400 (413 when too large) in E2B's error shape, naming
// the field when one has the wrong type.
func TestDecodeBody(t *testing.T) {
	for name, tc := range map[string]struct {
		body     string
		optional bool
		code     int
		want     string
	}{
		"valid":           {`{"templateID":"t","timeout":30}`, false, 0, ""},
		"empty optional":  {``, true, 0, ""},
		"empty":           {``, false, 400, "a JSON object is required"},
		"not json":        {`{templateID: t}`, false, 400, "invalid request body"},
		"wrong type":      {`{"templateID":"t","timeout":"long"}`, false, 400, "field timeout must be an integer"},
		"metadata number": {`{"templateID":"t","metadata":{"a":1}}`, false, 400, "field metadata must be a string"},
		"trailing data":   {`{"templateID":"t"} {}`, false, 400, "data after the JSON object"},
		"array":           {`[1,2]`, false, 400, "invalid request body"},
		"too large":       {`{"templateID":"` + strings.Repeat("x", maxBodyBytes) + `"}`, false, 413, "request body over"},
	} {
		rec := httptest.NewRecorder()
		var req newSandboxRequest
		ok := decodeBody(rec, httptest.NewRequest(http.MethodPost, "/sandboxes", strings.NewReader(tc.body)), &req, tc.optional)
		if tc.code == 0 {
			if !ok {
				t.Errorf("%s: refused: %s", name, rec.Body)
			}
			continue
		}
		if ok || rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) || !strings.Contains(rec.Body.String(), `"code":`) {
			t.Errorf("%s: ok=%v %d %s; want %d naming %q", name, ok, rec.Code, rec.Body, tc.code, tc.want)
		}
	}
}

func TestUnsupportedCreateFields(t *testing.T) {
	f, tr := false, true
	for name, req := range map[string]newSandboxRequest{
		"autoPause":   {AutoPause: &tr},
		"no internet": {AllowInternetAccess: &f},
		"network":     {Network: []byte(`{"denyOut":["0.0.0.0/0"]}`)},
		"mcp":         {MCP: []byte(`{"x":{}}`)},
		"volumes":     {VolumeMounts: []json.RawMessage{[]byte(`{}`)}},
	} {
		if req.unsupported() == "" {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := newSandboxRequest{AutoPause: &f, AllowInternetAccess: &tr, Network: []byte("null"), MCP: []byte("null")}
	if what := ok.unsupported(); what != "" {
		t.Errorf("defaults refused: %s", what)
	}
}

func TestListQuery(t *testing.T) {
	q, err := parseListQuery(url.Values{
		// As the SDKs send it: each key and value encoded, then the pairs encoded as a query.
		"metadata": {url.Values{url.QueryEscape("user"): {url.QueryEscape("a b")}, "app": {url.QueryEscape("x&y=z")}}.Encode()},
		"state":    {"running,paused"}, "limit": {"2"}, "order": {"asc"},
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	if q.metadata["user"] != "a b" || q.metadata["app"] != "x&y=z" || !q.states["paused"] || q.limit != 2 || !q.ascending {
		t.Errorf("parsed %+v", q)
	}
	base := listedSandbox{Metadata: map[string]string{"user": "a b", "app": "x&y=z"}, State: "running"}
	if !q.matches(base) {
		t.Error("a sandbox with the metadata asked for does not match")
	}
	base.Metadata["user"] = "c"
	if q.matches(base) {
		t.Error("a sandbox with other metadata matches")
	}
	v1, _ := parseListQuery(url.Values{}, false)
	if v1.matches(listedSandbox{State: statePaused}) {
		t.Error("the v1 list shows paused sandboxes")
	}
	for name, v := range map[string]url.Values{
		"state":        {"state": {"gone"}},
		"limit":        {"limit": {"0"}},
		"big limit":    {"limit": {"1000"}},
		"order":        {"order": {"up"}},
		"startedAfter": {"startedAfter": {"yesterday"}},
		"nextToken":    {"nextToken": {"!!"}},
	} {
		if _, err := parseListQuery(v, true); err == nil || !strings.Contains(err.Error(), strings.Fields(name)[len(strings.Fields(name))-1]) {
			t.Errorf("%s: err %v, want one naming it", name, err)
		}
	}
	c := cursor{started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), name: "e2b-x"}
	back, err := decodeCursor(c.encode())
	if err != nil || !back.started.Equal(c.started) || back.name != c.name {
		t.Errorf("cursor round trip: %+v %v", back, err)
	}
}
