// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/e2b"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// e2bBenchSDK is the E2B JS SDK version the benchmark drives (test/e2e/e2b/package-lock.json).
const e2bBenchSDK = "e2b-2.51.0"

// E2BSeries is one series of the E2B benchmark, in milliseconds.
type E2BSeries struct {
	Runs  int     `json:"runs"`
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

// E2BResult is the content of _output/bench/e2b.json.
type E2BResult struct {
	Machine Machine `json:"machine"`
	Node    string  `json:"node"`
	SDK     string  `json:"sdk"`
	// From before Sandbox.create to the first stdout chunk of commands.run('echo hi'), warm (a
	// pool member for every create), one sandbox at a time; and its two parts.
	JSFirstOutput E2BSeries `json:"jsCreateToFirstOutput"`
	JSCreate      E2BSeries `json:"jsCreate"`
	JSRun         E2BSeries `json:"jsRunToFirstOutput"`
	// The same through the Go SDK (Claim, then Exec of echo), from the same pool.
	GoFirstOutput FirstCommandRun `json:"goSDK"`
	// One command's round trip on a running sandbox: commands.run('echo hi') through the E2B
	// endpoint, and a pods/exec of the same command line (/bin/bash -l -c 'echo hi') on the same
	// pod, straight through kube-apiserver; the ratio of their medians.
	JSRoundTrip    E2BSeries `json:"jsRoundTrip"`
	DirectExec     E2BSeries `json:"directExecRoundTrip"`
	RoundTripRatio float64   `json:"roundTripMedianRatio"`
	Note           string    `json:"note"`
}

// BenchmarkE2B measures the E2B endpoint through E2B's own JS SDK, beside the Go SDK and a direct
// pods/exec, on the plane's real node: warm create to first output (SANDBOX_BENCH_E2B_RUNS,
// default 25, from a pool of as many Ready members) and a command's round trip.
func BenchmarkE2B(b *testing.B) {
	runs := int(envFloats(b, "SANDBOX_BENCH_E2B_RUNS", []float64{25})[0])
	c := connect(b)
	node := c.realNode(b)
	ctx := context.Background()
	endpoint := "http://127.0.0.1:" + cmp.Or(os.Getenv("E2B_PORT"), "3049")
	dir := c.installJSSDK(b)

	ns := c.namespace(b, "e2b")
	c.firstCommandTemplate(b, ns)
	key := c.e2bKey(b, ns, endpoint)
	c.readyPool(b, ns, "pool", runs)
	res := E2BResult{Machine: machine(), Node: node, SDK: e2bBenchSDK,
		Note: "one sandbox at a time, warm; E2B's JS SDK in Node against the plane's E2B endpoint over plain HTTP on loopback; " +
			"the Go SDK and the direct exec through kube-apiserver as the plane's admin; real kubelet, containerd and runc; shared machine"}

	node1 := func(args ...string) map[string][]float64 {
		cmd := exec.Command("node", append([]string{"bench.mjs", e2bBenchSDK}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "E2B_API_URL="+endpoint, "E2B_SANDBOX_URL="+endpoint, "E2B_API_KEY="+key)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("node bench.mjs %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		var figures map[string][]float64
		if err := json.Unmarshal(out, &figures); err != nil {
			b.Fatalf("node bench.mjs printed %q: %v", out, err)
		}
		return figures
	}
	c.waitSettled(ctx, b)
	js := node1("first-command", "pool", fmt.Sprint(runs))
	res.JSFirstOutput, res.JSCreate, res.JSRun = series(js["total"]), series(js["create"]), series(js["firstOutput"])

	client, err := sandbox.NewClient(c.config)
	if err != nil {
		b.Fatal(err)
	}
	c.readyPool(b, ns, "pool", runs)
	c.waitSettled(ctx, b)
	res.GoFirstOutput = c.firstCommandRuns(b, client, ns, sandbox.FromPool("pool"), "warm", runs)

	// Round trips on one sandbox made through the endpoint.
	id := e2bCreate(b, endpoint, key, "pool")
	pod, container := c.e2bPod(b, ns, id)
	direct := c.directExecs(b, ns, pod, container, runs*2)
	res.JSRoundTrip = series(node1("round-trip", id, fmt.Sprint(runs*2))["roundTrip"])
	res.DirectExec = series(direct)
	res.RoundTripRatio = round2(res.JSRoundTrip.P50Ms / res.DirectExec.P50Ms)

	fmt.Printf("\nE2B endpoint on the real node %s, %s (%d CPUs), one sandbox at a time, warm\n", node, res.Machine.CPUModel, res.Machine.NumCPU)
	fmt.Printf("%-44s %5s %9s %9s %9s %9s\n", "series", "runs", "p50 ms", "p90 ms", "p99 ms", "max ms")
	for _, row := range []struct {
		name string
		s    E2BSeries
	}{
		{"JS SDK: create to first output", res.JSFirstOutput}, {"  JS: Sandbox.create", res.JSCreate},
		{"  JS: commands.run to first output", res.JSRun},
		{"Go SDK: Claim to first output", E2BSeries{res.GoFirstOutput.Runs, res.GoFirstOutput.P50Ms, res.GoFirstOutput.P90Ms, res.GoFirstOutput.P99Ms, res.GoFirstOutput.MaxMs}},
		{"JS SDK: commands.run round trip", res.JSRoundTrip}, {"direct pods/exec round trip", res.DirectExec},
	} {
		fmt.Printf("%-44s %5d %9.1f %9.1f %9.1f %9.1f\n", row.name, row.s.Runs, row.s.P50Ms, row.s.P90Ms, row.s.P99Ms, row.s.MaxMs)
	}
	fmt.Printf("round trip, JS SDK over direct exec (medians): %.2f\n", res.RoundTripRatio)
	if err := writeJSON(c.outFile("e2b.json"), res); err != nil {
		b.Fatal(err)
	}
}

// series summarizes milliseconds.
func series(v []float64) E2BSeries {
	d := make([]time.Duration, len(v))
	for i, ms := range v {
		d[i] = time.Duration(ms * float64(time.Millisecond))
	}
	slices.Sort(d)
	if len(d) == 0 {
		return E2BSeries{}
	}
	return E2BSeries{Runs: len(d), P50Ms: ms(percentile(d, 50)), P90Ms: ms(percentile(d, 90)), P99Ms: ms(percentile(d, 99)), MaxMs: ms(d[len(d)-1])}
}

// installJSSDK installs the pinned SDKs with bench.mjs into the results' directory (npm ci from
// test/e2e/e2b's lockfile) and returns where.
func (c *cluster) installJSSDK(b *testing.B) string {
	b.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		b.Skipf("node is needed to run E2B's JS SDK: %v", err)
	}
	root, err := repoRoot()
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(c.out, "e2b-js")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json", "bench.mjs"} {
		data, err := os.ReadFile(filepath.Join(root, "test/e2e/e2b", f))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), data, 0o644)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	lock, _ := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	sum := sha256.Sum256(lock)
	stamp := filepath.Join(dir, "node_modules/.lock-sha256")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == hex.EncodeToString(sum[:]) {
		return dir
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("npm ci: %v\n%s", err, out)
	}
	if err := os.WriteFile(stamp, []byte(hex.EncodeToString(sum[:])), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// e2bKey binds a user to sandbox-apiserver:e2b-user in ns, makes its API key and waits until the
// endpoint accepts it.
func (c *cluster) e2bKey(b *testing.B, ns, endpoint string) string {
	b.Helper()
	ctx := context.Background()
	name := "e2b-bench"
	_, err := c.kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "sandbox-apiserver:e2b-user"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}},
	}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	key, id, err := e2b.CreateAPIKey(ctx, c.kube, "sandbox-system", &user.DefaultInfo{Name: name}, ns)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = c.kube.CoreV1().Secrets("sandbox-system").Delete(context.Background(), "e2b-key-"+id, metav1.DeleteOptions{})
	})
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		code, _ := e2bRequest(endpoint, key, http.MethodGet, "/v2/sandboxes", "")
		return code == http.StatusOK, nil
	}); err != nil {
		b.Fatalf("the E2B endpoint at %s does not accept the new key: %v", endpoint, err)
	}
	return key
}

// readyPool makes (or keeps) the warm pool name of size members of the template "shell" and
// waits until all are Ready.
func (c *cluster) readyPool(b *testing.B, ns, name string, size int) {
	b.Helper()
	ctx := context.Background()
	pool := &extensionsv1beta1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       extensionsv1beta1.SandboxWarmPoolSpec{Replicas: ptr.To(int32(size)), TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: "shell"}},
	}
	if _, err := c.sandbox.ExtensionsV1beta1().SandboxWarmPools(ns).Create(ctx, pool, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		b.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.sandbox.ExtensionsV1beta1().SandboxWarmPools(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.ReadyReplicas == int32(size), nil
	}); err != nil {
		b.Fatalf("pool of %d not Ready: %v", size, err)
	}
}

// e2bRequest sends an E2B API request and answers its status and body.
func e2bRequest(endpoint, key, method, path, body string) (int, string) {
	req, err := http.NewRequest(method, endpoint+path, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// e2bCreate creates a sandbox of template through the endpoint and returns its ID.
func e2bCreate(b *testing.B, endpoint, key, template string) string {
	b.Helper()
	code, body := e2bRequest(endpoint, key, http.MethodPost, "/v2/sandboxes", fmt.Sprintf(`{"templateID": %q, "timeout": 600}`, template))
	var created struct{ SandboxID string }
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &created) != nil {
		b.Fatalf("creating a sandbox through the E2B endpoint: %d %s", code, body)
	}
	return created.SandboxID
}

// e2bPod is the pod and container of the E2B sandbox id (a claim of ns).
func (c *cluster) e2bPod(b *testing.B, ns, id string) (pod, container string) {
	b.Helper()
	ctx := context.Background()
	claim, err := c.sandbox.ExtensionsV1beta1().SandboxClaims(ns).Get(ctx, id, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	sb, err := c.sandbox.AgentsV1beta1().Sandboxes(ns).Get(ctx, claim.Status.SandboxStatus.Name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pod = sb.Name
	if n := sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation]; n != "" {
		pod = n
	}
	return pod, sb.Spec.PodTemplate.Spec.Containers[0].Name
}

// directExecs runs /bin/bash -l -c 'echo hi' n times in the pod through kube-apiserver's
// pods/exec, as the plane's admin, and answers each round trip in milliseconds.
func (c *cluster) directExecs(b *testing.B, ns, pod, container string, n int) []float64 {
	b.Helper()
	var out []float64
	for range n + 1 {
		req := c.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: container, Command: []string{"/bin/bash", "-l", "-c", "echo hi"}, Stdout: true, Stderr: true}, scheme.ParameterCodec)
		executor, err := remotecommand.NewWebSocketExecutor(c.config, "GET", req.URL().String())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		var stdout, stderr bytes.Buffer
		if err := executor.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil || stdout.String() != "hi\n" {
			b.Fatalf("exec in %s/%s: %v %q %q", ns, pod, err, stdout.String(), stderr.String())
		}
		out = append(out, float64(time.Since(start).Microseconds())/1000)
	}
	return out[1:] // the first warms the connection up, as the JS side's warm-up command does
}
