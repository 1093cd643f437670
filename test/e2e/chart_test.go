// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/plane"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// The chart's tests run only on a plane started in the chart mode (make test-e2e-chart:
// SANDBOX_APISERVER_MODE=chart, where TestMain starts the plane with the server installed by
// helm on the real node); in the default run they skip.

// chartSelector selects the server's pods; chartEtcdSelector the bundled etcd's.
const (
	chartSelector     = "app.kubernetes.io/name=sandbox-apiserver"
	chartEtcdSelector = "app.kubernetes.io/name=sandbox-etcd"
)

// chartFigures are the figures the chart's tests measure, written to _output/e2e/chart.json.
type chartFigures struct {
	InstallToExamplesReadySeconds float64           `json:"install_to_examples_ready_seconds,omitempty"`
	Load                          []chartLoadFigure `json:"load,omitempty"`
	LeaderTakeoverSeconds         float64           `json:"leader_takeover_seconds,omitempty"`
	EtcdMemberLossLongestGap      float64           `json:"etcd_member_loss_longest_gap_seconds,omitempty"`
}

// chartLoadFigure is what clients saw while the release changed under them.
type chartLoadFigure struct {
	Phase            string  `json:"phase"`
	Claims           int     `json:"claims"`
	Seconds          float64 `json:"seconds"`
	ClaimsPerSecond  float64 `json:"claims_per_second"`
	LongestGapSecond float64 `json:"longest_gap_seconds"`
	LongestGapWhat   string  `json:"longest_gap_what"`
}

// chartAPIServices are the chart's APIServices.
var chartAPIServices = []string{"v1beta1.agents.x-k8s.io", "v1alpha1.agents.x-k8s.io",
	"v1beta1.extensions.agents.x-k8s.io", "v1alpha1.extensions.agents.x-k8s.io"}

// requireChartPlane skips t unless the plane runs in the chart mode.
func requireChartPlane(t *testing.T) plane.Config {
	t.Helper()
	cfg, err := plane.ConfigFromEnv(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != plane.ModeChart {
		t.Skip("the chart's install is tested on a plane in the chart mode: make test-e2e-chart")
	}
	requireRealNode(t)
	if !cfg.ChartInstalled() {
		t.Fatal("the running plane has no chart install (a plane in the host mode?): make down, then make test-e2e-chart")
	}
	return cfg
}

// TestChart checks the install make run-chart makes, as an operator and its tenants meet it, in
// one sequence: each step leaves the install as the next expects it.
func TestChart(t *testing.T) {
	cfg := requireChartPlane(t)
	in := &plane.Plane{Config: cfg, Log: t.Logf}
	var figures chartFigures
	defer writeChartFigures(t, &figures)

	t.Run("examples", func(t *testing.T) {
		ns := newRealNamespace(t)
		kubectl(t, "apply", "-n", ns, "-f", examplesDir)
		expectExamplesReady(t, ns, loadExamples(t))
		if started, err := in.Config.ChartInstallStarted(); err == nil && planeStartedHere {
			figures.InstallToExamplesReadySeconds = time.Since(started).Seconds()
			t.Logf("from helm install to every example Ready: %.1fs", figures.InstallToExamplesReadySeconds)
		}
	})
	t.Run("tenants", testChartTenants)
	t.Run("metrics", testChartMetrics)
	t.Run("upgrade and rollback under load", func(t *testing.T) {
		figures.Load = testChartUpgradeRollback(t, in)
	})
	t.Run("controller failover", func(t *testing.T) {
		figures.LeaderTakeoverSeconds = testChartLeaderFailover(t)
	})
	t.Run("etcd member failover", func(t *testing.T) {
		figures.EtcdMemberLossLongestGap = testChartEtcdFailover(t)
	})
	t.Run("the server's rights", func(t *testing.T) { expectNoForbiddenInServerLogs(t) })
	t.Run("uninstall", func(t *testing.T) { testChartUninstall(t, in) })
}

func writeChartFigures(t *testing.T, figures *chartFigures) {
	data, err := json.MarshalIndent(figures, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("chart figures (a shared machine: upper bounds):\n%s", data)
	dir := filepath.Join(repoRoot, "_output/e2e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chart.json"), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testChartTenants: a claim-only tenant bound to the chart's ClusterRole
// sandbox-apiserver:e2b-user claims, runs commands and deletes its claim, and reaches nothing
// else; an editor (the built-in edit role, which the chart's roles aggregate into) proxies to
// its sandbox's HTTP server; the tenant of another namespace reaches neither.
func testChartTenants(t *testing.T) {
	ns := newRealNamespace(t)
	applyHTTPTemplate(t, ns, "web")
	claimer := "chart-claimer-" + randSuffix(5)
	claimerKC := newUser(t, claimer)
	kubectl(t, "create", "rolebinding", "claimer", "-n", ns, "--clusterrole=sandbox-apiserver:e2b-user", "--user="+claimer)
	editor := "chart-editor-" + randSuffix(5)
	editorKC := newUser(t, editor)
	kubectl(t, "create", "rolebinding", "editor", "-n", ns, "--clusterrole=edit", "--user="+editor)
	waitCanI(t, "create", "sandboxclaims/exec", "-n", ns, "--as="+claimer)
	waitCanI(t, "get", "sandboxclaims/proxy", "-n", ns, "--as="+editor)
	for _, resource := range []string{"pods", "pods/exec", "sandboxes", "sandboxclaims/proxy"} {
		// kubectl auth can-i reads TYPE/NAME: a subresource has its own flag.
		kind, sub, _ := strings.Cut(resource, "/")
		args := []string{kind, "-n", ns, "--subresource=" + sub}
		if canI(t, claimerKC, append([]string{"get"}, args...)...) || canI(t, claimerKC, append([]string{"create"}, args...)...) {
			t.Errorf("%s may use %s; the chart's claim-only role must not give that", claimer, resource)
		}
	}

	client, err := sandbox.NewClient(restConfig(t, claimerKC))
	if err != nil {
		t.Fatal(err)
	}
	sb := claimReal(t, client, ns, "web", "mine")
	if got := strings.TrimSpace(runOK(t, sb, "sh", "-c", "echo $((6*7))")); got != "42" {
		t.Errorf("exec as the claim-only tenant printed %q, want 42", got)
	}

	claimPath := fmt.Sprintf("/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/%s/sandboxclaims/mine:8080/proxy/hello", ns)
	if code, body, _ := proxyCall(t, restConfig(t, editorKC), http.MethodGet, claimPath, "", nil); code != http.StatusOK || body != "hello from /hello" {
		t.Errorf("the editor's GET on sandboxclaims/proxy: %d %q; want 200 from the sandbox's server", code, body)
	}
	if code, body, _ := proxyCall(t, restConfig(t, claimerKC), http.MethodGet, claimPath, "", nil); code != http.StatusForbidden {
		t.Errorf("the claim-only tenant's GET on sandboxclaims/proxy: %d %q; want 403", code, body)
	}

	// Another namespace's editor: neither exec nor proxy reach this tenant's sandbox.
	other := newRealNamespace(t)
	outsider := "chart-outsider-" + randSuffix(5)
	outsiderKC := newUser(t, outsider)
	kubectl(t, "create", "rolebinding", "editor", "-n", other, "--clusterrole=edit", "--user="+outsider)
	waitCanI(t, "get", "sandboxclaims/proxy", "-n", other, "--as="+outsider)
	if code, _, _ := proxyCall(t, restConfig(t, outsiderKC), http.MethodGet, claimPath, "", nil); code != http.StatusForbidden {
		t.Errorf("another namespace's editor's GET on this claim's proxy: %d; want 403", code)
	}
	outsiderClient, err := sandbox.NewClient(restConfig(t, outsiderKC))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := outsiderClient.OpenClaim(ctx, ns, "mine"); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("another namespace's editor opened this tenant's claim: %v; want forbidden", err)
	}

	if err := sb.Close(ctx); err != nil {
		t.Fatalf("the claim-only tenant deleting its claim: %v", err)
	}
	eventually(t, waitTimeout, "the claim's sandbox and pod to be gone", func() (bool, string) {
		out := kubectl(t, "get", "sandboxclaims,sandboxes,pods", "-n", ns, "-o", "name")
		return out == "", out
	})
}

// chartServerPods returns the names and IPs of the server's pods that are running.
func chartServerPods(t *testing.T, selector string) map[string]string {
	t.Helper()
	out := kubectl(t, "get", "pods", "-n", plane.ChartNamespace, "-l", selector, "--field-selector=status.phase=Running",
		"-o", `jsonpath={range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}`)
	pods := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if name, ip, ok := strings.Cut(line, " "); ok && ip != "" {
			pods[name] = ip
		}
	}
	return pods
}

// chartServerClient is an HTTPS client of the server's pods that verifies them as the aggregator
// does (the APIServices' caBundle, the Service's name), with cert as its client certificate
// ("" for none: anonymous).
func chartServerClient(t *testing.T, cert string) *http.Client {
	t.Helper()
	bundle := jsonpath(t, "", "{.spec.caBundle}", "apiservice", "v1beta1.agents.x-k8s.io")
	pem, err := base64.StdEncoding.DecodeString(bundle)
	if err != nil {
		t.Fatalf("the APIService's caBundle: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("the APIService's caBundle holds no certificate")
	}
	conf := &tls.Config{RootCAs: pool, ServerName: "sandbox-apiserver." + plane.ChartNamespace + ".svc", MinVersion: tls.VersionTLS12}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(filepath.Join(certsDir, cert+".crt"), filepath.Join(certsDir, cert+".key"))
		if err != nil {
			t.Fatal(err)
		}
		conf.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: conf}}
}

func chartGet(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// testChartMetrics: every replica serves /metrics to a client the cluster authorizes for it
// (the admin here) and refuses it to an anonymous one.
func testChartMetrics(t *testing.T) {
	admin, anonymous := chartServerClient(t, "admin"), chartServerClient(t, "")
	pods := chartServerPods(t, chartSelector)
	if len(pods) != 2 {
		t.Fatalf("running server pods: %v; want the chart's 2 replicas", pods)
	}
	leaders := 0
	defer func() {
		if leaders != 1 {
			t.Errorf("%d replicas say they run the controllers (sandbox_controller_leader 1); want 1", leaders)
		}
	}()
	for name, ip := range pods {
		url := "https://" + ip + ":8443/metrics"
		code, body := chartGet(t, admin, url)
		if code != http.StatusOK {
			t.Fatalf("%s: GET /metrics as the admin: %d %.200s", name, code, body)
		}
		for _, metric := range []string{"apiserver_request_total", "sandbox_controller_leader", "go_goroutines"} {
			if !strings.Contains(body, "\n"+metric) {
				t.Errorf("%s: /metrics lacks %s", name, metric)
			}
		}
		if strings.Contains(body, "\nsandbox_controller_leader 1") {
			leaders++
		}
		if code, _ := chartGet(t, anonymous, url); code != http.StatusForbidden && code != http.StatusUnauthorized {
			t.Errorf("%s: GET /metrics anonymously: %d; want 401 or 403", name, code)
		}
	}
}

// chartLoad creates claims at a steady rate, each as its own client would: create, wait until
// Ready, run a command in it and delete it. Every claim must be served by a sandbox of its own
// and every step succeed (the SDK retries what it may retry).
type chartLoad struct {
	client *sandbox.Client
	ns     string
	every  time.Duration

	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}
	start  time.Time

	mu        sync.Mutex
	claims    int
	errs      []string
	hostnames map[string]string // hostname -> claim
	gap       time.Duration
	gapWhat   string
}

// chartLoadInFlight bounds the claims in progress at once: the node runs a pod for each.
const chartLoadInFlight = 6

func startChartLoad(t *testing.T, client *sandbox.Client, ns string, every time.Duration) *chartLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &chartLoad{client: client, ns: ns, every: every, cancel: cancel, done: make(chan struct{}),
		start: time.Now(), hostnames: map[string]string{}}
	// A test that fails midway stops its load too.
	t.Cleanup(l.halt)
	slots := make(chan struct{}, chartLoadInFlight)
	go func() {
		defer close(l.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case slots <- struct{}{}:
			}
			l.wg.Add(1)
			go func(i int) {
				defer l.wg.Done()
				defer func() { <-slots }()
				l.one(fmt.Sprintf("load-%d-%s", i, randSuffix(4)))
			}(i)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return l
}

// step times one client request; the longest is the longest gap a client saw.
func (l *chartLoad) step(what string, fn func() error) error {
	start := time.Now()
	err := fn()
	d := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if d > l.gap {
		l.gap, l.gapWhat = d, what
	}
	if err != nil {
		l.errs = append(l.errs, fmt.Sprintf("%s: %v", what, err))
	}
	return err
}

func (l *chartLoad) one(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var sb *sandbox.Sandbox
	if l.step("create "+name, func() (err error) {
		sb, err = l.client.Claim(ctx, l.ns, sandbox.FromTemplate("shell"), sandbox.WithName(name), sandbox.WithoutWait())
		return err
	}) != nil {
		return
	}
	// Waiting for Ready is the pod's start on the node, not a request: it is bounded, not timed.
	if err := sb.WaitReady(ctx); err != nil {
		l.step("ready "+name, func() error { return err })
		return
	}
	var res *sandbox.Result
	if l.step("exec in "+name, func() (err error) {
		res, err = sb.Run(ctx, "cat", "/etc/hostname")
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit code %d, stderr %q", res.ExitCode, res.Stderr)
		}
		return err
	}) != nil {
		return
	}
	host := strings.TrimSpace(res.Stdout)
	l.mu.Lock()
	if prev, dup := l.hostnames[host]; dup || host == "" {
		l.errs = append(l.errs, fmt.Sprintf("%s was served by sandbox %q, which also served %s", name, host, prev))
	}
	l.hostnames[host] = name
	l.claims++
	l.mu.Unlock()
	l.step("delete "+name, func() error { return sb.Close(ctx) })
}

func (l *chartLoad) served() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.claims
}

// waitServed waits until n claims were served in all.
func (l *chartLoad) waitServed(t *testing.T, n int) {
	t.Helper()
	eventually(t, 3*time.Minute, fmt.Sprintf("%d claims served", n), func() (bool, string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.claims >= n, fmt.Sprintf("%d served, errors: %q", l.claims, l.errs)
	})
}

// halt ends the load and waits for the claims in progress.
func (l *chartLoad) halt() {
	l.cancel()
	<-l.done
	l.wg.Wait()
}

// stop ends the load once the claims in progress are done and reports what clients saw.
func (l *chartLoad) stop(t *testing.T, phase string) chartLoadFigure {
	t.Helper()
	l.halt()
	secs := time.Since(l.start).Seconds()
	f := chartLoadFigure{Phase: phase, Claims: l.claims, Seconds: secs, ClaimsPerSecond: float64(l.claims) / secs,
		LongestGapSecond: l.gap.Seconds(), LongestGapWhat: l.gapWhat}
	t.Logf("%s: %d claims created, used and deleted in %.0fs (%.2f/s); the longest request took %.1fs (%s)",
		phase, f.Claims, secs, f.ClaimsPerSecond, f.LongestGapSecond, f.LongestGapWhat)
	for _, e := range l.errs {
		t.Errorf("%s: a client saw: %s", phase, e)
	}
	if l.claims == 0 {
		t.Errorf("%s: no claim was served", phase)
	}
	return f
}

// chartReadyWatch samples the Ready server pods while the release changes and keeps the fewest.
type chartReadyWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	fewest int
}

func watchChartReady(t *testing.T) *chartReadyWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &chartReadyWatch{cancel: cancel, done: make(chan struct{}), fewest: 1 << 30}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			out, _, err := runKubectlCmd(ctx, kubectlOptions{}, "get", "pods", "-n", plane.ChartNamespace, "-l", chartSelector, "-o",
				`jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status} {.metadata.deletionTimestamp}{"\n"}{end}`)
			if err == nil {
				ready := 0
				for _, line := range strings.Split(out, "\n") {
					// A pod being deleted is out of the Service's endpoints whatever its condition.
					if f := strings.Fields(line); len(f) == 1 && f[0] == "True" {
						ready++
					}
				}
				w.fewest = min(w.fewest, ready)
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *chartReadyWatch) stop() int {
	w.cancel()
	<-w.done
	return w.fewest
}

// helm runs the pinned helm against the plane.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot, "_output/tools/bin/helm"), append([]string{"--kubeconfig", adminKubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", shellJoin(args), err, indent(string(out)))
	}
	return string(out)
}

// buildVersion is the version stamp of a build in its agent_sandbox_build_info metric.
var buildVersion = regexp.MustCompile(`\nagent_sandbox_build_info\{[^}]*git_version="([^"]*)"`)

// chartServerVersions are the builds the running server pods report (agent_sandbox_build_info;
// /version is kube-apiserver's library's), each once.
func chartServerVersions(t *testing.T) ([]string, error) {
	t.Helper()
	client := chartServerClient(t, "admin")
	var versions []string
	for name, ip := range chartServerPods(t, chartSelector) {
		resp, err := client.Get("https://" + ip + ":8443/metrics")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := buildVersion.FindSubmatch(body)
		if resp.StatusCode != http.StatusOK || m == nil {
			return nil, fmt.Errorf("%s: GET /metrics: %d, no agent_sandbox_build_info", name, resp.StatusCode)
		}
		versions = append(versions, string(m[1]))
	}
	slices.Sort(versions)
	return slices.Compact(versions), nil
}

// buildNextImage builds the server's image again with another version stamp (the same source,
// another tag) and imports it into the node.
func buildNextImage(t *testing.T, in *plane.Plane, tag string) plane.Image {
	t.Helper()
	dir := filepath.Join(repoRoot, "_output/images-next")
	cmd := exec.Command(filepath.Join(repoRoot, "hack/build-image.sh"))
	cmd.Env = append(os.Environ(), "OUT_DIR="+dir, "IMAGE_BINARIES=sandbox-apiserver", "IMAGE_PLATFORMS=linux/amd64", "VERSION="+tag)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/build-image.sh: %v\n%s", err, indent(string(out)))
	}
	img, err := plane.ReadImage(filepath.Join(dir, "sandbox-apiserver"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := in.Config.ImportImage(ctx, img); err != nil {
		t.Fatal(err)
	}
	return img
}

// testChartUpgradeRollback: helm upgrade to an image of another build, then helm rollback,
// each while claims are created and used at a steady rate: no claim lost or served twice, no
// error a client saw, at least podDisruptionBudget.minAvailable replicas Ready throughout.
func testChartUpgradeRollback(t *testing.T, in *plane.Plane) []chartLoadFigure {
	image := jsonpath(t, plane.ChartNamespace, "{.spec.template.spec.containers[0].image}", "deployment", "sandbox-apiserver")
	tag := image[strings.LastIndex(image, ":")+1:]
	before, err := chartServerVersions(t)
	if err != nil || !slices.Equal(before, []string{tag}) {
		t.Fatalf("the replicas report the builds %v (%v); want the image's, %s", before, err, tag)
	}
	next := buildNextImage(t, in, tag+"-next")
	// The replicas about to be replaced: whatever they logged is lost with them.
	expectNoForbiddenInServerLogs(t)

	ns := newRealNamespace(t)
	applyYAML(t, ns, realNodeTemplates)
	_, kc := newClaimTenant(t, ns)
	client, err := sandbox.NewClient(restConfig(t, kc))
	if err != nil {
		t.Fatal(err)
	}
	var minAvailable int
	fmt.Sscan(jsonpath(t, plane.ChartNamespace, "{.spec.minAvailable}", "pdb", "sandbox-apiserver"), &minAvailable)
	if minAvailable < 1 {
		t.Fatalf("the server's PodDisruptionBudget keeps %d replicas; want the chart's default of 1", minAvailable)
	}
	var figures []chartLoadFigure
	change := func(phase string, args []string, want string) {
		load := startChartLoad(t, client, ns, time.Second)
		load.waitServed(t, 3)
		ready := watchChartReady(t)
		t.Cleanup(func() { ready.stop() })
		start := time.Now()
		helm(t, args...)
		kubectl(t, "rollout", "status", "-n", plane.ChartNamespace, "deployment/sandbox-apiserver", "--timeout=5m")
		t.Logf("%s: rolled out in %s", phase, time.Since(start).Round(time.Second))
		fewest := ready.stop()
		eventually(t, 2*time.Minute, "the old replicas to be gone", func() (bool, string) {
			v, err := chartServerVersions(t)
			return err == nil && len(v) == 1 && v[0] == want && len(chartServerPods(t, chartSelector)) == 2, fmt.Sprint(v, err)
		})
		if err := waitForSandboxAPIs(2 * time.Minute); err != nil {
			t.Fatal(err)
		}
		load.waitServed(t, load.served()+3)
		figures = append(figures, load.stop(t, phase))
		t.Logf("%s: at least %d server replicas Ready at every sample", phase, fewest)
		if fewest < minAvailable {
			t.Errorf("%s: %d server replicas were Ready at one point; the PodDisruptionBudget keeps %d", phase, fewest, minAvailable)
		}
	}
	change("upgrade", []string{"upgrade", plane.ChartRelease, filepath.Join(repoRoot, "artifacts/charts/sandbox-apiserver"),
		"-n", plane.ChartNamespace, "--reuse-values", "--set", "image.tag=" + next.Tag, "--wait", "--timeout", "5m"}, next.Tag)
	change("rollback", []string{"rollback", plane.ChartRelease, "-n", plane.ChartNamespace, "--wait", "--timeout", "5m"}, before[0])
	// A deleted claim's sandbox goes once the controllers see the claim gone.
	eventually(t, 2*time.Minute, "no claim or sandbox left once every client deleted its own", func() (bool, string) {
		out := kubectl(t, "get", "sandboxclaims,sandboxes", "-n", ns, "-o", "name")
		return out == "", out
	})
	return figures
}

var holderPod = regexp.MustCompile(`^(sandbox-apiserver-[a-z0-9]+-[a-z0-9]+)`)

// chartLease is the controllers' Lease.
type chartLease struct {
	holder          string
	durationSeconds int
	renew, acquire  time.Time
}

func getChartLease(t *testing.T) chartLease {
	t.Helper()
	// A leader that stops releases the Lease: its holder is empty until another takes it.
	out := jsonpath(t, plane.ChartNamespace, "{.spec.holderIdentity}|{.spec.leaseDurationSeconds}|{.spec.renewTime}|{.spec.acquireTime}",
		"lease", "sandbox-apiserver-controllers")
	f := strings.Split(out, "|")
	if len(f) != 4 {
		t.Fatalf("the controllers' Lease: %q", out)
	}
	var l chartLease
	l.holder = f[0]
	fmt.Sscan(f[1], &l.durationSeconds)
	l.renew, _ = time.Parse(time.RFC3339Nano, f[2])
	l.acquire, _ = time.Parse(time.RFC3339Nano, f[3])
	return l
}

// testChartLeaderFailover deletes the pod that holds the controllers' Lease: the other replica
// takes it over within the lease's duration of the last renewal, and a claim made before and one
// made during the takeover both become Ready.
func testChartLeaderFailover(t *testing.T) float64 {
	ns := newRealNamespace(t)
	applyYAML(t, ns, realNodeTemplates)
	before := getChartLease(t)
	m := holderPod.FindStringSubmatch(before.holder)
	if m == nil {
		t.Fatalf("the Lease's holder %q names no server pod", before.holder)
	}
	leader := m[1]
	applyYAML(t, ns, "apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nmetadata: {name: before}\nspec: {sandboxTemplateRef: {name: shell}}\n")
	kubectl(t, "delete", "pod", "-n", plane.ChartNamespace, leader, "--wait=false")
	deleted := time.Now()
	applyYAML(t, ns, "apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nmetadata: {name: during}\nspec: {sandboxTemplateRef: {name: shell}}\n")
	var after chartLease
	eventually(t, 2*time.Minute, "another replica to hold the Lease", func() (bool, string) {
		after = getChartLease(t)
		return after.holder != "" && !strings.HasPrefix(after.holder, leader), after.holder
	})
	takeover := after.acquire.Sub(before.renew)
	t.Logf("deleted %s (the leader); %s holds the Lease %s after the deletion, %.1fs after the old leader's last renewal",
		leader, after.holder, after.acquire.Sub(deleted).Round(100*time.Millisecond), takeover.Seconds())
	// The last renewal seen before the deletion may be up to a retry period older than the old
	// leader's very last one: the bound holds with that margin.
	if limit := time.Duration(after.durationSeconds)*time.Second + 2*time.Second; takeover > limit+2*time.Second {
		t.Errorf("the Lease was taken over %s after the last renewal seen; the lease lasts %ds", takeover, after.durationSeconds)
	}
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "--timeout=2m", "sandboxclaim/before", "sandboxclaim/during")
	eventually(t, 3*time.Minute, "the Deployment to run 2 Ready replicas again", func() (bool, string) {
		out := jsonpath(t, plane.ChartNamespace, "{.status.readyReplicas} {.status.replicas}", "deployment", "sandbox-apiserver")
		return out == "2 2", out
	})
	return after.acquire.Sub(deleted).Seconds()
}

// chartEtcdLeader finds the etcd member that leads, from its metrics (plain HTTP on 2381).
func chartEtcdLeader(t *testing.T) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	for name, ip := range chartServerPods(t, chartEtcdSelector) {
		resp, err := client.Get("http://" + ip + ":2381/metrics")
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "\netcd_server_is_leader 1") {
			return name
		}
	}
	return ""
}

// testChartEtcdFailover deletes the etcd member that leads while claims are made and used: the
// other two keep quorum, clients see no error, the member comes back with its volume and rejoins.
func testChartEtcdFailover(t *testing.T) float64 {
	if n := kubectl(t, "get", "statefulset", "-n", plane.ChartNamespace, "sandbox-etcd", "-o", "jsonpath={.spec.replicas}"); n != "3" {
		t.Skipf("etcd.bundled.replicas is %s; the member failover needs 3", n)
	}
	var leader string
	eventually(t, waitTimeout, "an etcd leader", func() (bool, string) {
		leader = chartEtcdLeader(t)
		return leader != "", "none of the members says it leads"
	})
	ns := newRealNamespace(t)
	applyYAML(t, ns, realNodeTemplates)
	_, kc := newClaimTenant(t, ns)
	client, err := sandbox.NewClient(restConfig(t, kc))
	if err != nil {
		t.Fatal(err)
	}
	load := startChartLoad(t, client, ns, time.Second)
	load.waitServed(t, 3)
	uid := kubectl(t, "get", "pod", "-n", plane.ChartNamespace, leader, "-o", "jsonpath={.metadata.uid}")
	kubectl(t, "delete", "pod", "-n", plane.ChartNamespace, leader)
	eventually(t, 3*time.Minute, "the member to come back Ready with its volume", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "pod", "-n", plane.ChartNamespace, leader, "-o",
			`jsonpath={.metadata.uid} {.status.conditions[?(@.type=="Ready")].status}`)
		newUID, ready, _ := strings.Cut(out, " ")
		return newUID != "" && newUID != uid && ready == "True", out
	})
	eventually(t, 2*time.Minute, "a leader among the members again", func() (bool, string) {
		return chartEtcdLeader(t) != "", "none of the members says it leads"
	})
	load.waitServed(t, load.served()+3)
	f := load.stop(t, "etcd member "+leader+" deleted")
	return f.LongestGapSecond
}

// chartServerUser is the identity the chart gives the server.
const chartServerUser = "system:serviceaccount:" + plane.ChartNamespace + ":sandbox-apiserver"

// expectNoForbiddenInServerLogs: the server works with exactly the rights the chart grants it:
// no request it made was refused, in the logs of every replica since it started. Refusals of the
// tests' tenants (their attacks) name those users; they are only shown.
func expectNoForbiddenInServerLogs(t *testing.T) {
	t.Helper()
	for name := range chartServerPods(t, chartSelector) {
		logs := kubectl(t, "logs", "-n", plane.ChartNamespace, name)
		for _, line := range strings.Split(logs, "\n") {
			switch {
			case !strings.Contains(strings.ToLower(line), "forbidden"):
			case strings.Contains(line, chartServerUser):
				t.Errorf("%s: the server's own request was refused: %s", name, line)
			default:
				t.Logf("%s logged a refusal of another user: %.300s", name, line)
			}
		}
	}
}

// testChartUninstall: helm uninstall leaves what docs/operating.md says: the APIs go, the
// sandboxes' pods and the etcd members' volumes stay, the generated certificates go; a new
// install in the namespace serves the same objects again.
func testChartUninstall(t *testing.T, in *plane.Plane) {
	ns := newRealNamespace(t)
	applyYAML(t, ns, realNodeTemplates)
	applyYAML(t, ns, "apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nmetadata: {name: kept}\nspec: {sandboxTemplateRef: {name: shell}}\n")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "--timeout=2m", "sandboxclaim/kept")
	pod := kubectl(t, "get", "pods", "-n", ns, "-o", "name")
	if pod == "" {
		t.Fatal("the claim's sandbox has no pod")
	}

	helm(t, "uninstall", plane.ChartRelease, "-n", plane.ChartNamespace, "--wait", "--timeout", "3m")
	for _, api := range chartAPIServices {
		if _, stderr, err := kubectlErr(t, "get", "apiservice", api); err == nil || !strings.Contains(stderr, "NotFound") {
			t.Errorf("APIService %s after helm uninstall: %v %s; want NotFound", api, err, stderr)
		}
	}
	// kubectl says the resource type is gone once its discovery cache is (this run's is fresh
	// from before the uninstall: it asks and gets NotFound).
	if _, stderr, err := kubectlErr(t, "get", "sandboxes", "-n", ns); err == nil ||
		!strings.Contains(stderr, "the server doesn't have a resource type") && !strings.Contains(stderr, "NotFound") {
		t.Errorf("kubectl get sandboxes after helm uninstall: %v %s; want no such resource", err, stderr)
	}
	if got := kubectl(t, "get", "pods", "-n", ns, "-o", "name"); got != pod {
		t.Errorf("the sandbox's pod after helm uninstall: %q; want %q kept", got, pod)
	}
	pvcs := kubectl(t, "get", "pvc", "-n", plane.ChartNamespace, "-l", chartEtcdSelector, "-o", "name")
	if n := len(strings.Fields(pvcs)); n != 3 {
		t.Errorf("the etcd members' claims after helm uninstall: %q; want all 3 kept", pvcs)
	}
	if secrets := kubectl(t, "get", "secrets", "-n", plane.ChartNamespace, "-l", "app.kubernetes.io/part-of=sandbox-apiserver", "-o", "name"); secrets != "" {
		t.Errorf("the chart's Secrets left in %s after helm uninstall: %s; the generated certificates go with the release", plane.ChartNamespace, secrets)
	}
	// What the server made itself at run time is not the release's (docs/operating.md).
	t.Logf("Secrets left in %s, not the release's: %q", plane.ChartNamespace, kubectl(t, "get", "secrets", "-n", plane.ChartNamespace, "-o", "name"))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := in.InstallChart(ctx); err != nil {
		t.Fatalf("installing again: %v", err)
	}
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "--timeout=2m", "sandboxclaim/kept")
}
