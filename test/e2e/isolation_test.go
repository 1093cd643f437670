// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// The plane's isolation (issue 43): what a tenant's sandbox, or a namespace's edit user, cannot
// reach of the machine that runs the plane. Each test tries the attack as the weakest identity
// that could and shows it fails with the victim unchanged, while an honest client still works.

// privilegedNamespace is newRealNamespace whose Pod Security level an administrator raised to
// privileged: what a tenant could get at most, so the tests below show the layer after Pod
// Security holding on its own.
func privilegedNamespace(t *testing.T) string {
	t.Helper()
	ns := newRealNamespace(t)
	kubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=privileged")
	return ns
}

// newEditor makes a user bound to the edit ClusterRole in ns and returns its kubeconfig.
func newEditor(t *testing.T, ns string) string {
	t.Helper()
	editor := "editor-" + randSuffix(5)
	kc := newUser(t, editor)
	bindClusterRole(t, ns, editor, "edit")
	waitCanI(t, "create", "sandboxes.agents.x-k8s.io", "-n", ns, "--as="+editor)
	waitCanI(t, "create", "sandboxes/proxy", "-n", ns, "--as="+editor)
	return kc
}

// TestHostNetworkSandboxReachesNoHostPort (issue 43 item 2): an edit user's host-network sandbox
// declares the ports of the plane's etcd and kube-apiserver and kubelet's; on the real node its
// address and network namespace are the machine's. The proxy, exec, attach and port-forward
// refuse it (403 naming the host network) and nothing of the plane answers; on a kwok node, whose
// address is one of its own, the proxy reaches nothing but what listens there. The editor's
// ordinary sandbox is proxied as before.
func TestHostNetworkSandboxReachesNoHostPort(t *testing.T) {
	t.Parallel()
	requireRealNode(t)
	ns := privilegedNamespace(t)
	kc := newEditor(t, ns)
	editor := restConfig(t, kc)

	ports := map[string]int{"etcd": 2379, "api": 6443, "kubelet": 10250, "kwok": 10247}
	var declared []string
	for name, port := range ports {
		declared = append(declared, fmt.Sprintf("{name: %s, containerPort: %d}", name, port))
	}
	hostNet := func(name, placement string) string {
		return fmt.Sprintf("apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata: {name: %s}\nspec:\n  podTemplate: {spec: {hostNetwork: true, terminationGracePeriodSeconds: 1, %scontainers: [%s]}}\n",
			name, placement, shellContainer("agent", "ports: ["+strings.Join(declared, ", ")+"]"))
	}
	kubectlAsStdin(t, kc, hostNet("on-real", "nodeSelector: {type: real}, ")+"---\n"+hostNet("on-kwok", onKwok+", ")+
		"---\n"+fmt.Sprintf("apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata: {name: honest}\nspec:\n  podTemplate: {spec: %s}\n", httpPodSpec),
		"apply", "-n", ns, "-f", "-")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/on-real", "sandbox/on-kwok", "sandbox/honest", "--timeout=120s")
	if node := jsonpath(t, ns, "{.spec.nodeName}", "pod", "on-real"); node != "local-node" {
		t.Fatalf("the host-network sandbox's pod runs on %q, not the real node", node)
	}

	base := "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes/"
	t.Run("real node: proxy, exec, attach and port-forward refused", func(t *testing.T) {
		for name, port := range ports {
			code, body, _ := proxyCall(t, editor, "GET", fmt.Sprintf("%son-real:%d/proxy/version", base, port), "", nil)
			if code != http.StatusForbidden || !strings.Contains(statusMessage(t, body), "host network") {
				t.Errorf("proxy to the %s port %d of the real node's host-network sandbox: %d %q; want 403 naming the host network", name, port, code, body)
			}
		}
		for _, sub := range []string{"exec?command=id&stdout=true", "attach?stdout=true", "portforward?ports=2379"} {
			code, body, _ := proxyCall(t, editor, "POST", base+"on-real/"+sub, "", nil)
			if code != http.StatusForbidden || !strings.Contains(statusMessage(t, body), "host network") {
				t.Errorf("%s on the real node's host-network sandbox: %d %q; want 403 naming the host network", sub, code, body)
			}
		}
	})

	t.Run("kwok node: nothing of the plane answers at its address", func(t *testing.T) {
		for name, port := range ports {
			code, body, _ := proxyCall(t, editor, "GET", fmt.Sprintf("%son-kwok:%d/proxy/version", base, port), "", nil)
			// Nothing listens on the plane's ports at kwok's address but kwok itself, which speaks TLS.
			if code == http.StatusOK || strings.Contains(body, "gitVersion") || strings.Contains(body, "etcdserver") {
				t.Errorf("proxy to the %s port %d of a kwok host-network sandbox answered: %d %q", name, port, code, body)
			}
		}
	})

	t.Run("the editor is no cluster admin", func(t *testing.T) {
		if _, _, err := kubectlAsErr(t, kc, "get", "secrets", "-n", "kube-system"); err == nil {
			t.Errorf("the editor reads kube-system's secrets")
		}
	})

	t.Run("an honest sandbox is proxied", func(t *testing.T) {
		code, body, _ := proxyCall(t, editor, "GET", base+"honest:http/proxy/healthz", "", nil)
		if code != http.StatusOK || body != "ok\n" {
			t.Errorf("proxy to the editor's own sandbox: %d %q; want 200 ok", code, body)
		}
	})
}

// TestPodSecurityRefusesHostAccess (issue 43 item 4): Pod Security Admission enforces the
// baseline level in tenants' namespaces. An edit user's Sandbox asking for a privileged container
// in the host's PID namespace, and a claim-only tenant's claim of a template mounting the host's
// root, get no pod: each says why on its Ready condition (PodCreationForbidden, naming
// PodSecurity and what it refused) and in a FailedCreate Event, and nothing runs. The tenant's
// claim of an ordinary template, and one in a user namespace (hostUsers: false), run; once an
// administrator labels the namespace privileged, the refused Sandbox gets its pod.
func TestPodSecurityRefusesHostAccess(t *testing.T) {
	t.Parallel()
	ns, tenantKC, client := realNodeTenant(t)
	kc := newEditor(t, ns)
	kubectlAsStdin(t, kc, `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: root-on-host}
spec:
  podTemplate: {spec: {hostPID: true, terminationGracePeriodSeconds: 1, containers: [`+
		shellContainer("agent", "securityContext: {privileged: true}")+`]}}
---
`+realNodeTemplate("host-root", "volumes: [{name: host, hostPath: {path: /}}], ",
		shellContainer("agent", "volumeMounts: [{name: host, mountPath: /host, readOnly: true}]")),
		"apply", "-n", ns, "-f", "-")
	kubectlAsStdin(t, tenantKC, "apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nmetadata: {name: grab}\nspec: {sandboxTemplateRef: {name: host-root}}\n",
		"create", "-n", ns, "-f", "-")

	refusals := map[string][]string{
		"sandbox/root-on-host": {"PodSecurity", "baseline", "privileged", "hostPID"},
		"sandboxclaim/grab":    {"PodSecurity", "baseline", "hostPath"},
	}
	for ref, want := range refusals {
		kubectl(t, "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=PodCreationForbidden`, ref, "--timeout=90s")
		msg := kubectl(t, "get", "-n", ns, ref, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
		expectContains(t, ref+" Ready message", msg, want...)
	}
	events := kubectl(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=root-on-host,reason=FailedCreate", "-o", "jsonpath={.items[*].message}")
	expectContains(t, "root-on-host's FailedCreate Event", events, "PodSecurity", "privileged")
	if pods := kubectl(t, "get", "pods", "-n", ns, "-o", "name"); strings.Contains(pods, "root-on-host") || strings.Contains(pods, "grab") {
		t.Errorf("a refused sandbox has a pod:\n%s", pods)
	}

	t.Run("honest claims run", func(t *testing.T) {
		for _, template := range []string{"shell", "userns"} {
			sb := claimReal(t, client, ns, template, "honest-"+template)
			if out := runOK(t, sb, "echo", "ran"); out != "ran\n" {
				t.Errorf("%s: echo printed %q", template, out)
			}
		}
	})

	t.Run("an administrator allows it", func(t *testing.T) {
		kubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=privileged")
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/grab", "--timeout=120s")
	})
}

// forkBomb forks children (each then sleeping) until fork fails or 5000 run, prints how many it
// made and why it stopped, and kills them: a sandbox's process bomb, which the pod's pids limit
// stops well before the machine's (NODE_POD_PIDS_LIMIT, 1024 by default).
const forkBomb = `import os, signal
kids, why = [], "none"
while len(kids) < 5000:
    try:
        pid = os.fork()
    except OSError as e:
        why = e.strerror
        break
    if pid == 0:
        try:
            os.execv("/bin/sleep", ["sleep", "600"])
        finally:
            os._exit(1)
    kids.append(pid)
print(len(kids), why)
for k in kids:
    os.kill(k, signal.SIGKILL)
for k in kids:
    os.waitpid(k, 0)
`

// TestSandboxLimits (issue 43 item 6): a claim-only tenant's sandbox runs a fork bomb, which stops
// at the pod's pids limit while the node stays Ready and another sandbox runs commands; the
// sandbox runs under containerd's RuntimeDefault seccomp profile, which refuses a user namespace
// (allowed to any process without it).
func TestSandboxLimits(t *testing.T) {
	t.Parallel()
	ns, _, client := realNodeTenant(t)
	bomb := claimReal(t, client, ns, "shell", "bomb")
	other := claimReal(t, client, ns, "shell", "other")

	t.Run("a fork bomb stops at the pod's limit", func(t *testing.T) {
		out := strings.Fields(runOK(t, bomb, "python3", "-c", forkBomb))
		if len(out) < 2 || out[0] == "5000" || out[1] != "Resource" {
			t.Fatalf("the fork bomb: %q; want it stopped by fork failing (Resource temporarily unavailable) before 5000", out)
		}
		t.Logf("the fork bomb made %s processes", out[0])
		if got := kubectl(t, "get", "node", "local-node", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`); got != "True" {
			t.Errorf("the node is Ready=%q after the fork bomb", got)
		}
		if got := runOK(t, other, "echo", "still here"); got != "still here\n" {
			t.Errorf("another sandbox after the fork bomb: %q", got)
		}
		if got := runOK(t, bomb, "echo", "recovered"); got != "recovered\n" {
			t.Errorf("the bomb's sandbox once its children are gone: %q", got)
		}
	})

	t.Run("seccomp RuntimeDefault", func(t *testing.T) {
		if got := runOK(t, bomb, "grep", "^Seccomp:", "/proc/self/status"); !strings.Contains(got, "2") {
			t.Errorf("/proc/self/status in the sandbox: %q; want Seccomp: 2 (a filter)", got)
		}
		// unshare(CLONE_NEWUSER) needs no capability; RuntimeDefault refuses it without CAP_SYS_ADMIN.
		res := run(t, bomb, "python3", "-c", "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "+
			"r = libc.unshare(0x10000000); print(r, os.strerror(ctypes.get_errno()) if r else 'created')")
		if !strings.Contains(res.Stdout, "Operation not permitted") {
			t.Errorf("unshare(CLONE_NEWUSER) in the sandbox: %q %q; want Operation not permitted", res.Stdout, res.Stderr)
		}
	})
}

// TestHostPortNotOnLoopback (issue 43 item 6): an edit user's sandbox (in a namespace an
// administrator labelled privileged: baseline refuses hostPort) declares a hostPort. It serves on
// the node's address, as a hostPort should, but never on the machine's 127.0.0.1, and the
// bridge does not route loopback addresses (route_localnet stays 0).
func TestHostPortNotOnLoopback(t *testing.T) {
	t.Parallel()
	requireRealNode(t)
	ns := privilegedNamespace(t)
	kc := newEditor(t, ns)
	const hostPort = 18937
	spec := strings.Replace(httpPodSpec, "ports: [{name: http, containerPort: 8080}]",
		fmt.Sprintf("ports: [{name: http, containerPort: 8080, hostPort: %d}]", hostPort), 1)
	kubectlAsStdin(t, kc, fmt.Sprintf("apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata: {name: hostport}\nspec:\n  podTemplate: {spec: %s}\n", spec),
		"apply", "-n", ns, "-f", "-")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/hostport", "--timeout=120s")
	nodeIP := kubectl(t, "get", "node", "local-node", "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`)

	if body := httpGetEventually(t, fmt.Sprintf("http://%s:%d/on-the-node", nodeIP, hostPort)); body != "hello from /on-the-node" {
		t.Errorf("the hostPort at the node's address: %q", body)
	}
	if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", hostPort), 5*time.Second); err == nil {
		conn.Close()
		t.Errorf("the hostPort %d answers on the machine's 127.0.0.1", hostPort)
	}
	bridge := cmp.Or(os.Getenv("NODE_BRIDGE"), "sandbox0")
	if b, err := os.ReadFile("/proc/sys/net/ipv4/conf/" + bridge + "/route_localnet"); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Errorf("route_localnet on %s: %q, %v; want 0", bridge, b, err)
	}
}

// TestKwokExecIsNoRootShell (issue 43 item 3): kwok runs a pod's exec on the machine itself. A
// claim-only tenant claims a template that tolerates kwok's taint, and an edit user's Sandbox
// names a kwok node outright (nodeName skips the scheduler and the taint): in both, a command
// runs as an unprivileged user, not root, and cannot write what root owns on the machine. kwok's
// kubelet API, where its Nodes say it is, takes only kube-apiserver's kubelet client certificate.
func TestKwokExecIsNoRootShell(t *testing.T) {
	t.Parallel()
	requireRealNode(t) // the plane runs as root: kwok's exec would be root's
	ns := newRealNamespace(t)
	applyYAML(t, ns, realNodeTemplate("on-kwok", onKwok+", ", "{name: agent, image: "+sandboxImage+"}"))
	_, tenantKC := newClaimTenant(t, ns)
	tenant, err := sandbox.NewClient(restConfig(t, tenantKC))
	if err != nil {
		t.Fatal(err)
	}
	claimed := claimReal(t, tenant, ns, "on-kwok", "tolerating")

	kc := newEditor(t, ns)
	kubectlAsStdin(t, kc, "apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata: {name: named}\nspec:\n  podTemplate: {spec: {nodeName: kwok-node-0, containers: [{name: agent, image: "+sandboxImage+"}]}}\n",
		"apply", "-n", ns, "-f", "-")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/named", "--timeout=90s")

	victim := filepath.Join(repoRoot, "_output/local/kwok-exec-victim")
	if err := os.WriteFile(victim, []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(victim) })
	check := func(t *testing.T, uid, wrote string) {
		if strings.TrimSpace(uid) == "0" || strings.TrimSpace(uid) == "" {
			t.Errorf("id -u on a kwok pod: %q; want an unprivileged user", uid)
		}
		if b, err := os.ReadFile(victim); err != nil || string(b) != "root's\n" {
			t.Errorf("root's file after the write (%s): %q, %v", wrote, b, err)
		}
	}
	t.Run("a claim of a template tolerating kwok", func(t *testing.T) {
		uid := runOK(t, claimed, "id", "-u")
		res := run(t, claimed, "sh", "-c", "echo planted > "+victim)
		check(t, uid, res.Stderr)
	})
	t.Run("an edit user's Sandbox naming a kwok node", func(t *testing.T) {
		uid := kubectlAs(t, kc, "exec", "-n", ns, "named", "--", "id", "-u")
		_, stderr, _ := kubectlAsErr(t, kc, "exec", "-n", ns, "named", "--", "sh", "-c", "echo planted > "+victim)
		check(t, uid, stderr)
	})

	t.Run("the kubelet port takes only kube-apiserver", func(t *testing.T) {
		addr := net.JoinHostPort(kwokAddress(t), cmp.Or(os.Getenv("KWOK_PORT"), "10247"))
		get := func(cert string) (int, error) {
			client := tlsClient(t, "ca", cert)
			// exec of id in the edit user's pod, as kube-apiserver would ask kwok for it.
			resp, err := client.Post("https://"+addr+"/exec/"+ns+"/named/agent?command=id&output=1", "", nil)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		}
		for _, cert := range []string{"", "admin", "kwok"} {
			if code, err := get(cert); err == nil {
				t.Errorf("kwok's kubelet API with %q's certificate answered %d; want the TLS handshake refused", cert, code)
			}
		}
		if _, err := get("kube-apiserver-kubelet-client"); err != nil {
			t.Errorf("kwok's kubelet API refuses kube-apiserver's kubelet client: %v", err)
		}
	})
}
