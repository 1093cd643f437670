// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
)

// cluster is the local control plane of hack/local-up.sh, which `make bench` starts.
type cluster struct {
	// plane is the plane's _output/local directory: this tree's, or SANDBOX_BENCH_PLANE's (a plane
	// started from another tree, as hack/bench-compare.sh does for its base commits).
	plane string
	// out is where the results go: _output/bench of this tree, or SANDBOX_BENCH_OUT.
	out string
	// config reaches kube-apiserver as the plane's admin.
	config  *rest.Config
	kube    kubernetes.Interface
	sandbox versioned.Interface
	// ourGet reads a path of sandbox-apiserver directly, as the cluster's admin: the aggregator
	// proxies neither /metrics nor /debug/pprof.
	ourGet func(ctx context.Context, path string) ([]byte, error)
}

// connect reaches the running local control plane, or skips the benchmark when there is none.
func connect(b *testing.B) *cluster {
	b.Helper()
	root, err := repoRoot()
	if err != nil {
		b.Fatal(err)
	}
	plane := cmp.Or(os.Getenv("SANDBOX_BENCH_PLANE"), filepath.Join(root, "_output/local"))
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(plane, "kubeconfig"))
	if err != nil {
		b.Skipf("no local control plane (run hack/local-up.sh start or make bench): %v", err)
	}
	cfg.QPS, cfg.Burst = 2000, 4000
	cfg.Timeout = 30 * time.Second
	// Unset, the generated clients speak protobuf to our kinds and JSON to the rest, as the
	// controllers do; hack/bench-compare.sh sets JSON, which commits before protobuf also serve.
	if ct := os.Getenv("SANDBOX_BENCH_CONTENT_TYPE"); ct != "" {
		cfg.ContentType, cfg.AcceptContentTypes = ct, ct
	}
	c := &cluster{plane: plane, out: cmp.Or(os.Getenv("SANDBOX_BENCH_OUT"), filepath.Join(root, "_output/bench")),
		config: cfg, kube: kubernetes.NewForConfigOrDie(cfg), sandbox: versioned.NewForConfigOrDie(cfg)}
	if _, err := c.kube.Discovery().ServerVersion(); err != nil {
		b.Skipf("local control plane does not answer: %v", err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(plane, "certs/admin.crt"), filepath.Join(plane, "certs/admin.key"))
	if err != nil {
		b.Fatal(err)
	}
	port := os.Getenv("SANDBOX_APISERVER_PORT")
	if port == "" {
		port = "8443"
	}
	// The server's certificate is checked by the aggregator; here only the figures matter.
	// No overall timeout: a CPU profile takes as long as it was asked to; callers bound ctx.
	httpClient := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}, //nolint:gosec // loopback scrape
	}}
	c.ourGet = func(ctx context.Context, path string) ([]byte, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+port+path, nil)
		resp, err := httpClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
		}
		return body, err
	}
	c.deleteLeftovers(b)
	return c
}

// outFile is the path of a result file named name.
func (c *cluster) outFile(name string) string {
	return filepath.Join(c.out, name)
}

// benchPrefix starts the name of every namespace a benchmark makes.
const benchPrefix = "bench-"

// deleteLeftovers deletes the namespaces an interrupted earlier run left behind: their pods would
// fill the nodes and their cleanup would be measured.
func (c *cluster) deleteLeftovers(b *testing.B) {
	b.Helper()
	list, err := c.kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, ns := range list.Items {
		if strings.HasPrefix(ns.Name, benchPrefix) {
			b.Logf("deleting namespace %s left by an earlier run", ns.Name)
			c.deleteNamespace(b, ns.Name)
		}
	}
}

// namespace makes a fresh namespace for one benchmark and deletes it at the end.
func (c *cluster) namespace(b *testing.B, prefix string) string {
	b.Helper()
	ns := benchPrefix + prefix + "-" + rand.String(5)
	if _, err := c.kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.deleteNamespace(b, ns) })
	return ns
}

// deleteNamespace deletes ns and waits until it is gone, so that its cleanup (hundreds of
// sandboxes and pods deleted) is never measured as part of the next run.
func (c *cluster) deleteNamespace(b *testing.B, ns string) {
	b.Helper()
	ctx := context.Background()
	err := c.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		b.Logf("deleting namespace %s: %v", ns, err)
		return
	}
	start := time.Now()
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		b.Logf("namespace %s not gone after %s: %v", ns, time.Since(start).Round(time.Second), err)
		return
	}
	b.Logf("namespace %s deleted in %s", ns, time.Since(start).Round(time.Millisecond))
}

// writeCounts is a snapshot of mutating requests served, by "resource[/subresource] VERB".
type writeCounts map[string]float64

// mainWrites counts the mutating requests kube-apiserver has served.
func (c *cluster) mainWrites(ctx context.Context) (writeCounts, error) {
	raw, err := c.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseWrites(string(raw)), nil
}

// ourWrites counts the mutating requests sandbox-apiserver has served.
func (c *cluster) ourWrites(ctx context.Context) (writeCounts, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := c.ourGet(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	return parseWrites(string(raw)), nil
}

// bothWrites snapshots the writes both APIs have served, failing the benchmark when either does
// not answer.
func (c *cluster) bothWrites(ctx context.Context, b *testing.B) (main, ours writeCounts) {
	b.Helper()
	main, err := c.mainWrites(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ours, err = c.ourWrites(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return main, ours
}

// waitSettled waits until neither API has served a workload write (see workload) for a second,
// for at most a minute.
func (c *cluster) waitSettled(ctx context.Context, b *testing.B) {
	const quietFor, poll = time.Second, 250 * time.Millisecond
	last, since := -1.0, time.Now()
	err := wait.PollUntilContextTimeout(ctx, poll, time.Minute, true, func(ctx context.Context) (bool, error) {
		main, err := c.mainWrites(ctx)
		if err != nil {
			return false, err
		}
		ours, err := c.ourWrites(ctx)
		if err != nil {
			return false, err
		}
		total := main.workload().sum() + ours.workload().sum()
		if total != last {
			last, since = total, time.Now()
			return false, nil
		}
		return time.Since(since) >= quietFor, nil
	})
	if err != nil {
		b.Logf("plane not settled: %v", err)
	}
}

// parseWrites sums apiserver_request_total over the mutating verbs, per resource and verb.
func parseWrites(metrics string) writeCounts {
	out := writeCounts{}
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, "apiserver_request_total{"), "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = strings.Trim(v, `"`)
		}
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION":
		default:
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		key := l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key+" "+l["verb"]] += n
	}
	return out
}

// minus is the writes served since before.
func (w writeCounts) minus(before writeCounts) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// sum adds the counts whose resource is one of resources (all when empty).
func (w writeCounts) sum(resources ...string) float64 {
	total := 0.0
	for k, v := range w {
		res, _, _ := strings.Cut(k, " ")
		res, _, _ = strings.Cut(res, "/")
		if len(resources) == 0 {
			total += v
			continue
		}
		for _, r := range resources {
			if r == res {
				total += v
			}
		}
	}
	return total
}

// workload returns the writes of the object kinds a benchmark causes, leaving out the cluster's
// own background (leases, node status, kube-controller-manager's bookkeeping).
func (w writeCounts) workload() writeCounts {
	out := writeCounts{}
	for k, v := range w {
		res, _, _ := strings.Cut(k, " ")
		res, _, _ = strings.Cut(res, "/")
		switch res {
		case "pods", "services", "persistentvolumeclaims", "networkpolicies", "events",
			"sandboxes", "sandboxclaims", "sandboxwarmpools", "sandboxtemplates":
			out[k] = v
		}
	}
	return out
}

func (w writeCounts) String() string {
	var parts []string
	for k, v := range w {
		parts = append(parts, fmt.Sprintf("%s=%.0f", k, v))
	}
	return strings.Join(parts, " ")
}

// onKwok places a pod on the plane's kwok nodes, which carry a taint that keeps every other pod
// off them: the cluster benchmarks run hundreds of pods, more than the real node holds, and
// measure the control plane, not the container runtime.
func onKwok(spec corev1.PodSpec) corev1.PodSpec {
	spec.NodeSelector = map[string]string{"type": "kwok"}
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: kwokTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	return spec
}

// kwokTaintKey is the key of the taint hack/local-up.sh puts on the kwok nodes.
const kwokTaintKey = "sandbox-apiserver.dev/kwok"

// kwokAddress is the address kwok's Nodes report, and with it their host-network pods: the one
// host-network address sandbox-apiserver reaches on the plane (--proxy-host-network-cidrs), on a
// an interface of its own. It is loopback on a plane run without root, where nothing is
// reached.
func (c *cluster) kwokAddress(b *testing.B) string {
	b.Helper()
	node, err := c.kube.CoreV1().Nodes().Get(context.Background(), "kwok-node-0", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			if ip := net.ParseIP(a.Address); ip == nil || ip.IsLoopback() {
				b.Skipf("kwok's Nodes report %s (a plane run without root): sandbox-apiserver reaches no host-network pod there", a.Address)
			}
			return a.Address
		}
	}
	b.Fatal("kwok-node-0 reports no InternalIP")
	return ""
}

// kwokServer serves handler at a free port of kwok's Nodes' address, for a host-network sandbox
// on a kwok node in ns: ns is labelled privileged, since Pod Security's baseline level, the
// plane's default, refuses host-network pods.
func (c *cluster) kwokServer(b *testing.B, ns string, handler http.Handler) (*httptest.Server, int) {
	b.Helper()
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`)
	if _, err := c.kube.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		b.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(c.kwokAddress(b), "0"))
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.Listener = l
	srv.Start()
	return srv, l.Addr().(*net.TCPAddr).Port
}
