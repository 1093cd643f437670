// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// TestHTTPClient sends requests through HTTPClient to a stand-in API server: each goes to the
// claim's proxy subresource with the client's credentials only, and a GET answered 503 (a
// sandbox waking up) is sent again while a POST is not.
func TestHTTPClient(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	unavailable := 1
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" auth="+r.Header.Get("Authorization")+" imp="+r.Header.Get("Impersonate-User"))
		if unavailable > 0 {
			unavailable--
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Write(body)
	}))
	defer server.Close()
	client, err := NewClient(&rest.Config{Host: server.URL, BearerToken: "the-client's"})
	if err != nil {
		t.Fatal(err)
	}
	httpClient, err := client.newSandbox("team-a", KindClaim, "mine").HTTPClient("http")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://ignored.example/a%2Fb/c?x=1", nil)
	req.Header.Set("Authorization", "Bearer meant-for-the-sandbox")
	req.Header.Set("Impersonate-User", "admin")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET: %d, want 200 after one retry", resp.StatusCode)
	}
	mu.Lock()
	unavailable = 1
	mu.Unlock()
	resp, err = httpClient.Post("http://sandbox/jobs", "text/plain", strings.NewReader("job"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("POST: %d, want the 503 as it came (a POST is not sent twice)", resp.StatusCode)
	}
	want := []string{
		"GET /apis/extensions.agents.x-k8s.io/v1beta1/namespaces/team-a/sandboxclaims/mine:http/proxy/a%2Fb/c?x=1 auth=Bearer the-client's imp=",
		"GET /apis/extensions.agents.x-k8s.io/v1beta1/namespaces/team-a/sandboxclaims/mine:http/proxy/a%2Fb/c?x=1 auth=Bearer the-client's imp=",
		"POST /apis/extensions.agents.x-k8s.io/v1beta1/namespaces/team-a/sandboxclaims/mine:http/proxy/jobs auth=Bearer the-client's imp=",
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("the API server saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// TestHTTPClientStaysBelowTheProxyPath: a path that would climb out of the sandbox's proxy path
// into the rest of the API, as written or encoded, fails before anything reaches the API server;
// identity headers in any spelling are not sent; paths below the proxy path are.
func TestHTTPClientStaysBelowTheProxyPath(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r)
	}))
	defer server.Close()
	client, err := NewClient(&rest.Config{Host: server.URL, BearerToken: "the-client's"})
	if err != nil {
		t.Fatal(err)
	}
	httpClient, err := client.newSandbox("team-a", KindClaim, "mine").HTTPClient("")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"/../../../../../../api/v1/namespaces/team-a/secrets",
		"/a/../../../../../../../api/v1/namespaces/team-a/secrets",
		"/%2e%2e/%2E%2E/%2e%2e/%2e%2e/%2e%2e/%2e%2e/api/v1/secrets",
		"/.%2e/.%2e/.%2e/.%2e/.%2e/.%2e/api/v1/secrets",
		"/..%2f..%2f..%2f..%2f..%2f..%2fapi/v1/secrets",
		`/..\..\..\..\..\..\api\v1\secrets`,
		"/ok/../..",
	} {
		req, err := http.NewRequest(http.MethodDelete, "http://sandbox"+p, nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if resp, err := httpClient.Do(req); !errors.Is(err, ErrOutsideProxyPath) {
			if err == nil {
				resp.Body.Close()
			}
			t.Errorf("DELETE %s: %v, want ErrOutsideProxyPath", p, err)
		}
	}
	mu.Lock()
	if len(seen) != 0 {
		t.Errorf("the API server saw %d requests, want none", len(seen))
	}
	mu.Unlock()

	req, _ := http.NewRequest(http.MethodGet, "http://sandbox/a/./b/../c/%252e%252e?x=1", nil)
	for _, h := range []string{"Authorization", "Proxy-Authorization", "Impersonate-User", "Impersonate_Group", "impersonate-extra-scopes",
		"X-Remote-User", "X_Remote_Group", "Cookie"} {
		req.Header[h] = []string{"forged"}
	}
	req.Header.Set("X-Request-Id", "kept")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Fatalf("the API server saw %d requests, want 1", len(seen))
	}
	got := seen[0]
	if want := "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/team-a/sandboxclaims/mine/proxy/a/./b/../c/%252e%252e?x=1"; got.RequestURI != want {
		t.Errorf("request URI %s, want %s", got.RequestURI, want)
	}
	for name, values := range got.Header {
		lower := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
		if strings.HasPrefix(lower, "impersonate-") || strings.HasPrefix(lower, "x-remote-") || lower == "cookie" || lower == "proxy-authorization" {
			t.Errorf("header %s: %q sent", name, values)
		}
	}
	if auth := got.Header.Get("Authorization"); auth != "Bearer the-client's" {
		t.Errorf("Authorization %q, want the client's", auth)
	}
	if got.Header.Get("X-Request-Id") != "kept" {
		t.Errorf("X-Request-Id dropped")
	}
}
