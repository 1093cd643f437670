// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// sandboxProcess is the "process" in a test sandbox: an HTTP and WebSocket server at kwok's
// Nodes' address (kwokAddress), reached through a hostNetwork pod on a kwok node. It records
// every request it sees.
type sandboxProcess struct {
	server *httptest.Server
	port   int
	// release lets a /stream response write its second line.
	release chan struct{}

	mu   sync.Mutex
	seen []*http.Request
}

func startSandboxProcess(t *testing.T) *sandboxProcess {
	t.Helper()
	p := &sandboxProcess{release: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	// /echo answers with the method, the caller the proxy named and the body, in the status the
	// query asks for.
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		code := http.StatusOK
		if s := r.URL.Query().Get("status"); s != "" {
			code, _ = strconv.Atoi(s)
		}
		w.Header().Set("X-Seen-User", r.Header.Get("X-Sandbox-User"))
		w.Header().Set("X-Seen-Groups", strings.Join(r.Header.Values("X-Sandbox-Group"), ","))
		w.WriteHeader(code)
		fmt.Fprintf(w, "%s %s", r.Method, body)
	})
	// /stream writes one line, then the second once the test has read the first through the proxy.
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-p.release:
			fmt.Fprintln(w, "second")
		case <-time.After(waitTimeout):
			fmt.Fprintln(w, "never released")
		}
	})
	mux.Handle("/ws", websocket.Handler(func(ws *websocket.Conn) { _, _ = io.Copy(ws, ws) }))
	p.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r)
		p.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	p.server.Listener = listenKwok(t)
	p.server.Start()
	t.Cleanup(p.server.Close)
	_, port, _ := net.SplitHostPort(p.server.Listener.Addr().String())
	p.port, _ = strconv.Atoi(port)
	return p
}

// requests returns the request URIs the process has seen.
func (p *sandboxProcess) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var uris []string
	for _, r := range p.seen {
		uris = append(uris, r.RequestURI)
	}
	return uris
}

// proxyPodSpec is a hostNetwork pod spec whose container declares port as "http", on a kwok
// node: kwok reports its Nodes' address for it, where the test's sandboxProcess listens.
func proxyPodSpec(port int) string {
	return fmt.Sprintf(`{hostNetwork: true, %s, containers: [{name: agent, image: ghcr.io/example/agent:latest, ports: [{name: http, containerPort: %d}]}]}`, onKwok, port)
}

// kwokAddress is the address kwok's Nodes report, and with it their host-network pods: on the
// plane's interface sandbox-kwok0, the one host-network address sandbox-apiserver reaches
// (--proxy-host-network-cidrs). The test is skipped when it is loopback (a plane not run as root),
// which sandbox-apiserver never reaches.
func kwokAddress(t *testing.T) string {
	t.Helper()
	addr := kubectl(t, "get", "node", "kwok-node-0", "-o", `jsonpath={.status.addresses[?(@.type=="InternalIP")].address}`)
	ip := net.ParseIP(addr)
	if ip == nil {
		t.Fatalf("kwok-node-0 reports no InternalIP (%q)", addr)
	}
	if ip.IsLoopback() {
		t.Skipf("kwok's Nodes report %s (the plane ran without root): sandbox-apiserver reaches no host-network pod there", addr)
	}
	return addr
}

// listenKwok listens on a free port of kwok's Nodes' address.
func listenKwok(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(kwokAddress(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// newHostNetworkNamespace is newNamespace for the sandboxes of proxyPodSpec, whose pods run in
// the host network of a kwok node: Pod Security's baseline level, the plane's default, refuses
// them, so the namespace is labelled privileged, as an administrator would.
func newHostNetworkNamespace(t *testing.T) string {
	t.Helper()
	ns := newNamespace(t)
	kubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=privileged")
	return ns
}

// onKwok are the pod spec fields, in YAML's flow style, that place a pod on the plane's kwok
// nodes, whose taint keeps every other pod off them.
const onKwok = `nodeSelector: {type: kwok}, tolerations: [{key: sandbox-apiserver.dev/kwok, operator: Exists, effect: NoSchedule}]`

// restConfig is the client configuration of kubeconfig.
func restConfig(t *testing.T, kubeconfig string) *restclient.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// proxyCall makes a request through kube-apiserver to an absolute path and returns the status
// and body. The path is sent as written (no cleaning by a client library).
func proxyCall(t *testing.T, cfg *restclient.Config, method, path, body string, header http.Header) (int, string, http.Header) {
	t.Helper()
	transport, err := restclient.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(cfg.Host, "/")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	// The path goes to the server exactly as written, not cleaned.
	req.URL.Opaque, _, _ = strings.Cut(path, "?")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), resp.Header
}

// statusMessage is the message of the Status a refused request answers with.
func statusMessage(t *testing.T, body string) string {
	t.Helper()
	var status metav1.Status
	if err := json.Unmarshal([]byte(body), &status); err != nil {
		t.Fatalf("the answer is not a Status: %v\n%s", err, body)
	}
	return status.Message
}

// TestSandboxProxy reaches a sandbox's process through kube-apiserver and sandboxes/proxy: every
// method with bodies and statuses intact, a streamed response, a WebSocket echo, RBAC on the
// subresource, and nowhere but the declared port of the sandbox's own pod.
func TestSandboxProxy(t *testing.T) {
	t.Parallel()
	ns := newHostNetworkNamespace(t)
	proc, other := startSandboxProcess(t), startSandboxProcess(t)
	applyYAML(t, ns, fmt.Sprintf(`apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: web}
spec:
  podTemplate: {spec: %s}
`, proxyPodSpec(proc.port)))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/web", "--timeout=90s")
	admin := restConfig(t, adminKubeconfig)
	base := "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes/web/proxy"

	t.Run("methods bodies and statuses", func(t *testing.T) {
		for _, c := range []struct {
			method, query, body string
			code                int
		}{
			{"GET", "", "", 200}, {"POST", "?status=201", `{"made":true}`, 201},
			{"PUT", "?status=202", "replaced", 202}, {"PATCH", "?status=418", "teapot", 418}, {"DELETE", "?status=204", "", 204},
		} {
			code, body, header := proxyCall(t, admin, c.method, base+"/echo"+c.query, c.body, http.Header{"X-Sandbox-User": {"root"}})
			want := c.method + " " + c.body
			if c.code == 204 {
				want = ""
			}
			if code != c.code || body != want {
				t.Errorf("%s through the proxy: %d %q; want %d %q", c.method, code, body, c.code, want)
			}
			if got := header.Get("X-Seen-User"); got == "root" || got == "" {
				t.Errorf("%s: the sandbox saw the caller %q; want the authenticated admin, never the client's header", c.method, got)
			}
		}
		// kubectl get --raw goes the same way.
		if out := kubectl(t, "get", "--raw", base+"/echo"); out != "GET " {
			t.Errorf("kubectl get --raw %s/echo = %q; want %q", base, out, "GET ")
		}
		// The port by name and by number reach the same process.
		for _, id := range []string{"web:http", "web:" + strconv.Itoa(proc.port)} {
			path := "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes/" + id + "/proxy/echo"
			if code, body, _ := proxyCall(t, admin, "GET", path, "", nil); code != 200 || body != "GET " {
				t.Errorf("GET %s: %d %q; want 200 \"GET \"", path, code, body)
			}
		}
	})

	t.Run("streaming", func(t *testing.T) {
		transport, err := restclient.TransportFor(admin)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(admin.Host, "/")+base+"/stream", nil)
		resp, err := (&http.Client{Transport: transport}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		lines := bufio.NewReader(resp.Body)
		// The first line arrives while the process still holds the response open.
		if first, err := lines.ReadString('\n'); err != nil || first != "first\n" {
			t.Fatalf("first streamed line = %q, %v", first, err)
		}
		proc.release <- struct{}{}
		if second, err := lines.ReadString('\n'); err != nil || second != "second\n" {
			t.Fatalf("second streamed line = %q, %v", second, err)
		}
	})

	t.Run("websocket", func(t *testing.T) {
		tlsConfig, err := restclient.TLSConfigFor(admin)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(admin.Host)
		cfg, err := websocket.NewConfig("wss://"+u.Host+base+"/ws", "https://"+u.Host)
		if err != nil {
			t.Fatal(err)
		}
		cfg.TlsConfig = tlsConfig
		if admin.BearerToken != "" {
			cfg.Header.Set("Authorization", "Bearer "+admin.BearerToken)
		}
		ws, err := websocket.DialConfig(cfg)
		if err != nil {
			t.Fatalf("WebSocket through the proxy: %v", err)
		}
		defer ws.Close()
		_ = ws.SetDeadline(time.Now().Add(waitTimeout))
		for _, msg := range []string{"hello", "sandbox"} {
			if err := websocket.Message.Send(ws, msg); err != nil {
				t.Fatal(err)
			}
			var echo string
			if err := websocket.Message.Receive(ws, &echo); err != nil || echo != msg {
				t.Fatalf("WebSocket echo = %q, %v; want %q", echo, err, msg)
			}
		}
	})

	t.Run("rbac", func(t *testing.T) {
		editor, outsider := "proxy-editor-"+randSuffix(5), "proxy-outsider-"+randSuffix(5)
		editorKC, outsiderKC := newUser(t, editor, "proxy-team"), newUser(t, outsider)
		bindClusterRole(t, ns, editor, "edit")
		waitCanI(t, "create", "sandboxes/proxy", "-n", ns, "--as="+editor)
		code, body, header := proxyCall(t, restConfig(t, editorKC), "POST", base+"/echo", "hi", nil)
		if code != 200 || body != "POST hi" || header.Get("X-Seen-User") != editor || !strings.Contains(header.Get("X-Seen-Groups"), "proxy-team") {
			t.Errorf("the editor's POST: %d %q, the sandbox saw %q in %q; want 200 \"POST hi\" from %s in proxy-team",
				code, body, header.Get("X-Seen-User"), header.Get("X-Seen-Groups"), editor)
		}
		before := len(proc.requests())
		code, body, _ = proxyCall(t, restConfig(t, outsiderKC), "GET", base+"/echo", "", nil)
		if code != http.StatusForbidden || !strings.Contains(statusMessage(t, body), forbidden(outsider, "get", "sandboxes/proxy", agentsGroup, ns)) {
			t.Errorf("the outsider's GET: %d %q; want 403", code, body)
		}
		if after := len(proc.requests()); after != before {
			t.Errorf("the outsider's request reached the sandbox")
		}
	})

	t.Run("nowhere else", func(t *testing.T) {
		before := len(proc.requests())
		otherAddr := other.server.Listener.Addr().String()
		// A port the pod does not declare is refused, though something listens there.
		code, body, _ := proxyCall(t, admin, "GET", "/apis/agents.x-k8s.io/v1beta1/namespaces/"+ns+"/sandboxes/web:"+strconv.Itoa(other.port)+"/proxy/echo", "", nil)
		if code != http.StatusBadRequest || !strings.Contains(statusMessage(t, body), "is not a TCP port the sandbox's pod declares") {
			t.Errorf("an undeclared port: %d %q; want 400 naming the port", code, body)
		}
		// A scheme or a host in the name is not a sandbox name.
		code, _, _ = proxyCall(t, admin, "GET", "/apis/agents.x-k8s.io/v1beta1/namespaces/"+ns+"/sandboxes/http:web:"+strconv.Itoa(proc.port)+"/proxy/echo", "", nil)
		if code < 400 {
			t.Errorf("a scheme in the name: %d; want a refusal", code)
		}
		// Paths that name another host stay paths on the sandbox's process, or are refused.
		for _, path := range []string{"/http://" + otherAddr + "/echo", "//" + otherAddr + "/echo", "/http:%2F%2F" + otherAddr + "/echo"} {
			code, body, _ := proxyCall(t, admin, "GET", base+path, "", nil)
			if code == 200 && body == "GET " {
				t.Errorf("GET proxy%s reached an echo server: the other host's, unless the sandbox's saw it", path)
			}
		}
		if seen := other.requests(); len(seen) > 0 {
			t.Errorf("the server on the undeclared port got requests: %v", seen)
		}
		t.Logf("the sandbox's process saw, for the other-host paths: %v", proc.requests()[before:])
	})

	t.Run("kubectl proxy", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlBin, "proxy", "--address=127.0.0.1", "--port=0", "--kubeconfig="+adminKubeconfig)
		cmd.Env = append(os.Environ(), "KUBECACHEDIR="+kubeCacheDir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		line, err := bufio.NewReader(stdout).ReadString('\n')
		addr := strings.TrimSpace(strings.TrimPrefix(line, "Starting to serve on "))
		if err != nil || !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Fatalf("kubectl proxy said %q, %v", line, err)
		}
		req, _ := http.NewRequestWithContext(ctx, "PUT", "http://"+addr+base+"/echo?status=201", strings.NewReader("via kubectl proxy"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 201 || string(body) != "PUT via kubectl proxy" {
			t.Errorf("PUT through kubectl proxy: %d %q; want 201 \"PUT via kubectl proxy\"", resp.StatusCode, body)
		}
	})
}

// TestSandboxClaimProxy reaches a claim's sandbox through sandboxclaims/proxy as a tenant who may
// only create claims and proxy to them.
func TestSandboxClaimProxy(t *testing.T) {
	t.Parallel()
	ns := newHostNetworkNamespace(t)
	proc := startSandboxProcess(t)
	applyYAML(t, ns, fmt.Sprintf(`apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: web}
spec:
  podTemplate: {spec: %s}
---
apiVersion: rbac.authorization.k8s.io/v1
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
  resources: [sandboxclaims/proxy]
  verbs: [get, create, update, patch, delete]
`, proxyPodSpec(proc.port)))
	tenant := "claim-tenant-" + randSuffix(5)
	kc := newUser(t, tenant)
	kubectl(t, "create", "rolebinding", "claim-user", "-n", ns, "--role=claim-user", "--user="+tenant)
	waitCanI(t, "create", "sandboxclaims/proxy", "-n", ns, "--as="+tenant)
	kubectlAsStdin(t, kc, `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: mine}
spec:
  sandboxTemplateRef: {name: web}
`, "create", "-n", ns, "-f", "-")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/mine", "--timeout=90s")

	path := "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxclaims/mine/proxy/echo"
	code, body, header := proxyCall(t, restConfig(t, kc), "POST", path+"?status=201", "from the tenant", nil)
	if code != 201 || body != "POST from the tenant" || header.Get("X-Seen-User") != tenant {
		t.Errorf("the tenant's POST through sandboxclaims/proxy: %d %q (the sandbox saw %q); want 201 \"POST from the tenant\" from %s",
			code, body, header.Get("X-Seen-User"), tenant)
	}
	if out := kubectlAs(t, kc, "get", "--raw", path); out != "GET " {
		t.Errorf("kubectl get --raw as the tenant = %q; want \"GET \"", out)
	}
	// The tenant has no right on the sandbox itself, nor on its proxy.
	sandbox := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", "mine")
	code, _, _ = proxyCall(t, restConfig(t, kc), "GET", "/apis/agents.x-k8s.io/v1beta1/namespaces/"+ns+"/sandboxes/"+sandbox+"/proxy/echo", "", nil)
	if code != http.StatusForbidden {
		t.Errorf("the claim-only tenant's GET on sandboxes/proxy: %d; want 403", code)
	}
}
