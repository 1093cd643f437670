// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// python is Debian's interpreter, which has the packages hack/python-deps.sh installs (a python3
// earlier on PATH may not).
const python = "/usr/bin/python3"

// sandboxOperatorRole adds to claimTenantRole what suspending and resuming takes: writing the
// Sandbox's operating mode and watching it.
const sandboxOperatorRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: sandbox-operator}
rules:
- apiGroups: [agents.x-k8s.io]
  resources: [sandboxes]
  verbs: [get, list, watch, patch]
`

// pendingTemplate's sandboxes are never scheduled, so never Ready: for timeouts and cancellations.
const pendingTemplate = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: python-pending}
spec:
  podTemplate:
    spec:
      nodeSelector: {sandbox-e2e/no-such-node: "true"}
      containers: [{name: agent, image: ghcr.io/example/agent:latest}]
`

// TestPythonSDK runs the Python SDK's end-to-end tests (clients/python/tests/e2e, pytest) as a
// claim-only tenant: the sync and async lifecycles from a template and a warm pool, commands,
// files, streaming, stdin, timeouts, port-forward, proxy, logs, suspend and resume (as an
// operator; refused to the tenant), the errors and the rollback of failed creates, and 50
// concurrent sandboxes in one event loop.
func TestPythonSDK(t *testing.T) {
	t.Parallel()
	if err := exec.Command(python, "-c", "import kubernetes, aiohttp, pytest").Run(); err != nil {
		t.Fatalf("%s lacks the Python SDK's packages (%v): run hack/python-deps.sh", python, err)
	}
	ns := newRealNamespace(t)
	forbidden := newRealNamespace(t)
	port, realNode := applyPythonHTTPTemplate(t, ns)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "python-sdk", "Disallowed", "v1")+"---\n"+
		fmt.Sprintf(warmPool, "python-pool", 2, "python-sdk", "Recreate")+"---\n"+pendingTemplate+"---\n"+sandboxOperatorRole)
	_, tenantKC := newClaimTenant(t, ns)

	operator := "python-operator-" + randSuffix(5)
	operatorKC := newUser(t, operator)
	kubectl(t, "create", "rolebinding", "python-operator-claims", "-n", ns, "--role=claim-user", "--user="+operator)
	kubectl(t, "create", "rolebinding", "python-operator-sandboxes", "-n", ns, "--role=sandbox-operator", "--user="+operator)
	waitCanI(t, "patch", "sandboxes", "-n", ns, "--as="+operator)
	setNamespace(t, operatorKC, ns)
	waitPoolReady(t, ns, "python-pool", 2)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "pytest", "tests/e2e", "-q", "-p", "no:cacheprovider", "-rs")
	cmd.Dir = filepath.Join(repoRoot, "clients/python")
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+filepath.Join(repoRoot, "clients/python/src"),
		"PYTHONDONTWRITEBYTECODE=1",
		"SANDBOX_E2E_KUBECONFIG="+tenantKC,
		"SANDBOX_E2E_OPERATOR_KUBECONFIG="+operatorKC,
		"SANDBOX_E2E_NAMESPACE="+ns,
		"SANDBOX_E2E_FORBIDDEN_NAMESPACE="+forbidden,
		"SANDBOX_E2E_TEMPLATE=python-sdk",
		"SANDBOX_E2E_POOL=python-pool",
		"SANDBOX_E2E_HTTP_TEMPLATE=python-http",
		"SANDBOX_E2E_HTTP_PORT="+strconv.Itoa(port),
		"SANDBOX_E2E_PENDING_TEMPLATE=python-pending",
		"SANDBOX_E2E_REAL_NODE="+realNode,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pytest clients/python/tests/e2e: %v\n%s", err, out)
	}
	t.Logf("pytest clients/python/tests/e2e:\n%s", out)
}

// realHTTPTemplate serves on port 8080 of a real container what serveSandboxHTTP serves on kwok.
const realHTTPTemplate = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: python-http}
spec:
  podTemplate:
    spec:
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
        command: [python3, -c]
        args:
        - |
          import http.server
          class H(http.server.BaseHTTPRequestHandler):
              def do_GET(self):
                  body = b"ok\n" if self.path == "/healthz" else ("hello from " + self.path.split("?")[0]).encode()
                  self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
          http.server.ThreadingHTTPServer(("", 8080), H).serve_forever()
        ports: [{name: http, containerPort: 8080}]
`

// applyPythonHTTPTemplate makes the template python-http, whose sandboxes serve HTTP, and returns
// its port and "1" when the plane has a real node (label type=real) to run it on. On kwok's nodes
// it is a host-network pod served by this test (applyHTTPTemplate): one per node at a time, so
// only the tests of port-forward and proxy use it.
func applyPythonHTTPTemplate(t *testing.T, ns string) (port int, realNode string) {
	t.Helper()
	if strings.TrimSpace(kubectl(t, "get", "nodes", "-l", "type=real", "-o", "name")) == "" {
		return applyHTTPTemplate(t, ns, "python-http"), "0"
	}
	applyYAML(t, ns, realHTTPTemplate)
	return 8080, "1"
}

// setNamespace makes ns the namespace of kubeconfig's current context.
func setNamespace(t *testing.T, kubeconfig, ns string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = ns
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
}
