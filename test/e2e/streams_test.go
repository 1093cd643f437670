// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/httpstream"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
)

// The streams tests' sandboxes run on the plane's real node (realnode_test.go): real containers
// of the sandbox image, reached through the kubelet.

// streamURL is the URL of a streaming subresource of a sandbox or claim, with the query of opts.
func streamURL(t *testing.T, cfg *restclient.Config, group, ns, resource, name, subresource string, opts runtime.Object) *url.URL {
	t.Helper()
	u, err := url.Parse(strings.TrimSuffix(cfg.Host, "/") + fmt.Sprintf("/apis/%s/v1beta1/namespaces/%s/%s/%s/%s", group, ns, resource, name, subresource))
	if err != nil {
		t.Fatal(err)
	}
	if opts != nil {
		q, err := clientgoscheme.ParameterCodec.EncodeParameters(opts, corev1.SchemeGroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		u.RawQuery = q.Encode()
	}
	return u
}

// execResult is what a command run through exec gave back.
type execResult struct {
	stdout, stderr string
	err            error
}

// execIn runs command through the exec subresource at u (with the query already set) over
// protocol "websocket" or "spdy", with stdin.
func execIn(t *testing.T, cfg *restclient.Config, u *url.URL, protocol string, stdin io.Reader) execResult {
	t.Helper()
	var executor remotecommand.Executor
	var err error
	switch protocol {
	case "websocket":
		executor, err = remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	case "spdy":
		executor, err = remotecommand.NewSPDYExecutor(cfg, "POST", u)
	default:
		wsExec, wsErr := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
		spdyExec, spdyErr := remotecommand.NewSPDYExecutor(cfg, "POST", u)
		if err = errors.Join(wsErr, spdyErr); err == nil {
			executor, err = remotecommand.NewFallbackExecutor(wsExec, spdyExec, httpstream.IsUpgradeFailure)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: &stdout, Stderr: &stderr}
	err = executor.StreamWithContext(ctx, opts)
	return execResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// execQuery is the query of an exec of command with stdout and stderr, and stdin when asked.
func execQuery(stdin bool, command ...string) *corev1.PodExecOptions {
	return &corev1.PodExecOptions{Command: command, Stdin: stdin, Stdout: true, Stderr: true}
}

// exitCode is the exit code an exec error carries: the kubelet sends it as the status's cause.
func exitCode(err error) (int, bool) {
	var coded exec.CodeExitError
	if errors.As(err, &coded) {
		return coded.Code, true
	}
	return 0, false
}

// streamsTenant sets up a namespace with a template and a claim-only tenant whose Role grants
// claims, use of the template and the streaming subresources of sandboxclaims (no pods/* right,
// no right on sandboxes); it returns the namespace, the tenant's name, kubeconfig and client
// config once the tenant's claim "mine" is Ready.
func streamsTenant(t *testing.T) (ns, tenant, kc string, cfg *restclient.Config) {
	t.Helper()
	requireRealNode(t)
	ns = newRealNamespace(t)
	applyYAML(t, ns, `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: shell}
spec:
  podTemplate:
    metadata:
      annotations: {kubectl.kubernetes.io/default-container: agent}
    spec:
      terminationGracePeriodSeconds: 1
      containers: [`+shellContainer("helper", "")+", "+shellContainer("agent", "")+`]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: claim-streams}
rules:
- apiGroups: [extensions.agents.x-k8s.io]
  resources: [sandboxclaims]
  verbs: [get, list, watch, create, delete]
- apiGroups: [extensions.agents.x-k8s.io]
  resources: [sandboxtemplates]
  verbs: [use]
- apiGroups: [extensions.agents.x-k8s.io]
  resources: [sandboxclaims/exec, sandboxclaims/attach, sandboxclaims/portforward]
  verbs: [get, create]
- apiGroups: [extensions.agents.x-k8s.io]
  resources: [sandboxclaims/log]
  verbs: [get]
`)
	tenant = "stream-tenant-" + randSuffix(5)
	kc = newUser(t, tenant)
	kubectl(t, "create", "rolebinding", "claim-streams", "-n", ns, "--role=claim-streams", "--user="+tenant)
	waitCanI(t, "create", "sandboxclaims", "--subresource=exec", "-n", ns, "--as="+tenant)
	kubectlAsStdin(t, kc, `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: mine}
spec:
  sandboxTemplateRef: {name: shell}
`, "create", "-n", ns, "-f", "-")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/mine", "--timeout=90s")
	return ns, tenant, kc, restConfig(t, kc)
}

// TestSandboxClaimExec: a claim-only tenant runs commands in its claim's sandbox through
// sandboxclaims/exec over WebSocket and SPDY (stdout, stderr, stdin and the exit code come back),
// in the default container, and the Sandbox gets an Event naming the tenant. It has no pods/*
// right: kube-apiserver refuses it pods/exec on the same pod.
func TestSandboxClaimExec(t *testing.T) {
	t.Parallel()
	ns, tenant, _, cfg := streamsTenant(t)
	claimExec := func(opts runtime.Object) *url.URL {
		return streamURL(t, cfg, extensionsGroup, ns, "sandboxclaims", "mine", "exec", opts)
	}
	script := `read line; echo "stdin: $line"; echo "to stderr" >&2; exit 3`
	for _, protocol := range []string{"websocket", "spdy", "fallback"} {
		res := execIn(t, cfg, claimExec(execQuery(true, "sh", "-c", script)), protocol, strings.NewReader("hello from "+protocol+"\n"))
		if res.stdout != "stdin: hello from "+protocol+"\n" || res.stderr != "to stderr\n" {
			t.Errorf("%s: stdout %q, stderr %q (%v); want the line read back and one on stderr", protocol, res.stdout, res.stderr, res.err)
		}
		if code, ok := exitCode(res.err); !ok || code != 3 {
			t.Errorf("%s: error %v; want exit code 3", protocol, res.err)
		}
	}
	if res := execIn(t, cfg, claimExec(execQuery(false, "true")), "websocket", nil); res.err != nil {
		t.Errorf("exec true: %v", res.err)
	}

	// The tenant has no right on pods: the same pod through pods/exec is refused.
	sandbox := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", "mine")
	pod := jsonpath(t, ns, "{.metadata.name}", "pods", sandbox)
	podURL, _ := url.Parse(strings.TrimSuffix(cfg.Host, "/") + "/api/v1/namespaces/" + ns + "/pods/" + pod + "/exec?command=true&stdout=true")
	if res := execIn(t, cfg, podURL, "spdy", nil); res.err == nil || !strings.Contains(res.err.Error(), "forbidden") {
		t.Errorf("the tenant's pods/exec: %v; want forbidden", res.err)
	}

	// Each session is an Event on the Sandbox naming the tenant and the container.
	eventually(t, waitTimeout, "an Exec event naming the tenant", func() (bool, string) {
		out := kubectl(t, "get", "events", "-n", ns, "--field-selector", "reason=Exec,involvedObject.name="+sandbox, "-o", "jsonpath={.items[*].message}")
		return strings.Contains(out, tenant+" runs [\"true\"] in container agent"), out
	})
}

// TestSandboxClaimCopy copies a file into the claim's sandbox and back, byte for byte, as
// kubectl cp does: tar over exec.
func TestSandboxClaimCopy(t *testing.T) {
	t.Parallel()
	ns, _, _, cfg := streamsTenant(t)
	claimExec := func(opts runtime.Object) *url.URL {
		return streamURL(t, cfg, extensionsGroup, ns, "sandboxclaims", "mine", "exec", opts)
	}
	dir := "copy-" + randSuffix(8)
	t.Cleanup(func() { _ = execIn(t, cfg, claimExec(execQuery(false, "rm", "-rf", dir)), "websocket", nil) })
	want := make([]byte, 1<<20+123)
	_, _ = rand.Read(want)

	in := execIn(t, cfg, claimExec(execQuery(true, "sh", "-c", "mkdir -p "+dir+" && tar -xmf - -C "+dir)), "websocket", bytes.NewReader(tarOf(t, "data.bin", want)))
	if in.err != nil {
		t.Fatalf("copying in: %v (stderr %q)", in.err, in.stderr)
	}
	out := execIn(t, cfg, claimExec(execQuery(false, "tar", "-cf", "-", "-C", dir, "data.bin")), "spdy", nil)
	if out.err != nil {
		t.Fatalf("copying out: %v (stderr %q)", out.err, out.stderr)
	}
	got := untarOne(t, out.stdout, "data.bin")
	if !bytes.Equal(got, want) {
		t.Errorf("the file copied in and out differs: %d bytes back; want the same %d bytes", len(got), len(want))
	}
}

// tarOf is a tar archive of one file.
func tarOf(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	if err := w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Now()}); err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func untarOne(t *testing.T, archive, name string) []byte {
	t.Helper()
	r := tar.NewReader(strings.NewReader(archive))
	h, err := r.Next()
	if err != nil || h.Name != name {
		t.Fatalf("the archive copied out: %v, %v; want %s", h, err, name)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestSandboxClaimLogs follows the log of the claim's sandbox with kubectl get --raw (kubectl
// logs addresses pods only) while its main process writes to it.
func TestSandboxClaimLogs(t *testing.T) {
	t.Parallel()
	ns, _, kc, cfg := streamsTenant(t)
	path := "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxclaims/mine/log"
	follow := startWatch(t, kc, 2*waitTimeout, "get", "--raw", path+"?follow=true")
	// The sandbox's main process writes to its log (its stdout, /proc/1/fd/1): a first line, then
	// once the follower has shown it, a second one, which only a followed stream can bring.
	logLine := func() string {
		marker := "log-marker-" + randSuffix(8)
		if res := execIn(t, cfg, streamURL(t, cfg, extensionsGroup, ns, "sandboxclaims", "mine", "exec",
			execQuery(false, "sh", "-c", "echo "+marker+" > /proc/1/fd/1")), "websocket", nil); res.err != nil {
			t.Fatalf("writing to the log: %v", res.err)
		}
		follow.next(t, marker+" in the followed log", func(line string) bool { return line == marker })
		return marker
	}
	logLine()
	marker := logLine()
	if out := kubectlAs(t, kc, "get", "--raw", path+"?tailLines=1000"); !strings.Contains(out, marker+"\n") {
		t.Errorf("the log's last lines do not hold %s", marker)
	}
	_, stderr, err := kubectlAsErr(t, kc, "get", "--raw", path+"?container=nope")
	expectFailure(t, "a log of a container that is not the pod's", stderr, err, `container: Unsupported value: "nope"`)
}

// TestSandboxClaimPortForward forwards a local port to an HTTP server started in the sandbox,
// over SPDY and the WebSocket tunnel.
func TestSandboxClaimPortForward(t *testing.T) {
	t.Parallel()
	ns, _, _, cfg := streamsTenant(t)
	if res := execIn(t, cfg, streamURL(t, cfg, extensionsGroup, ns, "sandboxclaims", "mine", "exec",
		// A forward ends at its first refused connection: the exec returns once the server listens.
		execQuery(false, "sh", "-c", `nohup python3 -c "$0" >/dev/null 2>&1 & `+
			`until python3 -c 'import socket; socket.create_connection(("127.0.0.1", 8080))' 2>/dev/null; do sleep 0.1; done`,
			sandboxHTTPServer)), "websocket", nil); res.err != nil {
		t.Fatalf("starting the sandbox's HTTP server: %v", res.err)
	}
	const port = 8080
	u := streamURL(t, cfg, extensionsGroup, ns, "sandboxclaims", "mine", "portforward", nil)
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	wsDialer, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for protocol, dialer := range map[string]httpstream.Dialer{"spdy": spdyDialer, "websocket": wsDialer} {
		local := forward(t, dialer, port)
		if body := httpGetEventually(t, fmt.Sprintf("http://127.0.0.1:%d/through-%s", local, protocol)); body != "hello from /through-"+protocol {
			t.Errorf("%s: the forwarded server answered %q", protocol, body)
		}
	}
}

// forward starts a port-forward of remote through dialer and returns the local port.
func forward(t *testing.T, dialer httpstream.Dialer, remote int) int {
	t.Helper()
	stop, ready := make(chan struct{}), make(chan struct{})
	var out, errOut bytes.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", remote)}, stop, ready, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward ended: %v (%s)", err, errOut.String())
	case <-time.After(waitTimeout):
		t.Fatal("port-forward not ready")
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("forwarded ports: %v, %v", ports, err)
	}
	return int(ports[0].Local)
}

// TestSandboxClaimStreamsRefused: without the right on the subresource, in another namespace,
// with get but not create (a WebSocket passes kube-apiserver's get), and for a container that
// is not the pod's, no stream is opened.
func TestSandboxClaimStreamsRefused(t *testing.T) {
	t.Parallel()
	ns, _, _, cfg := streamsTenant(t)
	other, _, _, _ := streamsTenant(t)
	query := execQuery(false, "true")
	for _, protocol := range []string{"websocket", "spdy"} {
		res := execIn(t, cfg, streamURL(t, cfg, extensionsGroup, other, "sandboxclaims", "mine", "exec", query), protocol, nil)
		if res.err == nil || !strings.Contains(res.err.Error(), "forbidden") {
			t.Errorf("%s exec in another namespace: %v; want forbidden", protocol, res.err)
		}
	}
	res := execIn(t, cfg, streamURL(t, cfg, extensionsGroup, ns, "sandboxclaims", "mine", "exec",
		&corev1.PodExecOptions{Command: []string{"true"}, Stdout: true, Container: "nope"}), "spdy", nil)
	if res.err == nil || !strings.Contains(res.err.Error(), `container: Unsupported value: "nope"`) {
		t.Errorf("exec in a container that is not the pod's: %v; want it refused naming container", res.err)
	}

	// Claims but no exec right; and get without create.
	applyYAML(t, ns, `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: claims-only}
rules:
- apiGroups: [extensions.agents.x-k8s.io]
  resources: [sandboxclaims]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: exec-get-only}
rules:
- apiGroups: [extensions.agents.x-k8s.io]
  resources: [sandboxclaims/exec]
  verbs: [get]
`)
	reader, getter := "claims-reader-"+randSuffix(5), "exec-getter-"+randSuffix(5)
	readerCfg, getterCfg := restConfig(t, newUser(t, reader)), restConfig(t, newUser(t, getter))
	kubectl(t, "create", "rolebinding", "claims-reader", "-n", ns, "--role=claims-only", "--user="+reader)
	kubectl(t, "create", "rolebinding", "exec-getter", "-n", ns, "--role=exec-get-only", "--user="+getter)
	waitCanI(t, "get", "sandboxclaims", "-n", ns, "--as="+reader)
	waitCanI(t, "get", "sandboxclaims", "--subresource=exec", "-n", ns, "--as="+getter)
	for _, protocol := range []string{"websocket", "spdy"} {
		res := execIn(t, readerCfg, streamURL(t, readerCfg, extensionsGroup, ns, "sandboxclaims", "mine", "exec", query), protocol, nil)
		if res.err == nil || !strings.Contains(res.err.Error(), "forbidden") {
			t.Errorf("%s exec without the right: %v; want forbidden", protocol, res.err)
		}
	}
	res = execIn(t, getterCfg, streamURL(t, getterCfg, extensionsGroup, ns, "sandboxclaims", "mine", "exec", query), "websocket", nil)
	if res.err == nil || !strings.Contains(res.err.Error(), "forbidden") {
		t.Errorf("WebSocket exec with get but not create: %v; want forbidden", res.err)
	}
}

// TestSandboxExecWakes: exec on a suspended sandbox wakes it and runs; an exec session that stays
// open keeps the idle timeout from suspending it, which suspends it once the session ends.
func TestSandboxExecWakes(t *testing.T) {
	t.Parallel()
	requireRealNode(t)
	ns := newRealNamespace(t)
	applyYAML(t, ns, `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: sleepy}
spec:
  replicas: 0
  podTemplate: {spec: {terminationGracePeriodSeconds: 1, containers: [`+shellContainer("agent", "")+`]}}
`)
	kubectl(t, "wait", "-n", ns, "--for=condition=Suspended", "sandbox/sleepy", "--timeout=90s")
	admin := restConfig(t, adminKubeconfig)
	sandboxExec := func(opts runtime.Object) *url.URL {
		return streamURL(t, admin, agentsGroup, ns, "sandboxes", "sleepy", "exec", opts)
	}
	if res := execIn(t, admin, sandboxExec(execQuery(false, "echo", "awake")), "websocket", nil); res.err != nil || res.stdout != "awake\n" {
		t.Fatalf("exec in the suspended sandbox: %q, %v; want it woken to print awake", res.stdout, res.err)
	}
	if got := jsonpath(t, ns, "{.spec.replicas} {.spec.operatingMode}", "sandbox", "sleepy"); got != "1 Running" {
		t.Errorf("after the exec: replicas and operatingMode %q; want %q", got, "1 Running")
	}

	// A session open across twice the idle timeout: the sandbox stays up.
	kubectl(t, "patch", "-n", ns, "sandbox/sleepy", "--type=merge", "-p", `{"spec":{"idleTimeout":"10s"}}`)
	stdin, release := io.Pipe()
	session := make(chan execResult, 1)
	go func() {
		session <- execIn(t, admin, sandboxExec(execQuery(true, "sh", "-c", "read line; echo $line")), "spdy", stdin)
	}()
	watch := startWatch(t, adminKubeconfig, 2*waitTimeout, "get", "sandbox/sleepy", "-n", ns, "--watch", "-o", "jsonpath={.spec.replicas}{\"\\n\"}")
	deadline := time.After(25 * time.Second)
	for open := true; open; {
		select {
		case <-deadline:
			open = false
		case line, ok := <-watch.lines:
			if !ok {
				t.Fatal("the watch of the sandbox ended")
			}
			if line == "0" {
				t.Fatal("the sandbox was suspended while an exec session was open")
			}
		case res := <-session:
			t.Fatalf("the exec session ended early: %q, %v", res.stdout, res.err)
		}
	}
	_, _ = io.WriteString(release, "bye\n")
	if res := <-session; res.stdout != "bye\n" {
		t.Errorf("the session's output %q, %v; want bye", res.stdout, res.err)
	}
	_ = release.Close()
	kubectl(t, "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=IdleSuspended`, "sandbox/sleepy", "--timeout=90s")
}
