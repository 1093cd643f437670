// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// The plugin tests run `kubectl sandbox` as a user types it: the real kubectl finds the real
// kubectl-sandbox binary (make build) on PATH and runs it with the tenant's kubeconfig.

// pluginEnv puts _output/bin, where make build writes kubectl-sandbox, first on PATH.
func pluginEnv() []string {
	return []string{"PATH=" + filepath.Join(repoRoot, "_output/bin") + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// plugin runs `kubectl sandbox ARGS` as the user of kubeconfig (the admin when empty) with
// stdin, and returns what it printed and its exit code (-1 when it did not run or finish).
func plugin(t *testing.T, kubeconfig, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kubeconfig, stdin: stdin, env: pluginEnv()}, append([]string{"sandbox"}, args...)...)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return stdout, stderr, 0
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		return stdout, stderr, exitErr.ExitCode()
	}
	return stdout, stderr, -1
}

// pluginOK runs `kubectl sandbox ARGS` and fails the test unless it exits 0.
func pluginOK(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	stdout, stderr, code := plugin(t, kubeconfig, "", args...)
	if code != 0 {
		t.Fatalf("kubectl sandbox %s: exit code %d\nstderr:\n%s", shellJoin(args), code, indent(stderr))
	}
	return stdout
}

// applyHTTPTemplate makes the template name in ns, whose sandboxes run the sandbox image's
// python3 with sandboxHTTPServer on port 8080, declared as "http". It returns the port.
func applyHTTPTemplate(t *testing.T, ns, name string) int {
	t.Helper()
	requireRealNode(t)
	applyYAML(t, ns, fmt.Sprintf(`apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: %s}
spec:
  podTemplate: {spec: %s}
`, name, httpPodSpec))
	return 8080
}

// claimTenantRole is what a claim-only tenant is given: claims, the use of the templates, and
// the claims' streaming and proxy subresources; nothing on sandboxes or pods.
const claimTenantRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: claim-user}
rules:
- apiGroups: [extensions.agents.x-k8s.io]
  resources: [sandboxclaims]
  verbs: [get, list, watch, create, delete]
- apiGroups: [extensions.agents.x-k8s.io]
  resources: [sandboxtemplates]
  verbs: [use]
- apiGroups: [extensions.agents.x-k8s.io]
  resources: [sandboxclaims/exec, sandboxclaims/attach, sandboxclaims/log, sandboxclaims/portforward, sandboxclaims/proxy]
  verbs: [get, create]
`

// newClaimTenant makes a user bound to claimTenantRole in ns and returns its kubeconfig, whose
// context's namespace is ns.
func newClaimTenant(t *testing.T, ns string) (user, kubeconfig string) {
	t.Helper()
	applyYAML(t, ns, claimTenantRole)
	user = "claim-tenant-" + randSuffix(5)
	kubeconfig = newUser(t, user)
	kubectl(t, "create", "rolebinding", "claim-user", "-n", ns, "--role=claim-user", "--user="+user)
	waitCanI(t, "create", "sandboxclaims/exec", "-n", ns, "--as="+user)
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = ns
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return user, kubeconfig
}

// TestKubectlSandboxPlugin: a claim-only tenant, with no right on pods, claims a sandbox with
// `kubectl sandbox claim --wait`, runs commands in it (stdout, stderr, stdin, exit codes), copies
// a file in and out byte for byte, follows its log, port-forwards and proxies to its HTTP server
// and deletes it; the admin suspends and resumes it.
func TestKubectlSandboxPlugin(t *testing.T) {
	t.Parallel()
	ns := newRealNamespace(t)
	port := applyHTTPTemplate(t, ns, "plugin")
	user, kc := newClaimTenant(t, ns)
	for _, resource := range []string{"pods", "pods/exec", "pods/log", "pods/portforward", "sandboxes"} {
		if canI(t, kc, "create", resource, "-n", ns) || canI(t, kc, "get", resource, "-n", ns) {
			t.Fatalf("%s may use %s; a claim-only tenant must not", user, resource)
		}
	}

	out := pluginOK(t, kc, "claim", "--template", "plugin", "--name", "mine", "--wait", "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status} {.status.sandbox.name}")
	ready, sandboxName, _ := strings.Cut(out, " ")
	if ready != "True" || sandboxName == "" {
		t.Fatalf("claim --wait printed %q; want Ready True and the sandbox's name", out)
	}
	if got := jsonpath(t, ns, "{.metadata.labels.agents\\.x-k8s\\.io/created-by}", "sandboxclaim", "mine"); got != "sandbox-sdk-go" {
		t.Errorf("the claim's created-by label is %q, want sandbox-sdk-go", got)
	}

	t.Run("exec", func(t *testing.T) {
		stdout, stderr, code := plugin(t, kc, "", "exec", "mine", "--", "sh", "-c", "echo to stdout; echo to stderr >&2; exit 7")
		if stdout != "to stdout\n" || !strings.Contains(stderr, "to stderr") || code != 7 {
			t.Errorf("exec: stdout %q, stderr %q, exit code %d; want \"to stdout\\n\", \"to stderr\", 7", stdout, stderr, code)
		}
		if stdout, _, code := plugin(t, kc, "", "exec", "sandboxclaim/mine", "--", "true"); code != 0 || stdout != "" {
			t.Errorf("exec true: %q, exit code %d", stdout, code)
		}
		// The end of stdin reaches the command, which then exits.
		if stdout, stderr, code := plugin(t, kc, "line one\nline two\n", "exec", "-i", "mine", "--", "cat"); stdout != "line one\nline two\n" || code != 0 {
			t.Errorf("exec -i: stdout %q, exit code %d, stderr %q; want both lines", stdout, code, stderr)
		}
		// The tenant reaches the pod only through its claim.
		pod := jsonpath(t, ns, "{.items[0].metadata.name}", "pods", "-l", "agents.x-k8s.io/sandbox-name-hash")
		_, stderr, err := kubectlAsErr(t, kc, "exec", "-n", ns, pod, "--", "true")
		expectFailure(t, "kubectl exec on the pod as the tenant", stderr, err, "forbidden")
	})

	t.Run("cp", func(t *testing.T) {
		local := t.TempDir()
		in := filepath.Join(local, "in.bin")
		data := make([]byte, 3<<20+12345)
		if _, err := rand.Read(data); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(in, data, 0o644); err != nil {
			t.Fatal(err)
		}
		pluginOK(t, kc, "cp", in, "mine:/tmp/copy.bin")
		sum := sha256.Sum256(data)
		if got := pluginOK(t, kc, "exec", "mine", "--", "sha256sum", "/tmp/copy.bin"); !strings.HasPrefix(got, hex.EncodeToString(sum[:])+" ") {
			t.Fatalf("sha256sum of the copy in the sandbox: %q; want %x", got, sum)
		}
		back := filepath.Join(local, "back.bin")
		pluginOK(t, kc, "cp", ns+"/mine:/tmp/copy.bin", back)
		if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("the copy out of the sandbox differs (%d of %d bytes, %v)", len(got), len(data), err)
		}
		// A directory tree, out of the sandbox.
		pluginOK(t, kc, "exec", "mine", "--", "sh", "-c", "mkdir -p /tmp/tree/sub && echo 'in a tree' > /tmp/tree/sub/f.txt")
		pluginOK(t, kc, "cp", "mine:/tmp/tree", filepath.Join(local, "tree-copy"))
		if got, err := os.ReadFile(filepath.Join(local, "tree-copy/sub/f.txt")); err != nil || string(got) != "in a tree\n" {
			t.Errorf("tree-copy/sub/f.txt: %q, %v", got, err)
		}
		_, stderr, code := plugin(t, kc, "", "cp", "mine:/tmp/missing", filepath.Join(local, "missing"))
		if code == 0 || !strings.Contains(stderr, "missing") {
			t.Errorf("cp of a missing file: exit code %d, stderr %q; want a failure naming it", code, stderr)
		}
	})

	t.Run("logs", func(t *testing.T) {
		// A command writes a line to the main process's stdout, the container's log, while
		// logs -f follows.
		marker := "plugin-log-" + randSuffix(8)
		logs := startKubectl(t, kubectlOptions{kubeconfig: kc, env: pluginEnv()}, 2*time.Minute, "sandbox", "logs", "-f", "--tail=20", "mine")
		pluginOK(t, kc, "exec", "mine", "--", "sh", "-c", "echo "+marker+" > /proc/1/fd/1")
		logs.next(t, "the line written in the sandbox", func(l string) bool { return l == marker })
	})

	t.Run("port-forward", func(t *testing.T) {
		pf := startKubectl(t, kubectlOptions{kubeconfig: kc, env: pluginEnv()}, 2*time.Minute, "sandbox", "port-forward", "mine", fmt.Sprintf(":%d", port))
		line := pf.next(t, "the forwarded port", func(l string) bool { return strings.HasPrefix(l, "Forwarding from 127.0.0.1:") })
		local := regexp.MustCompile(`127\.0\.0\.1:(\d+) `).FindStringSubmatch(line)[1]
		body := httpGet(t, "http://127.0.0.1:"+local+"/through/the/forward")
		if body != "hello from /through/the/forward" {
			t.Errorf("GET through the port-forward: %q", body)
		}
	})

	t.Run("proxy", func(t *testing.T) {
		px := startKubectl(t, kubectlOptions{kubeconfig: kc, env: pluginEnv()}, 2*time.Minute, "sandbox", "proxy", "mine", "--local-port", "0")
		line := px.next(t, "the proxy's address", func(l string) bool { return strings.HasPrefix(l, "Starting to serve") })
		addr := line[strings.LastIndex(line, " ")+1:]
		if body := httpGet(t, "http://"+addr+"/healthz"); body != "ok\n" {
			t.Errorf("GET through kubectl sandbox proxy: %q", body)
		}
		url := strings.TrimSpace(pluginOK(t, kc, "proxy", "mine", "--url"))
		if body := kubectlAs(t, kc, "get", "--raw", url+"raw"); body != "hello from /raw" {
			t.Errorf("kubectl get --raw %s: %q", url+"raw", body)
		}
	})

	t.Run("suspend and resume", func(t *testing.T) {
		// Suspending writes the Sandbox, which the claim-only tenant may not.
		_, stderr, code := plugin(t, kc, "", "suspend", "mine")
		if code == 0 || !strings.Contains(stderr, "forbidden") {
			t.Errorf("suspend as the tenant: exit code %d, stderr %q; want forbidden", code, stderr)
		}
		if out := pluginOK(t, "", "-n", ns, "suspend", "mine"); out != "sandboxclaim.extensions.agents.x-k8s.io/mine suspended\n" {
			t.Errorf("suspend printed %q", out)
		}
		if n := kubectl(t, "get", "pods", "-n", ns, "-o", "name"); strings.TrimSpace(n) != "" {
			t.Errorf("pods left after suspend: %s", n)
		}
		pluginOK(t, "", "-n", ns, "resume", "mine")
		if stdout, _, code := plugin(t, kc, "", "exec", "mine", "--", "echo", "back"); stdout != "back\n" || code != 0 {
			t.Errorf("exec after resume: %q, exit code %d", stdout, code)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if out := pluginOK(t, kc, "delete", "mine"); out != "sandboxclaim.extensions.agents.x-k8s.io/mine deleted\n" {
			t.Errorf("delete printed %q", out)
		}
		kubectl(t, "wait", "-n", ns, "--for=delete", "sandboxclaim/mine", "sandbox/"+sandboxName, "--timeout=60s")
		_, stderr, code := plugin(t, kc, "", "exec", "mine", "--", "true")
		if code == 0 || !strings.Contains(stderr, "not found") {
			t.Errorf("exec on the deleted claim: exit code %d, stderr %q", code, stderr)
		}
	})
}

// httpGet GETs url and returns the body; it fails the test on any error or a status other than 200.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: waitTimeout}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}

// TestSDKExamples compiles the SDK's examples (pkg/sdk/sandbox/example_test.go) and runs them,
// checking their printed output, against the local control plane as a claim-only tenant whose
// namespace has what they name: the template python-runtime-template (a sandbox serving HTTP)
// and the warm pool python-pool.
func TestSDKExamples(t *testing.T) {
	t.Parallel()
	ns := newRealNamespace(t)
	applyHTTPTemplate(t, ns, "python-runtime-template")
	applyYAML(t, ns, `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata: {name: python-pool}
spec:
  replicas: 1
  sandboxTemplateRef: {name: python-runtime-template}
`)
	_, kc := newClaimTenant(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", "^Example", "-v", "./pkg/sdk/sandbox/")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "SANDBOX_SDK_EXAMPLES=1", "KUBECONFIG="+kc)
	out, err := cmd.CombinedOutput()
	t.Logf("$ SANDBOX_SDK_EXAMPLES=1 KUBECONFIG=<tenant> go test -run ^Example -v ./pkg/sdk/sandbox/\n%s", indent(string(out)))
	if err != nil {
		t.Fatalf("the SDK's examples failed: %v", err)
	}
	for _, example := range []string{"Example", "ExampleClient_Claim", "ExampleSandbox_Exec", "ExampleSandbox_WriteFile", "ExampleSandbox_HTTPClient"} {
		if !strings.Contains(string(out), "--- PASS: "+example+" ") {
			t.Errorf("%s did not run and pass", example)
		}
	}
}
