// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/mcpserver"
)

// The third round of tenancy attacks (SECURITY.md, attacks 19 to 24): what the streams, the
// plugin and the MCP server gave beyond a tenant's own sandbox's agent container.

// TestStreamsReachOnlyTheOpenContainer (attack 19): a claim-only tenant may exec, attach and read
// logs in its sandbox's default container, and in no other: the template author's sidecar
// (helper, the pod's first container) is refused naming container, before any node is asked.
func TestStreamsReachOnlyTheOpenContainer(t *testing.T) {
	t.Parallel()
	ns, _, kc, cfg := streamsTenant(t)
	for _, protocol := range []string{"websocket", "spdy"} {
		res := execIn(t, cfg, streamURL(t, cfg, extensionsGroup, ns, "sandboxclaims", "mine", "exec",
			&corev1.PodExecOptions{Command: []string{"true"}, Stdout: true, Container: "helper"}), protocol, nil)
		if res.err == nil || !strings.Contains(res.err.Error(), `container: Unsupported value: "helper"`) {
			t.Errorf("%s exec in the sidecar: %v; want it refused naming container", protocol, res.err)
		}
	}
	res := execIn(t, cfg, streamURL(t, cfg, extensionsGroup, ns, "sandboxclaims", "mine", "attach",
		&corev1.PodAttachOptions{Stdout: true, Container: "helper"}), "spdy", nil)
	if res.err == nil || !strings.Contains(res.err.Error(), `container: Unsupported value: "helper"`) {
		t.Errorf("attach to the sidecar: %v; want it refused naming container", res.err)
	}
	path := "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxclaims/mine/log"
	_, stderr, err := kubectlAsErr(t, kc, "get", "--raw", path+"?container=helper")
	expectFailure(t, "the sidecar's log", stderr, err, `container: Unsupported value: "helper"`)
	// The open container by its name is the honest client's request, and passes the check.
	res = execIn(t, cfg, streamURL(t, cfg, extensionsGroup, ns, "sandboxclaims", "mine", "exec",
		&corev1.PodExecOptions{Command: []string{"true"}, Stdout: true, Container: "agent"}), "spdy", nil)
	if res.err != nil && strings.Contains(res.err.Error(), "container: Unsupported value") {
		t.Errorf("exec in the open container by name: %v", res.err)
	}
}

// openExec starts a command through an exec subresource: running is closed once it wrote to
// stdout (the stream is open end to end), ended gets how it ended; stop ends it and waits.
func openExec(cfg *restclient.Config, u string) (stop func(), running <-chan struct{}, ended <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	out := &firstWrite{seen: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		executor, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u)
		if err == nil {
			err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out, Stderr: out})
		}
		errs <- err
	}()
	return func() { cancel(); <-done }, out.seen, errs
}

// firstWrite closes seen at the first write.
type firstWrite struct {
	once sync.Once
	seen chan struct{}
}

func (f *firstWrite) Write(p []byte) (int, error) {
	f.once.Do(func() { close(f.seen) })
	return len(p), nil
}

// TestStreamsAreBounded (attack 20): one sandbox's streams are bounded per server replica
// (--max-streams-per-sandbox, 32; each exec here runs sleep 120 and is ended by the test): past it a claim-only tenant's exec and a view user's followed
// log get a 429 with Retry-After at once; once the streams end, both work again.
func TestStreamsAreBounded(t *testing.T) {
	t.Parallel()
	ns, _, _, cfg := streamsTenant(t)
	viewer := "stream-viewer-" + randSuffix(5)
	viewerKC := newUser(t, viewer)
	kubectl(t, "create", "rolebinding", "view", "-n", ns, "--clusterrole=view", "--user="+viewer)
	waitCanI(t, "get", "sandboxclaims", "--subresource=log", "-n", ns, "--as="+viewer)
	viewerClient := kubernetes.NewForConfigOrDie(restConfig(t, viewerKC)).CoreV1().RESTClient()
	followLog := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		stream, err := viewerClient.Get().AbsPath("/apis/extensions.agents.x-k8s.io/v1beta1/namespaces", ns, "sandboxclaims", "mine", "log").
			Param("follow", "true").Stream(ctx)
		if err == nil {
			stream.Close()
		}
		return err
	}
	execURL := streamURL(t, cfg, extensionsGroup, ns, "sandboxclaims", "mine", "exec", execQuery(false, "sh", "-c", "echo open; exec sleep 120")).String()

	const perSandbox = 32
	var stops []func()
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
		stops = nil
	}
	defer stopAll()
	for i := range perSandbox {
		stop, running, ended := openExec(cfg, execURL)
		stops = append(stops, stop)
		select {
		case <-running:
		case err := <-ended:
			t.Fatalf("exec %d of %d ended: %v", i+1, perSandbox, err)
		case <-time.After(waitTimeout):
			t.Fatalf("exec %d of %d did not start", i+1, perSandbox)
		}
	}
	// With the 32 open, the next exec is refused at once, before any node is asked.
	stop, running, ended := openExec(cfg, execURL)
	select {
	case <-running:
		t.Errorf("an exec past the bound was admitted")
	case err := <-ended:
		if !strings.Contains(fmt.Sprint(err), "streams to sandbox") {
			t.Errorf("an exec past the bound: %v; want a 429 saying the sandbox's streams are in progress", err)
		}
	case <-time.After(waitTimeout):
		t.Errorf("an exec past the bound neither ran nor was refused")
	}
	stop()
	err := followLog()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusTooManyRequests || status.Status().Details == nil || status.Status().Details.RetryAfterSeconds == 0 {
		t.Errorf("a view user's followed log past the bound: %v; want a 429 with Retry-After", err)
	}
	stopAll()
	eventually(t, waitTimeout, "a followed log once the streams ended", func() (bool, string) {
		err := followLog()
		return !apierrors.IsTooManyRequests(err), fmt.Sprint(err)
	})
}

// TestMCPSessionIsTheServersMemory (attacks 23 and 24): a claim-only tenant labels its own claim
// with an agent's MCP session; the agent's this_session_only listing still holds only what the
// agent's session created. list_files of "-delete" deletes nothing. The calls use the peer's
// argument names where it has them.
func TestMCPSessionIsTheServersMemory(t *testing.T) {
	t.Parallel()
	bin := sandboxMCPBinary(t)
	ns := newRealNamespace(t)
	mcpTemplate(t, ns)
	_, agentKC := newClaimTenant(t, ns)
	attacker := "claim-attacker-" + randSuffix(5)
	attackerKC := newUser(t, attacker)
	kubectl(t, "create", "rolebinding", "claim-attacker", "-n", ns, "--role=claim-user", "--user="+attacker)
	waitCanI(t, "create", "sandboxclaims", "-n", ns, "--as="+attacker)

	cmd := exec.Command(bin, "--kubeconfig", agentKC, "--namespace", ns)
	cmd.Stderr = os.Stderr
	ctx := context.Background()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	var created struct {
		SandboxID string `json:"sandbox_id"`
		Session   string `json:"session"`
	}
	// The peer's argument names (warmpool aside: this namespace has no pool) work as ours.
	callToolOK(t, session, "create_sandbox", map[string]any{"template_name": "mcp", "sandbox_ready_timeout": 90}, &created)
	kubectlAsStdin(t, attackerKC, fmt.Sprintf(`apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata:
  name: planted
  labels: {%s: %q}
spec:
  sandboxTemplateRef: {name: mcp}
`, mcpserver.SessionLabel, created.Session), "create", "-n", ns, "-f", "-")
	var listed struct {
		Sandboxes []struct {
			SandboxID string `json:"sandbox_id"`
		}
	}
	callToolOK(t, session, "list_sandboxes", map[string]any{"this_session_only": true}, &listed)
	if len(listed.Sandboxes) != 1 || listed.Sandboxes[0].SandboxID != created.SandboxID {
		t.Errorf("this_session_only listed %+v; want only %s, not the planted claim", listed.Sandboxes, created.SandboxID)
	}
	var status struct {
		Ready bool `json:"ready"`
	}
	callToolOK(t, session, "get_sandbox_status", map[string]any{"sandbox_claim_name": created.SandboxID}, &status)
	if isError, msg := callTool(t, session, "list_templates", map[string]any{"namespace": "kube-system"}, nil); !isError || !strings.Contains(msg, "forbidden") {
		t.Errorf("list_templates where the tenant may not list: error %v, %q; want an error saying forbidden", isError, msg)
	}

	// Attack 23: a path of "-delete" is a path, not find's -delete, through the read-only
	// list_files: a file in the working directory survives it. A directory of that name lists.
	canary := "v3-canary-" + randSuffix(6) + ".txt"
	dir := "v3-dir-" + randSuffix(6)
	callToolOK(t, session, "upload_file", map[string]any{"sandbox_claim_name": created.SandboxID, "path": canary, "content": "still here"}, nil)
	callToolOK(t, session, "upload_file", map[string]any{"sandbox_id": created.SandboxID, "path": dir + "/-delete/inside.txt", "content": "x"}, nil)
	callTool(t, session, "list_files", map[string]any{"sandbox_id": created.SandboxID, "path": "-delete"}, nil)
	var exists struct {
		Exists bool `json:"exists"`
	}
	callToolOK(t, session, "file_exists", map[string]any{"sandbox_id": created.SandboxID, "path": canary}, &exists)
	if !exists.Exists {
		t.Errorf("%s is gone after list_files of -delete", canary)
	}
	var listing struct {
		Entries []struct {
			Name string `json:"name"`
		} `json:"entries"`
	}
	callToolOK(t, session, "list_files", map[string]any{"sandbox_id": created.SandboxID, "path": dir + "/-delete", "max_entries": 5}, &listing)
	if len(listing.Entries) != 1 || listing.Entries[0].Name != "inside.txt" {
		t.Errorf("list_files of %s/-delete: %+v; want inside.txt", dir, listing.Entries)
	}
	callToolOK(t, session, "execute_command", map[string]any{"sandbox_id": created.SandboxID, "command": "rm -rf " + canary + " " + dir, "timeout": 30}, nil)
	callToolOK(t, session, "delete_sandbox", map[string]any{"sandbox_claim_name": created.SandboxID}, nil)
}

// TestPluginProxyServesOnlyLoopbackHosts (attack 21): a web page whose name rebinds to 127.0.0.1
// sends its requests to kubectl sandbox proxy with its own Host name; they are refused with 403
// before reaching the sandbox, while the user's own requests (127.0.0.1, localhost) pass.
func TestPluginProxyServesOnlyLoopbackHosts(t *testing.T) {
	t.Parallel()
	ns := newRealNamespace(t)
	mcpTemplate(t, ns)
	_, kc := newClaimTenant(t, ns)
	kubectlAsStdin(t, kc, `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: mine}
spec:
  sandboxTemplateRef: {name: mcp}
`, "create", "-n", ns, "-f", "-")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/mine", "--timeout=90s")
	px := startKubectl(t, kubectlOptions{kubeconfig: kc, env: pluginEnv()}, 2*time.Minute, "sandbox", "proxy", "mine", "--local-port", "0")
	line := px.next(t, "the proxy's address", func(l string) bool { return strings.HasPrefix(l, "Starting to serve") })
	addr := line[strings.LastIndex(line, " ")+1:]
	_, port, _ := strings.Cut(addr, ":")
	for host, want := range map[string]int{
		"rebound.example:" + port: http.StatusForbidden, "127.0.0.1.nip.example": http.StatusForbidden,
		addr: http.StatusOK, "localhost:" + port: http.StatusOK,
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/healthz", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// TestMCPHTTPRefusesWhatABrowserOrTheNetworkSends (attack 25): the real binary over HTTP answers
// a missing token with 401 and WWW-Authenticate: Bearer, a page of another origin with 403 even
// with a valid token, and will not serve plain HTTP off the loopback interface.
func TestMCPHTTPRefusesWhatABrowserOrTheNetworkSends(t *testing.T) {
	t.Parallel()
	ns := newRealNamespace(t)
	kubectl(t, "create", "serviceaccount", "agent", "-n", ns)
	token := strings.TrimSpace(kubectl(t, "create", "token", "agent", "-n", ns, "--duration=1h"))
	url := startMCPHTTP(t)
	send := func(token, origin string) *http.Response {
		t.Helper()
		header := http.Header{}
		if origin != "" {
			header.Set("Origin", origin)
		}
		return mcpRequest(t, url, token, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"0"}}}`, header)
	}
	if resp := send("", ""); resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no token: %d, WWW-Authenticate %q; want 401 with Bearer", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp := send(token, "https://attacker.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a valid token from another origin: %d, want 403", resp.StatusCode)
	}
	if resp := send(token, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("the honest client's initialize: %d, want 200", resp.StatusCode)
	}
	out, err := exec.Command(sandboxMCPBinary(t), "--kubeconfig", adminKubeconfig, "--http-address", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not a loopback address") {
		t.Errorf("plain HTTP on 0.0.0.0: %v, %s; want a refusal to start", err, out)
	}
}
