// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sandboxAPIServerURL is sandbox-apiserver's own address in the local control plane.
func sandboxAPIServerURL() string {
	port := os.Getenv("SANDBOX_APISERVER_PORT")
	if port == "" {
		port = "8443"
	}
	return "127.0.0.1:" + port
}

// TestServerRefusesWithoutCredentials: sandbox-apiserver serves TLS only, and a request without
// valid credentials, straight to it or through kube-apiserver, reads nothing.
func TestServerRefusesWithoutCredentials(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, fourKinds)
	addr := sandboxAPIServerURL()
	path := "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes"
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// No client certificate: only the server's identity is not checked here.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the test is about the client side
	}}

	// Plain HTTP on the secure port gets no API answer.
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + path)
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "SandboxList") {
			t.Errorf("plain HTTP: %d %s, want the TLS server's 400 and no data", resp.StatusCode, body)
		}
	}

	// HTTPS without credentials is anonymous, and anonymous may not read sandboxes.
	for _, url := range []string{"https://" + addr + path} {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s without credentials: %d %s, want 401 or 403", url, resp.StatusCode, body)
		}
		if strings.Contains(string(body), `"kind":"SandboxList"`) {
			t.Errorf("GET %s without credentials returned data", url)
		}
	}
	// A bearer token nobody issued is refused by kube-apiserver before it reaches us.
	out, stderr, err := kubectlWith(t, kubectlOptions{}, "get", "sandboxes", "-n", ns, "--token=not-a-real-token",
		"--kubeconfig=/dev/null", "--server=https://127.0.0.1:"+kubeAPIServerPort(), "--insecure-skip-tls-verify")
	if err == nil {
		t.Errorf("a made-up token listed sandboxes: %s", out)
	}
	expectContains(t, "made-up token", stderr, "Unauthorized")
}

// kubeAPIServerPort is the local kube-apiserver's port.
func kubeAPIServerPort() string {
	if p := os.Getenv("KUBE_APISERVER_PORT"); p != "" {
		return p
	}
	return "6443"
}

// TestTenantLimits: a tenant allowed only claims cannot create Sandboxes, write a claim's status
// or scale a sandbox; restricted label domains cannot reach pods through a claim; a claim never
// uses a template or a warm pool of another namespace.
func TestTenantLimits(t *testing.T) {
	t.Parallel()
	ns, other := newNamespace(t), newNamespace(t)
	user := "tenant-" + randSuffix(5)
	kc := newUser(t, user)
	grantTenant(t, ns, user)
	waitCanI(t, "create", "sandboxclaims", "-n", ns, "--as="+user)

	// Another namespace has the template and a warm pool of it; the tenant's has neither.
	applyYAML(t, other, fmt.Sprintf(agentTemplate, "t", "Disallowed", "v1")+"---\n"+fmt.Sprintf(warmPool, "pool", 2, "t", "OnReplenish"))
	waitPoolReady(t, other, "pool", 2)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "admins-only", "Disallowed", "v1")+`---
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: existing}
spec: {podTemplate: {spec: {containers: [{name: a, image: ghcr.io/example/agent:latest}]}}}
`)

	for _, tc := range []struct {
		what  string
		stdin string
		args  []string
		want  string
	}{
		{"create a Sandbox", `{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"x"},"spec":{"podTemplate":{"spec":{"containers":[{"name":"a","image":"b"}]}}}}`,
			[]string{"create", "-n", ns, "-f", "-"}, "forbidden"},
		{"scale a sandbox", "", []string{"scale", "-n", ns, "sandbox/existing", "--replicas=0"}, "forbidden"},
	} {
		_, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: tc.stdin}, tc.args...)
		expectFailure(t, tc.what, strings.ToLower(stderr), err, tc.want)
	}
	kubectlAsStdin(t, kc, claimYAML("mine"), "create", "-n", ns, "-f", "-")
	_, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kc}, "patch", "-n", ns, "sandboxclaim/mine",
		"--subresource=status", "--type=merge", "-p", `{"status":{"sandbox":{"name":"stolen"}}}`)
	expectFailure(t, "write a claim's status", strings.ToLower(stderr), err, "forbidden")

	// A restricted domain in additionalPodMetadata is refused at the API.
	_, stderr, err = kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: sneaky}
spec:
  sandboxTemplateRef: {name: t}
  additionalPodMetadata: {labels: {"node-role.kubernetes.io/control-plane": ""}}
`}, "create", "-n", ns, "-f", "-")
	expectFailure(t, "restricted label", stderr, err, "spec.additionalPodMetadata.labels")

	// The claim's template "t" lives only in the other namespace: the claim gets nothing from it,
	// not even a warm member of the other namespace's pool.
	kubectl(t, "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=TemplateNotFound`, "sandboxclaim/mine", "--timeout=60s")
	_, client := adminClients(t)
	list, err := client.AgentsV1beta1().Sandboxes(other).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range list.Items {
		if ref := metav1.GetControllerOf(&sb); ref == nil || ref.Kind != "SandboxWarmPool" {
			t.Errorf("sandbox %s/%s of the other namespace's pool is now controlled by %v", other, sb.Name, ref)
		}
	}
	if out := kubectl(t, "get", "sandboxes", "-n", ns, "-o", "name"); strings.TrimSpace(out) != "sandbox.agents.x-k8s.io/existing" {
		t.Errorf("sandboxes in the tenant's namespace: %q, want only the admin's", out)
	}
}
