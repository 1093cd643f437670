// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// traceContext is what a client SDK records on the claim it creates.
const traceContext = `{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`

const tracedClaim = `apiVersion: extensions.agents.x-k8s.io/v1alpha1
kind: SandboxClaim
metadata:
  name: %s
  annotations:
    opentelemetry.io/trace-context: '%s'
spec:
  sandboxTemplateRef: {name: agent}
  warmpool: %s
`

// TestClaimSandboxNameLabelAndTrace: a bound claim, warm or cold, is found by the label naming
// its sandbox, and its sandbox carries the trace context the claim recorded.
func TestClaimSandboxNameLabelAndTrace(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "agent", "Disallowed", "v1")+"---\n"+fmt.Sprintf(warmPool, "pool", 1, "agent", "OnReplenish"))
	waitPoolReady(t, ns, "pool", 1)
	member := jsonpath(t, ns, "{.items[0].metadata.name}", "sandboxes")

	applyYAML(t, ns, fmt.Sprintf(tracedClaim, "warm", traceContext, "default")+"---\n"+fmt.Sprintf(tracedClaim, "cold", traceContext, "none"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/warm", "sandboxclaim/cold", "--timeout=90s")
	for claim, sandbox := range map[string]string{"warm": member, "cold": "cold"} {
		if got := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", claim); got != sandbox {
			t.Fatalf("claim %s has sandbox %q, want %s", claim, got, sandbox)
		}
		eventually(t, waitTimeout, "claim "+claim+" selected by its sandbox's name", func() (bool, string) {
			out := kubectl(t, "get", "sandboxclaims", "-n", ns, "-l", "agents.x-k8s.io/sandbox-name="+sandbox, "-o", "name")
			return strings.TrimSpace(out) == "sandboxclaim.extensions.agents.x-k8s.io/"+claim, out
		})
		if got := jsonpath(t, ns, `{.metadata.annotations.opentelemetry\.io/trace-context}`, "sandbox", sandbox); got != traceContext {
			t.Errorf("sandbox %s of claim %s has trace context %q, want the claim's %q", sandbox, claim, got, traceContext)
		}
	}
}

// startingTemplate is a template whose pods only schedule on a node labelled for the test, so its
// warm members stay starting until the test labels one.
const startingTemplate = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: agent}
spec:
  podTemplate:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {e2e.agents.x-k8s.io/starting: %s}
      containers:
      - name: agent
        image: ghcr.io/example/agent:v1
`

// TestClaimTakesStartingMember: with no Ready member, a claim takes a member still starting
// instead of a cold sandbox (bound at create, or by the controller when the create's caches had
// not seen the member yet), and becomes Ready when its pod does.
func TestClaimTakesStartingMember(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, fmt.Sprintf(startingTemplate, ns)+"---\n"+fmt.Sprintf(warmPool, "pool", 1, "agent", "OnReplenish"))
	var member string
	eventually(t, waitTimeout, "a warm member, not Ready", func() (bool, string) {
		member, _, _ = kubectlErr(t, "get", "sandboxes", "-n", ns, "-o", "jsonpath={.items[0].metadata.name}")
		return member != "", member
	})
	if r := jsonpath(t, ns, `{.status.conditions[?(@.type=="Ready")].status}`, "sandbox", member); r == "True" {
		t.Fatalf("member %s is Ready, want it starting (its pod cannot be scheduled)", member)
	}

	kubectlAsStdin(t, "", "apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nmetadata: {name: early}\nspec:\n  sandboxTemplateRef: {name: agent}\n", "create", "-n", ns, "-f", "-")
	eventually(t, waitTimeout, "the claim bound to the starting member", func() (bool, string) {
		got, _, _ := kubectlErr(t, "get", "sandboxclaim", "early", "-n", ns, "-o", "jsonpath={.status.sandbox.name}")
		return got == member, got
	})
	if out, _, err := kubectlErr(t, "get", "sandbox", "early", "-n", ns); err == nil {
		t.Errorf("a cold sandbox was made beside the warming pool:\n%s", out)
	}
	if r := jsonpath(t, ns, `{.status.conditions[?(@.type=="Ready")].status}`, "sandboxclaim", "early"); r == "True" {
		t.Errorf("claim Ready before its pod is")
	}
	expectNames(t, "claims selected by their sandbox", kubectl(t, "get", "sandboxclaims", "-n", ns, "-l", "agents.x-k8s.io/sandbox-name="+member, "-o", "name"), "sandboxclaim.extensions.agents.x-k8s.io/early")

	// Let the pod schedule: the claim becomes Ready with it.
	node := strings.Fields(kubectl(t, "get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"))[0]
	kubectl(t, "label", "node", node, "e2e.agents.x-k8s.io/starting="+ns)
	t.Cleanup(func() { _, _, _ = kubectlErr(t, "label", "node", node, "e2e.agents.x-k8s.io/starting-") })
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/early", "--timeout=90s")
	if got := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", "early"); got != member {
		t.Errorf("claim's sandbox %q after Ready, want %s", got, member)
	}
}

// seedControllerArgs are the seed controller's deployment args (k8s/extensions.controller.yaml
// and the chart's extraArgs), as a deployment written for it passes them.
var seedControllerArgs = []string{
	"--leader-elect=true",
	"--extensions",
	"--sandbox-concurrent-workers=10",
	"--sandbox-claim-concurrent-workers=10",
	"--sandbox-warm-pool-concurrent-workers=10",
	"--sandbox-warm-pool-max-batch-size=500",
	"--kube-api-qps=-1",
	"--kube-api-burst=100",
	"--cluster-domain=cluster.local",
	"--enable-pprof",
}

// TestSeedControllerArgs: the binary starts with the seed controller's args and serves, its
// metrics and health on the plain listeners the seed deployment scrapes and probes, its Lease
// in the namespace it is given; --version prints the build.
func TestSeedControllerArgs(t *testing.T) {
	bin := filepath.Join(repoRoot, "_output/bin/sandbox-apiserver")
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "sandbox-apiserver ") {
		t.Errorf("--version: %v\n%s", err, out)
	}

	dir := t.TempDir()
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", haFreePort(t))
	healthAddr := fmt.Sprintf("127.0.0.1:%d", haFreePort(t))
	lease := "seed-args-" + randSuffix(5)
	args := append(planeServerArgs(haFreePort(t)),
		"--etcd-data-dir="+filepath.Join(dir, "etcd"),
		"--leader-elect-resource-name="+lease,
		"--leader-election-namespace=default",
		"--metrics-bind-address="+metricsAddr,
		"--health-probe-bind-address="+healthAddr)
	args = append(args, seedControllerArgs...)
	logPath := filepath.Join(dir, "seed-args.log")
	haPrintLogsOnFailure(t, logPath)
	proc := haStartProcess(t, "seed-args", logPath, bin, args...)
	t.Cleanup(proc.stop)

	get := func(url string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	haPoll(t, 2*time.Minute, 200*time.Millisecond, "ready on the health probe listener", func() (bool, string) {
		if proc.exited() {
			t.Fatalf("exited during start-up:\n%s", indent(haLogTail(logPath, 40)))
		}
		code, body := get("http://" + healthAddr + "/readyz")
		return code == http.StatusOK && strings.TrimSpace(body) == "ok", fmt.Sprintf("%d %s", code, body)
	})
	for _, path := range []string{"/healthz", "/livez"} {
		if code, body := get("http://" + healthAddr + path); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	if code, body := get("http://" + metricsAddr + "/metrics"); code != http.StatusOK || !strings.Contains(body, "agent_sandbox_build_info{") {
		t.Errorf("GET /metrics: %d, agent_sandbox_build_info missing", code)
	}
	if code, _ := get("http://" + metricsAddr + "/debug/pprof/profile?seconds=1"); code != http.StatusOK {
		t.Errorf("GET /debug/pprof/profile (--enable-pprof): %d", code)
	}
	haPoll(t, time.Minute, 500*time.Millisecond, "the Lease in --leader-election-namespace", func() (bool, string) {
		holder, _, err := kubectlErr(t, "get", "lease", lease, "-n", "default", "-o", "jsonpath={.spec.holderIdentity}")
		return err == nil && holder != "", holder
	})
	_, _, _ = kubectlErr(t, "delete", "lease", lease, "-n", "default", "--wait=false")
}
