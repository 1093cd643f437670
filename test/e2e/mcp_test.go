// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/mcpserver"
)

// The MCP tests drive the sandbox-mcp binary that make build wrote, with the Go MCP SDK's own
// client, over stdio as a local agent does and over streamable HTTP as a remote one does.

// mcpListCap is the --max-list-entries the tests start sandbox-mcp with, so a listing is
// truncated without making a thousand files.
const mcpListCap = 5

func sandboxMCPBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(repoRoot, "_output/bin/sandbox-mcp")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run make build first", err)
	}
	return bin
}

// mcpTemplate makes the template the MCP tests claim from: a sandbox serving HTTP.
func mcpTemplate(t *testing.T, ns string) {
	t.Helper()
	applyHTTPTemplate(t, ns, "mcp")
}

// callTool calls a tool and decodes its structured result into out; it returns whether the
// tool reported an error, and its text.
func callTool(t *testing.T, session *mcp.ClientSession, name string, args map[string]any, out any) (isError bool, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if !res.IsError && out != nil {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: decoding %s: %v", name, data, err)
		}
	}
	return res.IsError, text
}

// callToolOK calls a tool and fails the test when it reports an error.
func callToolOK(t *testing.T, session *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	if isError, text := callTool(t, session, name, args, out); isError {
		t.Fatalf("%s %v: %s", name, args, text)
	}
}

// exerciseMCPTools does what an agent does with a sandbox through session, in namespace ns
// (the session's default): claim one, run commands, move files both ways, list past the cap,
// reach its HTTP server, delete it.
func exerciseMCPTools(t *testing.T, session *mcp.ClientSession, ns string) {
	ctx := context.Background()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"create_sandbox", "delete_sandbox", "execute_command", "upload_file", "download_file", "list_files",
		"file_exists", "http_request", "get_sandbox_status", "list_sandboxes", "suspend_sandbox", "resume_sandbox"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}

	var created struct {
		SandboxID          string `json:"sandbox_id"`
		Namespace, Session string
		Ready              bool
	}
	callToolOK(t, session, "create_sandbox", map[string]any{"template_name": "mcp", "labels": map[string]string{"purpose": "e2e"}}, &created)
	if !created.Ready || created.Namespace != ns || created.Session == "" {
		t.Fatalf("create_sandbox: %+v; want a ready sandbox in %s with a session", created, ns)
	}
	id := created.SandboxID
	labelPath := "{.metadata.labels." + strings.ReplaceAll(mcpserver.SessionLabel, ".", "\\.") + "}"
	if got := jsonpath(t, ns, labelPath, "sandboxclaim", id); got != created.Session {
		t.Errorf("the claim's %s label is %q, want %s", mcpserver.SessionLabel, got, created.Session)
	}
	shutdown, _ := lookup(getObject(t, ns, "sandboxclaim", id), "spec.lifecycle.shutdownTime")
	if at, err := time.Parse(time.RFC3339, fmt.Sprint(shutdown)); err != nil || time.Until(at) < 50*time.Minute || time.Until(at) > 61*time.Minute {
		t.Errorf("the claim's shutdown time is %v; want about an hour from now", shutdown)
	}

	t.Run("execute_command", func(t *testing.T) {
		var res struct {
			ExitCode        int `json:"exit_code"`
			Stdout, Stderr  string
			StdoutTruncated bool `json:"stdout_truncated"`
		}
		callToolOK(t, session, "execute_command", map[string]any{"sandbox_id": id, "command": "echo to stdout; echo to stderr >&2; exit 3"}, &res)
		if res.ExitCode != 3 || res.Stdout != "to stdout\n" || !strings.Contains(res.Stderr, "to stderr") || res.StdoutTruncated {
			t.Errorf("execute_command: %+v; want exit code 3, stdout and stderr", res)
		}
	})

	dir := "/tmp/mcp-" + randSuffix(8)
	t.Run("files", func(t *testing.T) {
		text := "hello, wörld\nsecond line\n"
		var written struct{ Size int }
		callToolOK(t, session, "upload_file", map[string]any{"sandbox_id": id, "path": dir + "/sub/hello.txt", "content": text}, &written)
		if written.Size != len(text) {
			t.Errorf("upload_file wrote %d bytes, want %d", written.Size, len(text))
		}
		var read struct{ Content, Encoding string }
		callToolOK(t, session, "download_file", map[string]any{"sandbox_id": id, "path": dir + "/sub/hello.txt"}, &read)
		if read.Content != text || read.Encoding != "text" {
			t.Errorf("download_file: %q (%s), want %q as text", read.Content, read.Encoding, text)
		}

		binary := make([]byte, 3000)
		rand.Read(binary)
		binary[0] = 0xff // never valid UTF-8
		callToolOK(t, session, "upload_file", map[string]any{"sandbox_id": id, "path": dir + "/blob.bin",
			"content": base64.StdEncoding.EncodeToString(binary), "encoding": "base64"}, nil)
		callToolOK(t, session, "download_file", map[string]any{"sandbox_id": id, "path": dir + "/blob.bin"}, &read)
		got, err := base64.StdEncoding.DecodeString(read.Content)
		if err != nil || read.Encoding != "base64" || !bytes.Equal(got, binary) {
			t.Errorf("download_file of binary: encoding %s, %d bytes equal %v, %v", read.Encoding, len(got), bytes.Equal(got, binary), err)
		}
		var sum struct{ Stdout string }
		callToolOK(t, session, "execute_command", map[string]any{"sandbox_id": id, "command": "sha256sum " + dir + "/blob.bin"}, &sum)
		if want := sha256.Sum256(binary); !strings.HasPrefix(sum.Stdout, hex.EncodeToString(want[:])+" ") {
			t.Errorf("sha256sum of the uploaded file in the sandbox: %q; want %x", sum.Stdout, want)
		}

		var exists struct {
			Exists bool
			Type   string
		}
		callToolOK(t, session, "file_exists", map[string]any{"sandbox_id": id, "path": dir + "/sub"}, &exists)
		if !exists.Exists || exists.Type != "directory" {
			t.Errorf("file_exists of a directory: %+v", exists)
		}
		callToolOK(t, session, "file_exists", map[string]any{"sandbox_id": id, "path": dir + "/nothing-here"}, &exists)
		if exists.Exists {
			t.Errorf("file_exists of a missing path: %+v", exists)
		}
		isError, msg := callTool(t, session, "download_file", map[string]any{"sandbox_id": id, "path": dir + "/nothing-here"}, nil)
		if !isError || !strings.Contains(msg, "nothing-here") {
			t.Errorf("download_file of a missing file: error %v, %q", isError, msg)
		}
	})

	t.Run("list_files", func(t *testing.T) {
		callToolOK(t, session, "execute_command", map[string]any{"sandbox_id": id, "command": "mkdir -p " + dir + "/many && cd " + dir + "/many && touch f1 f2 f3 f4 f5 f6 f7 f8"}, nil)
		var listing struct {
			Entries   []struct{ Name, Type string }
			Total     int
			Truncated bool
		}
		callToolOK(t, session, "list_files", map[string]any{"sandbox_id": id, "path": dir + "/many"}, &listing)
		if len(listing.Entries) != mcpListCap || !listing.Truncated || listing.Total != 8 || listing.Entries[0].Name != "f1" || listing.Entries[0].Type != "file" {
			t.Errorf("list_files past the cap of %d: %+v", mcpListCap, listing)
		}
		callToolOK(t, session, "list_files", map[string]any{"sandbox_id": id, "path": dir + "/sub"}, &listing)
		if len(listing.Entries) != 1 || listing.Truncated {
			t.Errorf("list_files under the cap: %+v", listing)
		}
	})

	t.Run("http_request", func(t *testing.T) {
		var res struct {
			StatusCode int `json:"status_code"`
			Body       string
		}
		callToolOK(t, session, "http_request", map[string]any{"sandbox_id": id, "path": "/from-mcp?x=1"}, &res)
		if res.StatusCode != http.StatusOK || res.Body != "hello from /from-mcp" {
			t.Errorf("http_request: %+v", res)
		}
	})

	t.Run("listings and resources", func(t *testing.T) {
		var list struct {
			Sandboxes []struct {
				SandboxID string `json:"sandbox_id"`
			}
		}
		callToolOK(t, session, "list_sandboxes", map[string]any{"this_session_only": true}, &list)
		if len(list.Sandboxes) != 1 || list.Sandboxes[0].SandboxID != id {
			t.Errorf("list_sandboxes of this session: %+v, want only %s", list, id)
		}
		resources, err := session.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		uri := "sandbox://" + ns + "/sandboxclaims/" + id
		if !slices.ContainsFunc(resources.Resources, func(r *mcp.Resource) bool { return r.URI == uri }) {
			t.Errorf("resources lack %s", uri)
		}
		read, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, `"ready": true`) {
			t.Errorf("reading %s: %v, %v", uri, read, err)
		}
	})

	var deleted struct{ Deleted bool }
	callToolOK(t, session, "delete_sandbox", map[string]any{"sandbox_id": id}, &deleted)
	if !deleted.Deleted {
		t.Errorf("delete_sandbox: %+v", deleted)
	}
	eventually(t, waitTimeout, "the claim to be gone", func() (bool, string) {
		_, stderr, err := kubectlErr(t, "get", "sandboxclaim", id, "-n", ns)
		return err != nil && strings.Contains(stderr, "NotFound"), "still there"
	})
	isError, msg := callTool(t, session, "execute_command", map[string]any{"sandbox_id": id, "command": "true"}, nil)
	if !isError || !strings.Contains(msg, "list_sandboxes") {
		t.Errorf("execute_command on a deleted sandbox: error %v, %q; want an error pointing to list_sandboxes", isError, msg)
	}
}

// TestMCPStdio: an agent starts sandbox-mcp as a subprocess with the kubeconfig of a
// claim-only tenant, and uses every kind of tool through it.
func TestMCPStdio(t *testing.T) {
	t.Parallel()
	bin := sandboxMCPBinary(t)
	ns := newRealNamespace(t)
	mcpTemplate(t, ns)
	_, kc := newClaimTenant(t, ns)

	cmd := exec.Command(bin, "--kubeconfig", kc, "--max-list-entries", fmt.Sprint(mcpListCap))
	cmd.Stderr = os.Stderr
	ctx := context.Background()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	exerciseMCPTools(t, session, ns)

	// The tenant may not touch sandboxes directly: suspending says which right is missing.
	var created struct {
		SandboxID string `json:"sandbox_id"`
	}
	callToolOK(t, session, "create_sandbox", map[string]any{"template_name": "mcp", "shutdown_after_seconds": 600}, &created)
	isError, msg := callTool(t, session, "suspend_sandbox", map[string]any{"sandbox_id": created.SandboxID}, nil)
	if !isError || !strings.Contains(msg, "forbidden") || !strings.Contains(msg, `"sandboxes"`) || !strings.Contains(msg, "Role") {
		t.Errorf("suspend_sandbox as a claim-only tenant: error %v, %q; want a forbidden naming the right", isError, msg)
	}
	callToolOK(t, session, "delete_sandbox", map[string]any{"sandbox_id": created.SandboxID}, nil)
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// startMCPHTTP starts sandbox-mcp serving HTTP on a free loopback port, with a kubeconfig that
// has the cluster's address and CA and no credentials at all, and returns its URL.
func startMCPHTTP(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name := range cfg.AuthInfos {
		cfg.AuthInfos[name] = clientcmdapi.NewAuthInfo()
	}
	kc := filepath.Join(t.TempDir(), "cluster-only.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, sandboxMCPBinary(t), "--kubeconfig", kc, "--http-address", "127.0.0.1:0", "--max-list-entries", fmt.Sprint(mcpListCap))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`url=(\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
			fmt.Fprintln(os.Stderr, "sandbox-mcp:", sc.Text())
		}
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(waitTimeout):
		t.Fatal("sandbox-mcp did not say where it serves")
	}
	return ""
}

// mcpPost sends one JSON-RPC message to the MCP endpoint as a client would, with token (none
// when empty) and session (none when empty), and returns the status.
func mcpPost(t *testing.T, url, token, session, body string) int {
	t.Helper()
	header := http.Header{}
	if session != "" {
		header.Set("Mcp-Session-Id", session)
	}
	return mcpRequest(t, url, token, body, header).StatusCode
}

// mcpRequest posts body to the MCP endpoint with the headers of a streamable HTTP client, token
// as a bearer token (none when empty) and header on top, and returns the answer, body closed.
func mcpRequest(t *testing.T, url, token, body string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestMCPHTTP: a remote agent reaches sandbox-mcp over streamable HTTP with the token of a
// ServiceAccount that may use claims in one namespace only; the server has no credentials.
func TestMCPHTTP(t *testing.T) {
	t.Parallel()
	ns := newRealNamespace(t)
	other := newRealNamespace(t)
	mcpTemplate(t, ns)
	applyYAML(t, ns, claimTenantRole)
	kubectl(t, "create", "serviceaccount", "agent", "-n", ns)
	kubectl(t, "create", "rolebinding", "claim-user", "-n", ns, "--role=claim-user", "--serviceaccount="+ns+":agent")
	waitCanI(t, "create", "sandboxclaims/exec", "-n", ns, "--as=system:serviceaccount:"+ns+":agent")
	token := strings.TrimSpace(kubectl(t, "create", "token", "agent", "-n", ns, "--duration=1h"))
	kubectl(t, "create", "serviceaccount", "intruder", "-n", other)
	intruderToken := strings.TrimSpace(kubectl(t, "create", "token", "intruder", "-n", other, "--duration=1h"))

	url := startMCPHTTP(t)
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	if code := mcpPost(t, url, "", "", initialize); code != http.StatusUnauthorized {
		t.Errorf("without a token: status %d, want 401", code)
	}
	if code := mcpPost(t, url, "not-a-token", "", initialize); code != http.StatusUnauthorized {
		t.Errorf("with a token the cluster refuses: status %d, want 401", code)
	}

	ctx := context.Background()
	transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token: token}}}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	t.Run("another user's token on the session", func(t *testing.T) {
		const listTools = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
		if code := mcpPost(t, url, intruderToken, session.ID(), listTools); code != http.StatusForbidden {
			t.Errorf("another user on the session: status %d, want 403", code)
		}
	})

	// The ServiceAccount's namespace is the session's default.
	exerciseMCPTools(t, session, ns)

	t.Run("another namespace", func(t *testing.T) {
		isError, msg := callTool(t, session, "create_sandbox", map[string]any{"template_name": "mcp", "namespace": other}, nil)
		if !isError || !strings.Contains(msg, "forbidden") || !strings.Contains(msg, `"sandboxclaims"`) || !strings.Contains(msg, other) {
			t.Errorf("create_sandbox in %s: error %v, %q; want forbidden", other, isError, msg)
		}
		if out := kubectl(t, "get", "sandboxclaims", "-n", other, "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("claims were made in %s: %s", other, out)
		}
	})
}
