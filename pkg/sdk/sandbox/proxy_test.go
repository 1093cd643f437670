// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
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
