// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// ProxyPath is one way of reaching the same HTTP server.
type ProxyPath struct {
	// Sequential: one request at a time.
	Requests int     `json:"sequentialRequests"`
	P50Ms    float64 `json:"p50Ms"`
	P99Ms    float64 `json:"p99Ms"`
	MaxMs    float64 `json:"maxMs"`
	// Concurrent: Clients clients, ConcurrentRequests requests in all.
	Clients            int     `json:"clients"`
	ConcurrentRequests int     `json:"concurrentRequests"`
	RequestsPerSecond  float64 `json:"requestsPerSecond"`
	Errors             int     `json:"errors"`
}

// ProxyResult is the content of _output/bench/proxy.json.
type ProxyResult struct {
	Machine Machine `json:"machine"`
	// Direct is the test's HTTP server reached at its address; SandboxAPIServer through
	// sandboxes/proxy on sandbox-apiserver's own port (client certificate, no aggregator);
	// KubeAPIServer through kube-apiserver and the aggregator, as users reach it.
	Direct           ProxyPath `json:"direct"`
	SandboxAPIServer ProxyPath `json:"sandboxAPIServer"`
	KubeAPIServer    ProxyPath `json:"kubeAPIServer"`
	// Added latency of the whole path over the direct one.
	AddedP50Ms float64 `json:"addedP50Ms"`
	AddedP99Ms float64 `json:"addedP99Ms"`
	LoadAvg    string  `json:"loadAverageAtStart"`
	Note       string  `json:"note"`
}

const (
	proxySequential = 300
	proxyClients    = 8
	proxyConcurrent = 2000
)

// BenchmarkProxy measures what sandboxes/proxy adds: latency one request at a time and requests
// per second from concurrent clients, against the same local HTTP server reached directly, through
// sandbox-apiserver alone and through kube-apiserver. The sandbox's pod is hostNetwork on a kwok
// node, so kwok reports its Nodes' address for it, where the server listens.
func BenchmarkProxy(b *testing.B) {
	c := connect(b)
	ns := c.namespace(b, "proxy")
	backend, port := c.kwokServer(b, ns, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "ok")
	}))
	defer backend.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sb := &agentsv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "proxied"},
		Spec: agentsv1beta1.SandboxSpec{PodTemplate: agentsv1beta1.PodTemplate{Spec: onKwok(corev1.PodSpec{
			HostNetwork: true,
			Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/example/agent:latest",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}},
		})}},
	}
	if _, err := c.sandbox.AgentsV1beta1().Sandboxes(ns).Create(ctx, sb, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := c.sandbox.AgentsV1beta1().Sandboxes(ns).Get(ctx, sb.Name, metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(got.Status.Conditions, "Ready"), nil
	})
	if err != nil {
		b.Fatalf("sandbox not Ready: %v", err)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.plane, "kubeconfig"))
	if err != nil {
		b.Fatal(err)
	}
	kubeTransport, err := restclient.TransportFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(c.plane, "certs/admin.crt"), filepath.Join(c.plane, "certs/admin.key"))
	if err != nil {
		b.Fatal(err)
	}
	ourPort := os.Getenv("SANDBOX_APISERVER_PORT")
	if ourPort == "" {
		ourPort = "8443"
	}
	path := "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes/" + sb.Name + "/proxy/"
	paths := []struct {
		out       *ProxyPath
		url       string
		transport http.RoundTripper
	}{
		{nil, backend.URL + "/", &http.Transport{MaxIdleConnsPerHost: proxyClients}},
		{nil, "https://127.0.0.1:" + ourPort + path, &http.Transport{MaxIdleConnsPerHost: proxyClients,
			TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}}}, //nolint:gosec // loopback benchmark
		{nil, cfg.Host + path, kubeTransport},
	}
	res := ProxyResult{Machine: machine(), LoadAvg: loadAverage(),
		Note: "one machine runs kube-apiserver, etcd, kwok, sandbox-apiserver, the HTTP server and the clients; " +
			"the proxy finds the pod in an informer cache (no request to the cluster per proxied request); " +
			"delegated authorization is cached by sandbox-apiserver, so repeated requests of one user cost no SubjectAccessReview"}
	paths[0].out, paths[1].out, paths[2].out = &res.Direct, &res.SandboxAPIServer, &res.KubeAPIServer
	for _, p := range paths {
		*p.out = measureProxyPath(ctx, b, &http.Client{Transport: p.transport, Timeout: 10 * time.Second}, p.url)
	}
	res.AddedP50Ms = res.KubeAPIServer.P50Ms - res.Direct.P50Ms
	res.AddedP99Ms = res.KubeAPIServer.P99Ms - res.Direct.P99Ms

	fmt.Printf("\nsandboxes/proxy on %s (%d CPUs), load %s\n", res.Machine.CPUModel, res.Machine.NumCPU, res.LoadAvg)
	fmt.Printf("%-20s %9s %9s %9s %12s %7s\n", "path", "p50 ms", "p99 ms", "max ms", "req/s", "errors")
	for _, r := range []struct {
		name string
		p    ProxyPath
	}{{"direct", res.Direct}, {"sandbox-apiserver", res.SandboxAPIServer}, {"kube-apiserver", res.KubeAPIServer}} {
		fmt.Printf("%-20s %9.2f %9.2f %9.2f %12.1f %7d\n", r.name, r.p.P50Ms, r.p.P99Ms, r.p.MaxMs, r.p.RequestsPerSecond, r.p.Errors)
	}
	fmt.Printf("added by the proxy through kube-apiserver: p50 %.2f ms, p99 %.2f ms\n", res.AddedP50Ms, res.AddedP99Ms)
	if err := writeJSON(c.outFile("proxy.json"), res); err != nil {
		b.Fatal(err)
	}
}

// measureProxyPath sends proxySequential GETs one at a time, then proxyConcurrent from
// proxyClients clients, to url; a request that fails or does not answer 200 "ok" is an error.
func measureProxyPath(ctx context.Context, b *testing.B, client *http.Client, url string) ProxyPath {
	get := func() error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			return fmt.Errorf("%d %q", resp.StatusCode, body)
		}
		return nil
	}
	// Warm the connections and caches; a failure here means the path does not work at all.
	for range proxyClients {
		if err := get(); err != nil {
			b.Fatalf("GET %s: %v", url, err)
		}
	}
	out := ProxyPath{Requests: proxySequential, Clients: proxyClients, ConcurrentRequests: proxyConcurrent}
	latencies := make([]time.Duration, 0, proxySequential)
	for range proxySequential {
		start := time.Now()
		if err := get(); err != nil {
			out.Errors++
			continue
		}
		latencies = append(latencies, time.Since(start))
	}
	slices.Sort(latencies)
	out.P50Ms, out.P99Ms = ms(percentile(latencies, 50)), ms(percentile(latencies, 99))
	if len(latencies) > 0 {
		out.MaxMs = ms(latencies[len(latencies)-1])
	}

	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range proxyClients {
		wg.Go(func() {
			for range proxyConcurrent / proxyClients {
				if err := get(); err != nil {
					mu.Lock()
					out.Errors++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	out.RequestsPerSecond = float64(proxyConcurrent) / time.Since(start).Seconds()
	return out
}
