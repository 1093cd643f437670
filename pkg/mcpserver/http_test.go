// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/client-go/rest"
)

// fakeCluster answers what the HTTP layer asks of kube-apiserver: SelfSubjectReviews for the
// tokens it knows, and claim and sandbox lists; it records the credentials each request carried.
type fakeCluster struct {
	users map[string]string // token -> username

	mu   sync.Mutex
	seen []string // "METHOD PATH AUTHORIZATION"
}

func (f *fakeCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seen = append(f.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	user, ok := f.users[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`)
		return
	}
	switch {
	case r.URL.Path == "/apis/authentication.k8s.io/v1/selfsubjectreviews":
		fmt.Fprintf(w, `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","status":{"userInfo":{"username":%q,"uid":"uid-%s"}}}`, user, user)
	case strings.HasSuffix(r.URL.Path, "/sandboxclaims"):
		fmt.Fprint(w, `{"kind":"SandboxClaimList","apiVersion":"extensions.agents.x-k8s.io/v1beta1","items":[]}`)
	default:
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"%s may not"}`, user)
	}
}

func (f *fakeCluster) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

type bearer string

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(req)
}

func post(t *testing.T, url, token, session string) int {
	t.Helper()
	return request(t, url, token, session, "").StatusCode
}

// request posts a tools/list with the token, session and Origin given (none when empty).
func request(t *testing.T, url, token, session, origin string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestHTTPAuth: requests without a token the cluster accepts get 401; each call acts with the
// caller's token only, never the server's own credentials; a session stays its user's; a
// ServiceAccount works in its own namespace.
func TestHTTPAuth(t *testing.T) {
	cluster := &fakeCluster{users: map[string]string{"alice-token": "alice", "bob-token": "bob", "sa-token": "system:serviceaccount:team-a:agent"}}
	api := httptest.NewServer(cluster)
	defer api.Close()
	base := &rest.Config{Host: api.URL, BearerToken: "the-servers-own-token", Username: "server", Password: "secret"}
	mcpServer := httptest.NewServer(NewHTTPHandler(base, DefaultOptions(), HTTPOptions{TokenReviewTTL: time.Minute}))
	defer mcpServer.Close()

	if code := post(t, mcpServer.URL, "", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code := post(t, mcpServer.URL, "made-up", ""); code != http.StatusUnauthorized {
		t.Errorf("a token the cluster refuses: %d, want 401", code)
	}

	ctx := context.Background()
	connect := func(token string) *mcp.ClientSession {
		transport := &mcp.StreamableClientTransport{Endpoint: mcpServer.URL, HTTPClient: &http.Client{Transport: bearer(token)}, DisableStandaloneSSE: true}
		session, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, transport, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { session.Close() })
		return session
	}
	listNamespace := func(session *mcp.ClientSession) string {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "list_sandboxes", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("list_sandboxes: %v %+v", err, res)
		}
		var out listSandboxesResult
		data, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(data, &out)
		if !strings.Contains(out.Note, "may not list sandboxes") {
			t.Errorf("list_sandboxes without the right to list sandboxes: note %q", out.Note)
		}
		return out.Namespace
	}

	alice := connect("alice-token")
	if ns := listNamespace(alice); ns != "default" {
		t.Errorf("alice's namespace %q, want the server's default", ns)
	}
	if code := post(t, mcpServer.URL, "bob-token", alice.ID()); code != http.StatusForbidden {
		t.Errorf("bob's token on alice's session: %d, want 403", code)
	}
	if ns := listNamespace(connect("sa-token")); ns != "team-a" {
		t.Errorf("the ServiceAccount's namespace %q, want team-a", ns)
	}

	var reviews, aliceLists int
	for _, r := range cluster.requests() {
		if strings.HasPrefix(r, "GET /apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims Bearer alice-token") {
			aliceLists++
		}
		if strings.Contains(r, "the-servers-own-token") || strings.Contains(r, "Basic") {
			t.Errorf("the server used its own credentials: %s", r)
		}
		if strings.Contains(r, "/sandboxclaims") && !strings.HasSuffix(r, "Bearer alice-token") && !strings.HasSuffix(r, "Bearer sa-token") {
			t.Errorf("a call was made without the caller's token: %s", r)
		}
		if strings.Contains(r, "selfsubjectreviews") && strings.HasSuffix(r, "alice-token") {
			reviews++
		}
	}
	if aliceLists != 1 {
		t.Errorf("alice's list_sandboxes listed claims %d times with her token, want once", aliceLists)
	}
	// Several requests of one session, one review while the answer is fresh.
	if reviews != 1 {
		t.Errorf("alice's token was reviewed %d times, want once", reviews)
	}
}

// TestHTTPBounds: a 401 says how to authenticate; a refused token is remembered; a page of
// another origin is refused; a user's sessions are bounded; an unreachable cluster is a 503 that
// names nothing of it.
func TestHTTPBounds(t *testing.T) {
	cluster := &fakeCluster{users: map[string]string{"alice-token": "alice"}}
	api := httptest.NewServer(cluster)
	defer api.Close()
	httpOpts := DefaultHTTPOptions()
	httpOpts.MaxSessionsPerUser = 2
	mcpServer := httptest.NewServer(NewHTTPHandler(&rest.Config{Host: api.URL}, DefaultOptions(), httpOpts))
	defer mcpServer.Close()

	do := func(token, origin string) *http.Response { return request(t, mcpServer.URL, token, "", origin) }
	for _, token := range []string{"", "made-up"} {
		resp := do(token, "")
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("token %q: %d, WWW-Authenticate %q; want 401 with Bearer", token, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	do("made-up", "")
	refusedReviews := 0
	for _, r := range cluster.requests() {
		if strings.Contains(r, "selfsubjectreviews") && strings.HasSuffix(r, "made-up") {
			refusedReviews++
		}
	}
	if refusedReviews != 1 {
		t.Errorf("a refused token was reviewed %d times in a row, want once", refusedReviews)
	}
	if resp := do("alice-token", "https://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a request from another origin: %d, want 403", resp.StatusCode)
	}
	if resp := do("alice-token", mcpServer.URL); resp.StatusCode == http.StatusForbidden {
		t.Errorf("a request from the server's own origin: 403")
	}

	ctx := context.Background()
	connect := func() (*mcp.ClientSession, error) {
		transport := &mcp.StreamableClientTransport{Endpoint: mcpServer.URL, HTTPClient: &http.Client{Transport: bearer("alice-token")}, DisableStandaloneSSE: true, MaxRetries: -1}
		return mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, transport, nil)
	}
	first, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(); err != nil {
		t.Fatal(err)
	}
	if _, err := connect(); err == nil || !strings.Contains(err.Error(), "429") && !strings.Contains(err.Error(), "Too Many") {
		t.Errorf("a third session of one user: %v; want refused with 429", err)
	}
	first.Close()
	if s, err := connect(); err != nil {
		t.Errorf("a session after one was closed: %v", err)
	} else {
		s.Close()
	}

	// The cluster gone: 503 with Retry-After, and not its address.
	gone := httptest.NewServer(http.NotFoundHandler())
	address := gone.Listener.Addr().String()
	gone.Close()
	down := httptest.NewServer(NewHTTPHandler(&rest.Config{Host: "http://" + address}, DefaultOptions(), DefaultHTTPOptions()))
	defer down.Close()
	req, _ := http.NewRequest(http.MethodPost, down.URL, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer alice-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || strings.Contains(string(body), address) {
		t.Errorf("an unreachable cluster: %d %q (Retry-After %q); want 503 with Retry-After, without %s", resp.StatusCode, body, resp.Header.Get("Retry-After"), address)
	}
}
