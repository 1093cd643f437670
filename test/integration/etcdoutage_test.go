// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/cmd/server"
	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

// TestEtcdOutage stops the server's etcd and starts it again on the same address and data: while
// it is down, reads and writes are answered within a second with 503 and a Retry-After, /readyz
// fails its etcd check and /metrics answers at once; within two seconds of etcd's return the
// server serves again.
func TestEtcdOutage(t *testing.T) {
	t.Parallel()
	etcdDir, clientURL, peerURL := t.TempDir(), freeURL(t), freeURL(t)
	stopEtcd := startTestEtcd(t, etcdDir, clientURL, peerURL)
	s := framework.StartServerWith(t, t.TempDir(), func(o *server.Options) {
		o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = []string{clientURL.String()}
	})
	ctx := testContext(t)
	const ns = "etcd-outage"
	if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, newSandbox(ns, "before"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	httpClient, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	httpClient.Timeout = 10 * time.Second
	sandboxes := s.Config.Host + "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes"
	requests := []struct{ method, url, body string }{
		{http.MethodGet, sandboxes, ""},
		{http.MethodGet, sandboxes + "/before", ""},
		{http.MethodPost, sandboxes, `{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"during"},` +
			`"spec":{"podTemplate":{"spec":{"containers":[{"name":"agent","image":"busybox"}]}}}}`},
		{http.MethodPatch, sandboxes + "/before", `{"metadata":{"labels":{"during":"outage"}}}`},
	}
	do := func(method, url, body string) (*http.Response, string, time.Duration) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if method == http.MethodPatch {
			req.Header.Set("Content-Type", "application/merge-patch+json")
		}
		start := time.Now()
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, string(data), time.Since(start)
	}

	stopEtcd()
	down := time.Now()
	// The server notices at once; a request that came in before it did ends then, with a 5xx.
	for {
		resp, body, took := do(http.MethodGet, sandboxes+"/before", "")
		if resp.StatusCode < 500 || took > time.Second {
			t.Fatalf("GET with etcd down: %d after %s, want a 5xx within 1s: %s", resp.StatusCode, took, body)
		}
		if resp.StatusCode == http.StatusServiceUnavailable {
			break
		}
		if time.Since(down) > time.Second {
			t.Fatalf("still %d %s 1s after etcd stopped, want 503", resp.StatusCode, body)
		}
	}
	t.Logf("first 503 %s after etcd stopped", time.Since(down).Round(time.Millisecond))
	for _, r := range requests {
		resp, body, took := do(r.method, r.url, r.body)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || took > time.Second {
			t.Errorf("%s %s with etcd down: %d (Retry-After %q) after %s, want 503 with a Retry-After within 1s: %s",
				r.method, r.url, resp.StatusCode, resp.Header.Get("Retry-After"), took, body)
		}
	}
	resp, body, _ := do(http.MethodGet, s.Config.Host+"/readyz?verbose", "")
	if resp.StatusCode == http.StatusOK || !strings.Contains(body, "[-]etcd failed") {
		t.Errorf("/readyz with etcd down: %d %s, want a failure of check etcd", resp.StatusCode, body)
	}
	// The metrics are the process's, shared with the servers of the other tests.
	if resp, body, took := do(http.MethodGet, s.Config.Host+"/metrics", ""); resp.StatusCode != http.StatusOK || took > time.Second {
		t.Errorf("/metrics with etcd down: %d after %s, want 200 within 1s: %.200s", resp.StatusCode, took, body)
	}

	startTestEtcd(t, etcdDir, clientURL, peerURL)
	back := time.Now()
	for {
		resp, body, _ := do(http.MethodGet, sandboxes+"/before", "")
		if resp.StatusCode == http.StatusOK {
			break
		}
		if time.Since(back) > 2*time.Second {
			t.Fatalf("still %d %s 2s after etcd was back, want 200", resp.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond) // the pace of the checks, well under the 2 s allowed
	}
	t.Logf("served again %s after etcd was back", time.Since(back).Round(time.Millisecond))
	for _, r := range requests {
		if resp, body, _ := do(r.method, r.url, r.body); resp.StatusCode >= 300 {
			t.Errorf("%s %s after etcd's return: %d %s", r.method, r.url, resp.StatusCode, body)
		}
	}
	if resp, body, _ := do(http.MethodGet, s.Config.Host+"/readyz", ""); resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz after etcd's return: %d %s", resp.StatusCode, body)
	}
	if _, body, _ := do(http.MethodGet, s.Config.Host+"/metrics", ""); !strings.Contains(body, "\napiserver_storage_db_total_size_in_bytes{") {
		t.Error("/metrics after etcd's return has no apiserver_storage_db_total_size_in_bytes")
	}
}

// startTestEtcd runs a single-member etcd with its data in dir, serving clients on clientURL,
// until the test ends or the returned function stops it.
func startTestEtcd(t *testing.T, dir string, clientURL, peerURL url.URL) (stop func()) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "outage"
	cfg.Dir = dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop = sync.OnceFunc(e.Close)
	t.Cleanup(stop)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd failed: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("etcd not ready within 1m")
	}
	return stop
}

// freeURL is an http URL on a loopback port that was free a moment ago.
func freeURL(t *testing.T) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}
