// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// The real-node tests reach sandboxes that run for real: on the plane's kubelet, containerd and
// runc node, with the images hack/local-up.sh builds and imports (no registry). Each acts as a
// claim-only tenant through the plugin, the Go SDK or the MCP server, as a user or agent would.

// The images the plane imports into the real node's containerd.
const (
	// sandboxImage has a shell, coreutils, tar and python3.
	sandboxImage = "localhost/sandbox:local"
	// minimalImage has no shell: one static program that waits.
	minimalImage = "localhost/noshell:local"
)

// realNodeShell is the main process of the shell containers: it logs a boot line, exits 7 on
// SIGTERM (a test restarts the container with `kill -TERM 1`), and on SIGUSR1 turns into a
// process that allocates 512 MiB (a test makes the main process break its memory limit).
const realNodeShell = `trap 'exit 7' TERM; trap 'exec python3 -c "b = bytes(range(256)) * (2 << 20)"' USR1; ` +
	`echo "boot $(uname -n)"; while :; do sleep 600 & wait $!; done`

// shellContainer is a container named name of the sandbox image running realNodeShell, in
// YAML's flow style, with extra fields ("key: value, ...") added.
func shellContainer(name, extra string) string {
	c := fmt.Sprintf("{name: %s, image: %s, command: [sh, -c, %s]", name, sandboxImage, yamlQuote(realNodeShell))
	if extra != "" {
		c += ", " + extra
	}
	return c + "}"
}

// sandboxHTTPServer is the HTTP server of httpPodSpec's sandboxes: /healthz answers "ok", any
// other path "hello from PATH".
const sandboxHTTPServer = `import http.server
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?")[0]
        body = b"ok\n" if path == "/healthz" else ("hello from " + path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.ThreadingHTTPServer(("", 8080), Handler).serve_forever()
`

// httpPodSpec is the pod spec, in YAML's flow style, of a sandbox serving sandboxHTTPServer on
// port 8080, declared as "http"; it is Ready once the server listens.
var httpPodSpec = fmt.Sprintf(`{terminationGracePeriodSeconds: 1, containers: [{name: agent, image: %s, command: [python3, -c, %s], `+
	`ports: [{name: http, containerPort: 8080}], readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}}]}`,
	sandboxImage, yamlQuote(sandboxHTTPServer))

// yamlQuote quotes s as a YAML (JSON) string.
func yamlQuote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// realNodeTemplates are the templates the real-node tests claim from: shell (the sandbox image
// with realNodeShell), web (python3's HTTP server on two declared ports), small (shell with a
// 64 MiB memory limit), userns (shell in a user namespace), minimal (the image without a shell)
// and volume (shell with a persistent volume at /work).
var realNodeTemplates = strings.Join([]string{
	realNodeTemplate("shell", "", shellContainer("agent", "")),
	realNodeTemplate("web", "", fmt.Sprintf("{name: agent, image: %s, workingDir: /tmp, command: [sh, -c, %s], "+
		"ports: [{name: http, containerPort: 8080}, {name: alt, containerPort: 9090}], readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}}",
		sandboxImage, yamlQuote("echo served-by-$(uname -n) > index.txt; python3 -m http.server 9090 & exec python3 -m http.server 8080"))),
	realNodeTemplate("small", "", shellContainer("agent", "resources: {limits: {memory: 64Mi}, requests: {memory: 64Mi}}")),
	realNodeTemplate("userns", "hostUsers: false, ", shellContainer("agent", "")),
	realNodeTemplate("minimal", "", "{name: agent, image: "+minimalImage+"}"),
	realNodeTemplate("volume", "", shellContainer("agent", "volumeMounts: [{name: work, mountPath: /work}]")) +
		"  volumeClaimTemplates: [{metadata: {name: work}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]\n",
}, "---\n")

// realNodeTemplate is a SandboxTemplate named name whose pod has podFields ("key: value, ...")
// and the one container given in YAML's flow style.
func realNodeTemplate(name, podFields, container string) string {
	return fmt.Sprintf(`apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: %s}
spec:
  podTemplate: {spec: {terminationGracePeriodSeconds: 1, %scontainers: [%s]}}
`, name, podFields, container)
}

// requireRealNode skips the test unless the plane runs a real node (a Ready Node that kwok does
// not fake): hack/local-up.sh starts one only as root on Linux.
func requireRealNode(t *testing.T) {
	t.Helper()
	out := kubectl(t, "get", "nodes", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.metadata.annotations.kwok\.x-k8s\.io/node} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == "True" {
			return
		}
	}
	t.Skipf("no real node in the plane (hack/local-up.sh runs one only as root on Linux); nodes:\n%s", indent(out))
}

// realNodeTenant makes a namespace with realNodeTemplates and a claim-only tenant there; it
// returns the namespace, the tenant's kubeconfig (its context's namespace is ns) and an SDK
// client as the tenant.
func realNodeTenant(t *testing.T) (ns, kc string, client *sandbox.Client) {
	t.Helper()
	requireRealNode(t)
	ns = newRealNamespace(t)
	applyYAML(t, ns, realNodeTemplates)
	_, kc = newClaimTenant(t, ns)
	client, err := sandbox.NewClient(restConfig(t, kc))
	if err != nil {
		t.Fatal(err)
	}
	return ns, kc, client
}

// claimReal claims a sandbox of template named name through the SDK and waits until it is Ready.
func claimReal(t *testing.T, client *sandbox.Client, ns, template, name string) *sandbox.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	start := time.Now()
	sb, err := client.Claim(ctx, ns, sandbox.FromTemplate(template), sandbox.WithName(name))
	if err != nil {
		t.Fatalf("claiming %s from %s: %v", name, template, err)
	}
	t.Logf("claim %s of %s Ready in %s", name, template, time.Since(start).Round(time.Millisecond))
	return sb
}

// run runs command in sb through the SDK and fails the test unless it ran (any exit code).
func run(t *testing.T, sb *sandbox.Sandbox, command ...string) *sandbox.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	res, err := sb.Run(ctx, command...)
	if err != nil {
		t.Fatalf("%s: running %q: %v", sb, command, err)
	}
	return res
}

// runOK runs command in sb and returns its stdout, failing the test unless it exits 0.
func runOK(t *testing.T, sb *sandbox.Sandbox, command ...string) string {
	t.Helper()
	res := run(t, sb, command...)
	if res.ExitCode != 0 {
		t.Fatalf("%s: %q exited %d; stderr %q", sb, command, res.ExitCode, res.Stderr)
	}
	return res.Stdout
}

// TestRealNodeExec: stdin's end reaches the command, exit codes and signals come back as the
// command's, and a terminal's size and its change reach the command, through the plugin and the
// SDK.
func TestRealNodeExec(t *testing.T) {
	t.Parallel()
	ns, kc, client := realNodeTenant(t)
	sb := claimReal(t, client, ns, "shell", "mine")

	t.Run("stdin", func(t *testing.T) {
		stdout, stderr, code := plugin(t, kc, "a\nb\n", "exec", "-i", "mine", "--", "wc", "-l")
		if stdout != "2\n" || code != 0 {
			t.Errorf("printf 'a\\nb\\n' | kubectl sandbox exec -i mine -- wc -l: %q, exit code %d, stderr %q; want 2", stdout, code, stderr)
		}
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		err := sb.Exec(ctx, sandbox.ExecOptions{Command: []string{"sha256sum"}, Stdin: strings.NewReader("through the SDK\n"), Stdout: &out})
		sum := sha256.Sum256([]byte("through the SDK\n"))
		if err != nil || !strings.HasPrefix(out.String(), hex.EncodeToString(sum[:])) {
			t.Errorf("sha256sum of the SDK's stdin: %q, %v; want %x", out.String(), err, sum)
		}
	})

	t.Run("exit codes and signals", func(t *testing.T) {
		for _, c := range []struct {
			script string
			want   int
		}{
			{"exit 3", 3},
			{"kill -KILL $$", 128 + 9},
			{"kill -TERM $$", 128 + 15},
		} {
			if _, stderr, code := plugin(t, kc, "", "exec", "mine", "--", "sh", "-c", c.script); code != c.want {
				t.Errorf("kubectl sandbox exec mine -- sh -c %q: exit code %d (stderr %q); want %d", c.script, code, stderr, c.want)
			}
			if res := run(t, sb, "sh", "-c", c.script); res.ExitCode != c.want {
				t.Errorf("the SDK's Run of sh -c %q: exit code %d; want %d", c.script, res.ExitCode, c.want)
			}
		}
		stdout, stderr, code := plugin(t, kc, "", "exec", "mine", "--", "no-such-program")
		if code == 0 || !strings.Contains(stdout+stderr, "no-such-program") {
			t.Errorf("exec of a missing program: exit code %d, output %q %q; want a failure naming it", code, stdout, stderr)
		}
	})

	t.Run("tty and resize", func(t *testing.T) {
		sizes := make(sizeQueue, 2)
		sizes <- remotecommand.TerminalSize{Width: 80, Height: 24}
		out := &syncBuffer{}
		stdin, closeStdin := io.Pipe()
		defer closeStdin.Close()
		done := make(chan error, 1)
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		go func() {
			// The command waits (in the sandbox) for its terminal's first size, then for a change.
			done <- sb.Exec(ctx, sandbox.ExecOptions{
				Command: []string{"sh", "-c", `[ -t 0 ] && echo is-a-tty; until [ "$(stty size)" = "24 80" ]; do sleep 0.05; done; echo first-size; ` +
					`while [ "$(stty size)" = "24 80" ]; do sleep 0.05; done; stty size`},
				Stdin: stdin, Stdout: out, TTY: true, TerminalSizes: sizes,
			})
		}()
		eventually(t, waitTimeout, "the first size in the terminal", func() (bool, string) {
			return strings.Contains(out.String(), "is-a-tty\r\nfirst-size\r\n"), out.String()
		})
		sizes <- remotecommand.TerminalSize{Width: 120, Height: 40}
		select {
		case err := <-done:
			if err != nil || !strings.HasSuffix(out.String(), "40 120\r\n") {
				t.Errorf("after the resize: %q, %v; want the new size 40 120", out.String(), err)
			}
		case <-ctx.Done():
			t.Fatalf("the command did not see the resize: %q", out.String())
		}
		close(sizes)
	})
}

// sizeQueue hands a TTY session the terminal sizes sent to it.
type sizeQueue chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q
	if !ok {
		return nil
	}
	return &s
}

// syncBuffer is a bytes.Buffer that a stream writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRealNodeFiles: 1 MiB of random bytes copied into the sandbox and back, byte for byte, with
// kubectl sandbox cp and the SDK; the sandbox's own sha256sum agrees.
func TestRealNodeFiles(t *testing.T) {
	t.Parallel()
	ns, kc, client := realNodeTenant(t)
	sb := claimReal(t, client, ns, "shell", "mine")
	data := make([]byte, 1<<20)
	_, _ = rand.Read(data)
	sum := sha256.Sum256(data)
	local := t.TempDir()
	in := filepath.Join(local, "in.bin")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	checkSum := func(path string) {
		t.Helper()
		if got := runOK(t, sb, "sha256sum", path); !strings.HasPrefix(got, hex.EncodeToString(sum[:])+" ") {
			t.Errorf("sha256sum %s in the sandbox: %q; want %x", path, got, sum)
		}
	}

	pluginOK(t, kc, "cp", in, "mine:/tmp/plugin.bin")
	checkSum("/tmp/plugin.bin")
	back := filepath.Join(local, "back.bin")
	pluginOK(t, kc, "cp", "mine:/tmp/plugin.bin", back)
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, data) {
		t.Errorf("kubectl sandbox cp out of the sandbox: %d of %d bytes equal? %v, %v", len(got), len(data), bytes.Equal(got, data), err)
	}
	if _, err := os.Stat("/tmp/plugin.bin"); err == nil {
		t.Errorf("/tmp/plugin.bin is on this machine: the sandbox's /tmp is the host's")
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	runOK(t, sb, "mkdir", "/tmp/sdk")
	if err := sb.WriteFile(ctx, "/tmp/sdk/data.bin", bytes.NewReader(data), int64(len(data)), 0o600); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	checkSum("/tmp/sdk/data.bin")
	if got := runOK(t, sb, "stat", "-c", "%a %s", "/tmp/sdk/data.bin"); got != fmt.Sprintf("600 %d\n", len(data)) {
		t.Errorf("the written file's mode and size: %q", got)
	}
	r, err := sb.ReadFile(ctx, "/tmp/sdk/data.bin")
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	got, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("ReadFile: %d of %d bytes equal? %v, %v", len(got), len(data), bytes.Equal(got, data), err)
	}
}

// TestRealNodeLogs: two sandboxes' logs hold what each one's main process wrote and nothing of
// the other's; a followed log shows a new line; after the container restarts, previous shows
// the run before.
func TestRealNodeLogs(t *testing.T) {
	t.Parallel()
	ns, kc, client := realNodeTenant(t)
	a := claimReal(t, client, ns, "shell", "a")
	b := claimReal(t, client, ns, "shell", "b")
	markA, markB := "marker-a-"+randSuffix(8), "marker-b-"+randSuffix(8)
	// /proc/1/fd/1 is the main process's stdout: what it writes there is the container's log.
	runOK(t, a, "sh", "-c", "echo "+markA+" > /proc/1/fd/1")
	runOK(t, b, "sh", "-c", "echo "+markB+" > /proc/1/fd/1")
	logsOf := func(sb *sandbox.Sandbox, o sandbox.LogOptions) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		r, err := sb.Logs(ctx, o)
		if err != nil {
			return "", err
		}
		defer r.Close()
		data, err := io.ReadAll(r)
		return string(data), err
	}
	for _, c := range []struct {
		sb         *sandbox.Sandbox
		own, other string
	}{{a, markA, markB}, {b, markB, markA}} {
		eventually(t, waitTimeout, c.sb.String()+"'s log to hold its marker", func() (bool, string) {
			log, err := logsOf(c.sb, sandbox.LogOptions{})
			return err == nil && strings.Contains(log, c.own+"\n") && strings.Contains(log, "boot "), fmt.Sprintf("%q, %v", log, err)
		})
		if log, _ := logsOf(c.sb, sandbox.LogOptions{}); strings.Contains(log, c.other) {
			t.Errorf("%s's log holds the other sandbox's marker %s:\n%s", c.sb, c.other, indent(log))
		}
	}

	follow := startKubectl(t, kubectlOptions{kubeconfig: kc, env: pluginEnv()}, 2*waitTimeout, "sandbox", "logs", "-f", "a")
	follow.next(t, "the marker written before", func(l string) bool { return l == markA })
	later := "later-" + randSuffix(8)
	runOK(t, a, "sh", "-c", "echo "+later+" > /proc/1/fd/1")
	follow.next(t, "the line written while following", func(l string) bool { return l == later })

	// The main process exits on SIGTERM; the kubelet starts the container again. The container
	// may stop before `kill` itself returns, which then ends killed (137) or with its stream cut:
	// what counts is the restart, checked by the previous run's log below.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	res, err := a.Run(ctx, "kill", "-TERM", "1")
	cancel()
	if err == nil && res.ExitCode != 0 && res.ExitCode != 137 {
		t.Fatalf("%s: kill -TERM 1 exited %d; stderr %q", a, res.ExitCode, res.Stderr)
	}
	eventually(t, 2*waitTimeout, "the log of the previous run to hold the markers", func() (bool, string) {
		log, err := logsOf(a, sandbox.LogOptions{Previous: true})
		return err == nil && strings.Contains(log, markA+"\n") && strings.Contains(log, later+"\n"), fmt.Sprintf("%q, %v", log, err)
	})
	out := pluginOK(t, kc, "logs", "--previous", "a")
	expectContains(t, "kubectl sandbox logs --previous a", out, markA, later)
	eventually(t, waitTimeout, "the new run's log", func() (bool, string) {
		log, err := logsOf(a, sandbox.LogOptions{})
		return err == nil && strings.Contains(log, "boot ") && !strings.Contains(log, markA), fmt.Sprintf("%q, %v", log, err)
	})
}

// TestRealNodeNetwork: python3's HTTP server in the sandbox, reached on each declared port by
// kubectl sandbox port-forward and the SDK's PortForward, and through the proxy subresource by
// kubectl sandbox proxy and the SDK's HTTP client.
func TestRealNodeNetwork(t *testing.T) {
	t.Parallel()
	ns, kc, client := realNodeTenant(t)
	sb := claimReal(t, client, ns, "web", "web")
	want := "served-by-" + strings.TrimSpace(runOK(t, sb, "uname", "-n")) + "\n"

	for _, port := range []string{"8080", "9090"} {
		pf := startKubectl(t, kubectlOptions{kubeconfig: kc, env: pluginEnv()}, 2*waitTimeout, "sandbox", "port-forward", "web", ":"+port)
		line := pf.next(t, "the forwarded port", func(l string) bool { return strings.HasPrefix(l, "Forwarding from 127.0.0.1:") })
		local := regexp.MustCompile(`127\.0\.0\.1:(\d+) `).FindStringSubmatch(line)[1]
		if body := httpGetEventually(t, "http://127.0.0.1:"+local+"/index.txt"); body != want {
			t.Errorf("GET through kubectl sandbox port-forward :%s: %q; want %q", port, body, want)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	fw, err := sb.PortForward(ctx, 0, 9090)
	if err != nil {
		t.Fatalf("PortForward: %v", err)
	}
	defer fw.Close()
	if body := httpGetEventually(t, fmt.Sprintf("http://127.0.0.1:%d/index.txt", fw.LocalPort())); body != want {
		t.Errorf("GET through the SDK's PortForward: %q; want %q", body, want)
	}

	px := startKubectl(t, kubectlOptions{kubeconfig: kc, env: pluginEnv()}, 2*waitTimeout, "sandbox", "proxy", "web", "--port", "alt", "--local-port", "0")
	line := px.next(t, "the proxy's address", func(l string) bool { return strings.HasPrefix(l, "Starting to serve") })
	if body := httpGetEventually(t, "http://"+line[strings.LastIndex(line, " ")+1:]+"/index.txt"); body != want {
		t.Errorf("GET through kubectl sandbox proxy: %q; want %q", body, want)
	}
	// The client sends only the path and query, to the sandbox's port through the proxy.
	if status, body := proxyGet(t, sb, "http", "/index.txt"); status != http.StatusOK || body != want {
		t.Errorf("GET through the SDK's HTTP client: %d %q; want %q", status, body, want)
	}
}

// proxyGet GETs path from sb's port through the proxy subresource with the SDK's HTTP client, as
// sb's tenant, and returns the status and body.
func proxyGet(t *testing.T, sb *sandbox.Sandbox, port, path string) (int, string) {
	t.Helper()
	httpClient, err := sb.HTTPClient(port)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Get("http://sandbox" + path)
	if err != nil {
		t.Fatalf("%s: GET %s through the SDK's HTTP client: %v", sb, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// httpGetEventually GETs url until it answers 200 (a forward's first connection may race the
// server's start) and returns the body.
func httpGetEventually(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	var body string
	eventually(t, waitTimeout, "GET "+url+" to answer 200", func() (bool, string) {
		resp, err := client.Get(url)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		body = string(data)
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("%d %q", resp.StatusCode, data)
	})
	return body
}

// TestRealNodeIsolation: two sandboxes do not share files or processes, and each one's host
// name is its own pod's, not the machine's.
func TestRealNodeIsolation(t *testing.T) {
	t.Parallel()
	ns, _, client := realNodeTenant(t)
	a := claimReal(t, client, ns, "shell", "a")
	b := claimReal(t, client, ns, "shell", "b")
	tag := "only-in-b-" + randSuffix(8)

	runOK(t, a, "sh", "-c", "echo secret > /tmp/"+tag)
	if res := run(t, b, "test", "-e", "/tmp/"+tag); res.ExitCode != 1 {
		t.Errorf("a file written in a: test -e in b exits %d; want 1 (absent)", res.ExitCode)
	}
	if _, err := os.Stat("/tmp/" + tag); err == nil {
		t.Errorf("a file written in a sandbox is on this machine")
	}

	// A process of b, named by tag, that outlives the exec.
	runOK(t, b, "sh", "-c", "nohup python3 -c 'import time; time.sleep(600)' "+tag+" >/dev/null 2>&1 &")
	// "[o]nly-in-b-..." matches the tag but not the command lines of this grep and its shell.
	findTag := "grep -l '[o]" + tag[1:] + "' /proc/[0-9]*/cmdline 2>/dev/null | wc -l"
	eventually(t, waitTimeout, "b to see its own process", func() (bool, string) {
		out := runOK(t, b, "sh", "-c", findTag)
		return strings.TrimSpace(out) != "0", out
	})
	if out := runOK(t, a, "sh", "-c", findTag); strings.TrimSpace(out) != "0" {
		t.Errorf("a sees %s processes of b", strings.TrimSpace(out))
	}
	// a's PID 1 is its own main process; it sees a handful of processes, not the machine's.
	if got := runOK(t, a, "sh", "-c", `tr '\0' ' ' < /proc/1/cmdline`); !strings.HasPrefix(got, "sh -c trap") {
		t.Errorf("a's PID 1 is %q; want the template's main process", got)
	}
	if out := strings.TrimSpace(runOK(t, a, "sh", "-c", "ls -d /proc/[0-9]* | wc -l")); len(out) > 1 {
		t.Errorf("a sees %s processes; want its own few (fewer than 10)", out)
	}

	host, _ := os.Hostname()
	for _, sb := range []*sandbox.Sandbox{a, b} {
		got := strings.TrimSpace(runOK(t, sb, "cat", "/proc/sys/kernel/hostname"))
		if got != sb.SandboxName() || got == host {
			t.Errorf("%s's host name is %q; want its pod's, %q", sb, got, sb.SandboxName())
		}
		if uid := strings.TrimSpace(runOK(t, sb, "id", "-u")); uid != "0" {
			t.Errorf("%s runs as uid %s; want the image's root", sb, uid)
		}
	}
}

// TestRealNodeSuspendResumeVolume: a file on the sandbox's persistent volume outlives a suspend
// (the pod deleted, the PersistentVolumeClaim kept) and is there after the resume; one in the
// container's own filesystem is not.
func TestRealNodeSuspendResumeVolume(t *testing.T) {
	t.Parallel()
	ns, kc, client := realNodeTenant(t)
	sb := claimReal(t, client, ns, "volume", "keep")
	runOK(t, sb, "sh", "-c", "echo kept > /work/file; echo lost > /tmp/file")

	// Suspending writes the Sandbox, which the claim-only tenant may not: the admin does it.
	if _, stderr, code := plugin(t, kc, "", "suspend", "keep"); code == 0 || !strings.Contains(stderr, "forbidden") {
		t.Errorf("suspend as the tenant: exit code %d, stderr %q; want forbidden", code, stderr)
	}
	pluginOK(t, "", "-n", ns, "suspend", "keep")
	kubectl(t, "wait", "-n", ns, "--for=delete", "pod/"+sb.SandboxName(), "--timeout=60s")
	if got := jsonpath(t, ns, "{.status.phase}", "pvc", "work-"+sb.SandboxName()); got != "Bound" {
		t.Errorf("the volume's claim while suspended: phase %q; want Bound", got)
	}
	pluginOK(t, "", "-n", ns, "resume", "keep")
	if got := runOK(t, sb, "cat", "/work/file"); got != "kept\n" {
		t.Errorf("/work/file after the resume: %q; want kept", got)
	}
	if res := run(t, sb, "test", "-e", "/tmp/file"); res.ExitCode != 1 {
		t.Errorf("/tmp/file after the resume: test -e exits %d; want 1 (a new container)", res.ExitCode)
	}
}

// TestRealNodeMemoryLimit: a command that allocates past the template's 64 MiB limit is killed
// (exit code 137), and a main process that does is OOMKilled in the pod's status and restarted.
func TestRealNodeMemoryLimit(t *testing.T) {
	t.Parallel()
	ns, _, client := realNodeTenant(t)
	sb := claimReal(t, client, ns, "small", "small")
	if res := run(t, sb, "python3", "-c", "b = bytes(range(256)) * (1 << 20)"); res.ExitCode != 128+9 {
		t.Errorf("allocating 256 MiB under a 64 MiB limit: exit code %d; want 137 (killed)", res.ExitCode)
	}
	if got := runOK(t, sb, "echo", "still here"); got != "still here\n" {
		t.Errorf("after the kill: %q", got)
	}
	// The main process turns into the allocation on SIGUSR1.
	runOK(t, sb, "kill", "-USR1", "1")
	pod := sb.SandboxName()
	kubectl(t, "wait", "-n", ns, "pod/"+pod, "--timeout=90s",
		"--for=jsonpath={.status.containerStatuses[0].lastState.terminated.reason}=OOMKilled")
	eventually(t, 2*waitTimeout, "the sandbox running again", func() (bool, string) {
		res, err := sb.Run(context.Background(), "true")
		return err == nil && res.ExitCode == 0, fmt.Sprint(err)
	})
}

// TestRealNodeUserNamespace: a template with hostUsers: false runs its sandbox as root in a user
// namespace: uid 0 inside maps to an unprivileged uid of the machine.
func TestRealNodeUserNamespace(t *testing.T) {
	t.Parallel()
	ns, _, client := realNodeTenant(t)
	sb := claimReal(t, client, ns, "userns", "userns")
	if uid := strings.TrimSpace(runOK(t, sb, "id", "-u")); uid != "0" {
		t.Errorf("uid in the sandbox %s; want 0", uid)
	}
	f := strings.Fields(runOK(t, sb, "cat", "/proc/self/uid_map"))
	if len(f) != 3 || f[0] != "0" || f[1] == "0" || f[2] == "4294967295" {
		t.Errorf("uid_map %q; want uid 0 mapped to a range of the machine's that does not start at 0", f)
	}
	// The same in a sandbox without a user namespace: the identity map.
	plain := claimReal(t, client, ns, "shell", "plain")
	if f := strings.Fields(runOK(t, plain, "cat", "/proc/self/uid_map")); len(f) != 3 || f[1] != "0" || f[2] != "4294967295" {
		t.Errorf("uid_map without hostUsers: false: %q; want the identity map", f)
	}
}

// TestRealNodeNoShell: in an image without a shell, exec of sh fails at once with an error that
// says so, through the plugin and the SDK.
func TestRealNodeNoShell(t *testing.T) {
	t.Parallel()
	ns, kc, client := realNodeTenant(t)
	sb := claimReal(t, client, ns, "minimal", "bare")
	start := time.Now()
	stdout, stderr, code := plugin(t, kc, "", "exec", "bare", "--", "sh", "-c", "true")
	if code == 0 || !strings.Contains(stdout+stderr, `"sh"`) || !strings.Contains(stdout+stderr, "not found") {
		t.Errorf("kubectl sandbox exec bare -- sh: exit code %d, output %q %q; want an error saying sh is not found", code, stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err := sb.Run(ctx, "sh", "-c", "true")
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("the SDK's Run of sh: %v; want an error saying sh is not found", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the two failing execs took %s", took)
	}
}

// TestRealNodeMCP: an agent, through sandox-mcp over stdio as a claim-only tenant, runs commands
// in a real sandbox (its own host name, not the machine's), moves a binary file both ways, reaches
// its HTTP server, and gets a clear error from an image without a shell.
func TestRealNodeMCP(t *testing.T) {
	t.Parallel()
	ns, kc, _ := realNodeTenant(t)
	cmd := exec.Command(sandboxMCPBinary(t), "--kubeconfig", kc)
	cmd.Stderr = os.Stderr
	session, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	var created struct {
		SandboxID   string `json:"sandbox_id"`
		SandboxName string `json:"sandbox_name"`
		Namespace   string
	}
	callToolOK(t, session, "create_sandbox", map[string]any{"template_name": "web"}, &created)
	if created.Namespace != ns {
		t.Errorf("create_sandbox in %s; want %s", created.Namespace, ns)
	}
	id := created.SandboxID
	var res struct {
		ExitCode       int `json:"exit_code"`
		Stdout, Stderr string
	}
	callToolOK(t, session, "execute_command", map[string]any{"sandbox_id": id, "command": "uname -n; exit 4"}, &res)
	if res.ExitCode != 4 || res.Stdout != created.SandboxName+"\n" {
		t.Errorf("execute_command: %+v; want the sandbox's host name %s and exit code 4", res, created.SandboxName)
	}

	data := make([]byte, 256<<10)
	_, _ = rand.Read(data)
	sum := sha256.Sum256(data)
	callToolOK(t, session, "upload_file", map[string]any{"sandbox_id": id, "path": "/tmp/blob.bin",
		"content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"}, nil)
	callToolOK(t, session, "execute_command", map[string]any{"sandbox_id": id, "command": "sha256sum /tmp/blob.bin"}, &res)
	if !strings.HasPrefix(res.Stdout, hex.EncodeToString(sum[:])+" ") {
		t.Errorf("sha256sum of the uploaded file in the sandbox: %q; want %x", res.Stdout, sum)
	}
	var read struct{ Content, Encoding string }
	callToolOK(t, session, "download_file", map[string]any{"sandbox_id": id, "path": "/tmp/blob.bin"}, &read)
	if got, err := base64.StdEncoding.DecodeString(read.Content); err != nil || !bytes.Equal(got, data) {
		t.Errorf("download_file: %d bytes equal? %v (%s, %v)", len(got), bytes.Equal(got, data), read.Encoding, err)
	}
	var httpRes struct {
		StatusCode int `json:"status_code"`
		Body       string
	}
	callToolOK(t, session, "http_request", map[string]any{"sandbox_id": id, "path": "/index.txt"}, &httpRes)
	if httpRes.StatusCode != http.StatusOK || httpRes.Body != "served-by-"+created.SandboxName+"\n" {
		t.Errorf("http_request: %+v", httpRes)
	}

	var bare struct {
		SandboxID string `json:"sandbox_id"`
	}
	callToolOK(t, session, "create_sandbox", map[string]any{"template_name": "minimal"}, &bare)
	isError, msg := callTool(t, session, "execute_command", map[string]any{"sandbox_id": bare.SandboxID, "command": "true"}, nil)
	if !isError || !strings.Contains(msg, "/bin/sh") || !strings.Contains(msg, "no such file") {
		t.Errorf("execute_command in an image without a shell: error %v, %q; want an error saying there is no /bin/sh", isError, msg)
	}
}
