// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// The real node's network: kube-proxy routes Services, CoreDNS answers for the cluster domain,
// kube-router's firewall enforces NetworkPolicies (docs/local-plane.md).

// dialProbe is a python3 program printing "open" when a TCP connection to argv[1]:argv[2] is
// made within 3 seconds, and what stopped it otherwise.
const dialProbe = `import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
    print("open")
except socket.timeout:
    print("timeout")
except OSError as e:
    print("error", e.errno)
`

// httpGetProbe prints the body of a GET of argv[1] (5 seconds at most), or the error.
const httpGetProbe = `import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode(), end="")
except Exception as e:
    print("error", e)
`

// resolveProbe prints the IPv4 address argv[1] resolves to, or the error.
const resolveProbe = `import socket, sys
try:
    print(socket.gethostbyname(sys.argv[1]))
except OSError as e:
    print("error", e)
`

// kubernetesProbe GETs /version from kube-apiserver through the kubernetes Service, as an
// in-cluster client does: its name, the cluster CA and the pod's service account token.
const kubernetesProbe = `import json, ssl, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
ctx = ssl.create_default_context(cafile=sa + "ca.crt")
req = urllib.request.Request("https://kubernetes.default.svc/version",
    headers={"Authorization": "Bearer " + open(sa + "token").read()})
print(json.load(urllib.request.urlopen(req, context=ctx, timeout=5))["gitVersion"])
`

// sleeperPod is an admin's pod of the sandbox image that waits, in no NetworkPolicy: the
// control that shows a target is reachable when no policy stands in the way.
const sleeperPod = `apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: %s}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: localhost/sandbox:local, command: [sleep, "3600"]}
`

// webPodAndService is an admin's HTTP server (python3 serving "served by web") and its ClusterIP
// Service on port 80.
const webPodAndService = `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: localhost/sandbox:local
    workingDir: /tmp
    command: [sh, -c, "echo served by web > index.txt; exec python3 -m http.server 8080"]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`

// podProbe runs python3 program with args in an admin's pod and returns its output.
func podProbe(t *testing.T, ns, pod, program string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(kubectl(t, append([]string{"exec", "-n", ns, pod, "--", "python3", "-c", program}, args...)...))
}

// sandboxProbe runs python3 program with args in sb, as its tenant, and returns its output.
func sandboxProbe(t *testing.T, sb *sandbox.Sandbox, program string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(runOK(t, sb, append([]string{"python3", "-c", program}, args...)...))
}

// realNodeIP is the real node's address, on its bridge.
func realNodeIP(t *testing.T) string {
	t.Helper()
	ip := kubectl(t, "get", "nodes", "-l", "type=real", "-o", `jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}`)
	if net.ParseIP(ip) == nil {
		t.Fatalf("real node's InternalIP: %q", ip)
	}
	return ip
}

// waitPodsReady waits until the pods in ns are Ready.
func waitPodsReady(t *testing.T, ns string, pods ...string) {
	t.Helper()
	for _, p := range pods {
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "pod/"+p, "--timeout=90s")
	}
}

// TestRealNodeServicesAndDNS: from a pod on the real node, a ClusterIP Service answers by its
// cluster IP, its full name and its short name; kubernetes.default.svc reaches kube-apiserver
// with the cluster's CA and the pod's token; and the network components listen on loopback and
// the node's address only.
func TestRealNodeServicesAndDNS(t *testing.T) {
	t.Parallel()
	requireRealNode(t)
	ns := newRealNamespace(t)
	applyYAML(t, ns, webPodAndService+"---\n"+fmt.Sprintf(sleeperPod, "client", "client"))
	waitPodsReady(t, ns, "web", "client")

	clusterIP := jsonpath(t, ns, "{.spec.clusterIP}", "service", "web")
	for _, url := range []string{
		"http://" + clusterIP + "/index.txt",
		"http://web." + ns + ".svc.cluster.local/index.txt",
		"http://web/index.txt",
	} {
		// The Service's rules follow the pod's readiness by a sync of kube-proxy.
		eventually(t, waitTimeout, "GET "+url+" from a pod", func() (bool, string) {
			got := podProbe(t, ns, "client", httpGetProbe, url)
			return got == "served by web", got
		})
	}
	if got := podProbe(t, ns, "client", resolveProbe, "kubernetes.default"); got != "10.0.0.1" {
		t.Errorf("kubernetes.default resolves to %q; want the kubernetes Service's 10.0.0.1", got)
	}
	want := jsonVersion(t)
	if got := podProbe(t, ns, "client", kubernetesProbe); got != want {
		t.Errorf("kube-apiserver's version through kubernetes.default.svc: %q; want %q", got, want)
	}

	nodeIP := realNodeIP(t)
	for _, name := range []string{"kube-proxy", "kube-router", "coredns", "kubernetes-service"} {
		pid, err := os.ReadFile(filepath.Join(repoRoot, "_output/local/pids", name+".pid"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := exec.Command("ss", "-Hltunp").Output()
		if err != nil {
			t.Fatalf("ss: %v", err)
		}
		for line := range strings.SplitSeq(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 7 || !strings.Contains(f[6], "pid="+strings.TrimSpace(string(pid))+",") {
				continue
			}
			host, _, _ := net.SplitHostPort(f[4])
			if host != "127.0.0.1" && host != nodeIP {
				t.Errorf("%s listens on %s; want 127.0.0.1 or the node's %s only", name, f[4], nodeIP)
			}
		}
	}
}

// jsonVersion is kube-apiserver's gitVersion as /version says.
func jsonVersion(t *testing.T) string {
	t.Helper()
	out := kubectl(t, "get", "--raw", "/version")
	i := strings.Index(out, `"gitVersion": "`)
	if i < 0 {
		t.Fatalf("/version: %s", out)
	}
	rest := out[i+len(`"gitVersion": "`):]
	return rest[:strings.Index(rest, `"`)]
}

// metadataListener serves HTTP on ip, which it adds to the interface of the node's address (the
// bridge) for the test: a stand-in for a cloud metadata server in 169.254.0.0/16 (not
// 169.254.169.254 itself, which the machine may use).
func metadataListener(t *testing.T, nodeIP, ip string) string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "-4", "addr", "show", "to", nodeIP).Output()
	if f := strings.Fields(string(out)); err != nil || len(f) < 2 {
		t.Fatalf("the interface of %s: %v %q", nodeIP, err, out)
	}
	dev := strings.Fields(string(out))[1]
	if out, err := exec.Command("ip", "addr", "add", ip+"/32", "dev", dev).CombinedOutput(); err != nil {
		t.Fatalf("ip addr add %s dev %s: %v: %s", ip, dev, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", ip+"/32", "dev", dev).Run() })
	l, err := net.Listen("tcp", ip+":8080")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "instance credentials")
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return net.JoinHostPort(ip, "8080")
}

// policedTemplate is a SandboxTemplate named name serving httpPodSpec with its headless Service
// and the NetworkPolicy rules given (YAML, indented under networkPolicy).
func policedTemplate(name, pod, rules string) string {
	return fmt.Sprintf(`apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: %s}
spec:
  service: true
  podTemplate: {spec: %s}
  networkPolicy:
%s`, name, pod, rules)
}

// waitPoliced waits until kube-router has made the firewall chain of the pod (its rules jump
// there from the pod's address): until then a new pod is not filtered (docs/local-plane.md).
func waitPoliced(t *testing.T, ns, pod string) {
	t.Helper()
	eventually(t, waitTimeout, "kube-router's firewall chain for pod "+ns+"/"+pod, func() (bool, string) {
		out, err := exec.Command("iptables-save", "-t", "filter").Output()
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(out), "name:"+pod+" namespace: "+ns+" "), "no chain yet"
	})
}

// TestRealNodeNetworkPolicy: the server's secure default egress policy, enforced by kube-router on
// the real node, keeps a claim-only tenant's sandbox from the metadata range, the node's own
// ports (kubelet, DNS, kube-apiserver through its Service) and another tenant's sandbox, by pod
// IP and by Service, while a tenant whose template opens the way reaches that sandbox by its
// Service's name; the victim sees no connection from the attacker and serves its own tenant.
// Each target is shown reachable from a pod without a policy, so a refusal is the policy's.
func TestRealNodeNetworkPolicy(t *testing.T) {
	t.Parallel()
	requireRealNode(t)
	nodeIP := realNodeIP(t)
	metadata := metadataListener(t, nodeIP, "169.254.123.45")

	// The victim's namespace: its "web" template admits the friend's namespace on 8080 only.
	victimNS, _, victimClient := realNodeTenant(t)
	attackerNS, _, attackerClient := realNodeTenant(t)
	friendNS, _, friendClient := realNodeTenant(t)
	applyYAML(t, victimNS, policedTemplate("guarded", httpPodSpec, fmt.Sprintf(`    ingress:
    - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}}]
      ports: [{port: 8080}]
`, friendNS)))
	// The friend's template opens egress to the victim's namespace on 8080, and DNS (CoreDNS
	// answers on the node's address, where kube-dns's cluster IP leads).
	applyYAML(t, friendNS, policedTemplate("client", fmt.Sprintf(`{terminationGracePeriodSeconds: 1, containers: [%s]}`, shellContainer("agent", "")),
		fmt.Sprintf(`    egress:
    - to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %s}}}]
      ports: [{port: 8080}]
    - to: [{ipBlock: {cidr: %s/32}}]
      ports: [{port: 53, protocol: UDP}, {port: 53, protocol: TCP}]
`, victimNS, nodeIP)))

	victim := claimReal(t, victimClient, victimNS, "guarded", "victim")
	attacker := claimReal(t, attackerClient, attackerNS, "shell", "attacker")
	friend := claimReal(t, friendClient, friendNS, "client", "friend")
	victimPod, attackerPod := victim.SandboxName(), attacker.SandboxName()
	for _, p := range []struct{ ns, pod string }{{victimNS, victimPod}, {attackerNS, attackerPod}, {friendNS, friend.SandboxName()}} {
		waitPoliced(t, p.ns, p.pod)
	}
	victimIP := jsonpath(t, victimNS, "{.status.podIP}", "pod", victimPod)
	attackerIP := jsonpath(t, attackerNS, "{.status.podIP}", "pod", attackerPod)
	// The victim's Service as a tenant admin would add it: a cluster IP kube-proxy routes.
	applyYAML(t, victimNS, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: web-cluster-ip}\n"+
		"spec: {selector: {agents.x-k8s.io/sandbox-template-ref-hash: %s}, ports: [{port: 80, targetPort: 8080}]}\n",
		jsonpath(t, victimNS, `{.metadata.labels.agents\.x-k8s\.io/sandbox-template-ref-hash}`, "pod", victimPod)))
	victimClusterIP := jsonpath(t, victimNS, "{.spec.clusterIP}", "service", "web-cluster-ip")

	// The honest paths: the friend resolves the victim's Service by name and gets its page, by
	// the headless name and the cluster IP.
	victimName := victim.SandboxName() + "." + victimNS + ".svc.cluster.local"
	eventually(t, waitTimeout, "the friend to resolve "+victimName, func() (bool, string) {
		got := sandboxProbe(t, friend, resolveProbe, victimName)
		return got == victimIP, got
	})
	for _, url := range []string{"http://" + victimName + ":8080/hello", "http://" + victimClusterIP + "/hello"} {
		eventually(t, waitTimeout, "the friend's GET "+url, func() (bool, string) {
			got := sandboxProbe(t, friend, httpGetProbe, url)
			return got == "hello from /hello", got
		})
	}

	// The controls: from a pod under no policy, every target the attacker tries is open.
	controlNS := newRealNamespace(t)
	applyYAML(t, controlNS, fmt.Sprintf(sleeperPod, "control", "control"))
	waitPodsReady(t, controlNS, "control")
	mdHost, mdPort, _ := net.SplitHostPort(metadata)
	targets := []struct{ what, host, port string }{
		{"the metadata range", mdHost, mdPort},
		{"kubelet on the node's address", nodeIP, "10250"},
		{"CoreDNS on the node's address", nodeIP, "53"},
		{"kube-apiserver through the kubernetes Service", "10.0.0.1", "443"},
	}
	for _, tg := range targets {
		if got := podProbe(t, controlNS, "control", dialProbe, tg.host, tg.port); got != "open" {
			t.Fatalf("control: %s (%s:%s) is %s from a pod under no policy; the test proves nothing", tg.what, tg.host, tg.port, got)
		}
	}

	// The attacks, as the claim-only tenant in its own sandbox.
	targets = append(targets,
		struct{ what, host, port string }{"the other tenant's sandbox by pod IP", victimIP, "8080"},
		struct{ what, host, port string }{"the other tenant's sandbox by its Service's cluster IP", victimClusterIP, "80"})
	for _, tg := range targets {
		if got := sandboxProbe(t, attacker, dialProbe, tg.host, tg.port); got == "open" {
			t.Errorf("attack: the claim-only tenant's sandbox reaches %s (%s:%s)", tg.what, tg.host, tg.port)
		}
	}
	// The victim is unchanged: it served its friend, never the attacker, and still serves its
	// own tenant through the proxy.
	if status, body := proxyGet(t, victim, "http", "/mine"); status != http.StatusOK || body != "hello from /mine" {
		t.Errorf("the victim's tenant through the proxy: %d %q", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	logs, err := victim.Logs(ctx, sandbox.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log, _ := io.ReadAll(logs)
	logs.Close()
	if strings.Contains(string(log), attackerIP+" ") {
		t.Errorf("the victim's server logged a request from the attacker's %s:\n%s", attackerIP, indent(string(log)))
	}
	if !strings.Contains(string(log), "/hello") {
		t.Errorf("the victim's server did not log the friend's requests:\n%s", indent(string(log)))
	}
}

// TestRealNodeUnsyncedPodFailsClosed: a pod kube-router has not synced yet has no network (the
// plane drops its traffic) rather than an unfiltered one; once kube-router syncs it, the pod,
// under no policy, reaches the node. kube-router is frozen (SIGSTOP) meanwhile, so the test does
// not run beside the parallel ones.
func TestRealNodeUnsyncedPodFailsClosed(t *testing.T) {
	requireRealNode(t)
	nodeIP := realNodeIP(t)
	pidFile, err := os.ReadFile(filepath.Join(repoRoot, "_output/local/pids/kube-router.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidFile)))
	if err != nil {
		t.Fatal(err)
	}
	ns := newRealNamespace(t)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("freezing kube-router: %v", err)
	}
	frozen := true
	resume := func() {
		if frozen {
			_ = syscall.Kill(pid, syscall.SIGCONT)
			frozen = false
		}
	}
	t.Cleanup(resume)
	applyYAML(t, ns, fmt.Sprintf(sleeperPod, "fresh", "fresh"))
	waitPodsReady(t, ns, "fresh")
	if got := podProbe(t, ns, "fresh", dialProbe, nodeIP, "10250"); got == "open" {
		t.Errorf("a pod kube-router has not synced reaches kubelet on the node: its traffic is not held")
	}
	resume()
	waitPoliced(t, ns, "fresh")
	if got := podProbe(t, ns, "fresh", dialProbe, nodeIP, "10250"); got != "open" {
		t.Errorf("once kube-router synced it, the pod under no policy gets %s from kubelet's port; want open", got)
	}
}
