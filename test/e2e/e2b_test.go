// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The E2B endpoint (docs/e2b.md) is tested with E2B's own, unmodified JS SDK at the versions
// pinned in test/e2e/e2b/package-lock.json, on real containers of the local plane's real node.
// hack/local-up.sh serves the endpoint on 127.0.0.1:E2B_PORT.

// e2bSDKVersions are the npm packages (aliases of e2b@VERSION) the scenario runs with.
var e2bSDKVersions = []string{"e2b-2.50.0", "e2b-2.51.0"}

// e2bURL is the local plane's E2B endpoint.
func e2bURL() string {
	port := os.Getenv("E2B_PORT")
	if port == "" {
		port = "3049"
	}
	return "http://127.0.0.1:" + port
}

// e2bTemplate is the template the E2B tests create from: the real node's shell sandbox, which
// claims may give environment variables (E2B's envVars).
var e2bTemplate = realNodeTemplate("shell", "", shellContainer("agent", "")) + "  envVarsInjectionPolicy: Allowed\n"

// e2bTenant is a namespace with e2bTemplate and a user bound to
// sandbox-apiserver:e2b-user there, with an API key made by `sandbox-apiserver e2b-key`.
type e2bTenant struct {
	ns, user, key string
}

func newE2BTenant(t *testing.T) e2bTenant {
	t.Helper()
	ns := newRealNamespace(t)
	applyYAML(t, ns, e2bTemplate)
	user := "e2b-tenant-" + randSuffix(5)
	kubectl(t, "create", "rolebinding", "e2b-user", "-n", ns, "--clusterrole=sandbox-apiserver:e2b-user", "--user="+user)
	waitCanI(t, "create", "sandboxclaims/exec", "-n", ns, "--as="+user)
	cmd := exec.Command(filepath.Join(repoRoot, "_output/bin/sandbox-apiserver"), "e2b-key",
		"--kubeconfig", adminKubeconfig, "--user", user, "--namespace", ns)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sandbox-apiserver e2b-key: %v\n%s", err, stderr.String())
	}
	key := strings.TrimSpace(string(out))
	id := sha256.Sum256([]byte(key))
	secret := "e2b-key-" + hex.EncodeToString(id[:])[:20]
	t.Cleanup(func() { kubectl(t, "delete", "secret", "-n", "sandbox-system", secret, "--ignore-not-found") })
	return e2bTenant{ns: ns, user: user, key: key}
}

// npmInstalled installs the pinned SDKs (npm ci, from the lockfile) with the scenario into
// _output/e2e-e2b once per lockfile and returns that directory.
var npmInstalled = sync.OnceValues(func() (string, error) {
	src := filepath.Join(repoRoot, "test/e2e/e2b")
	dir := filepath.Join(repoRoot, "_output/e2e-e2b")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return "", err
	}
	for _, f := range []string{"package.json", "package-lock.json", "scenario.mjs"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return "", err
		}
	}
	sum := sha256.Sum256(lock)
	stamp := filepath.Join(dir, "node_modules/.lock-sha256")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == hex.EncodeToString(sum[:]) {
		return dir, nil
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return dir, os.WriteFile(stamp, []byte(hex.EncodeToString(sum[:])), 0o644)
})

// scenarioStep is one line the scenario prints.
type scenarioStep struct {
	Step  string `json:"step"`
	OK    bool   `json:"ok"`
	MS    int    `json:"ms"`
	Error string `json:"error"`
}

// TestE2BJSSDK runs test/e2e/e2b/scenario.mjs with each pinned version of E2B's JS SDK, as a
// tenant whose key acts as a user with sandbox-apiserver:e2b-user only: create with envs and
// metadata, commands (cwd, envs, onStdout, exit codes, stdin, kill, list, connect), a terminal,
// files (text and binary, list, exists, makeDir, rename, remove), getInfo, list by metadata,
// setTimeout, pause and connect, kill; another tenant's key sees, runs in and kills nothing of it, a wrong access
// token and an unknown key are refused, an unknown template is not found.
func TestE2BJSSDK(t *testing.T) {
	t.Parallel()
	requireRealNode(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is needed to run E2B's JS SDK: %v", err)
	}
	dir, err := npmInstalled()
	if err != nil {
		t.Fatal(err)
	}
	for _, sdk := range e2bSDKVersions {
		t.Run(sdk, func(t *testing.T) {
			t.Parallel()
			tenant, other := newE2BTenant(t), newE2BTenant(t)
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", "scenario.mjs", sdk)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "E2B_API_URL="+e2bURL(), "E2B_SANDBOX_URL="+e2bURL(),
				"E2B_API_KEY="+tenant.key, "E2B_OTHER_API_KEY="+other.key, "E2B_TEMPLATE=shell")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			passed := 0
			scanner := bufio.NewScanner(stdout)
			scanner.Buffer(make([]byte, 1<<20), 1<<20)
			for scanner.Scan() {
				var s scenarioStep
				if err := json.Unmarshal(scanner.Bytes(), &s); err != nil {
					t.Logf("scenario: %s", scanner.Text())
					continue
				}
				if !s.OK {
					t.Errorf("%s: step %q failed after %d ms:\n%s", sdk, s.Step, s.MS, indent(s.Error))
					continue
				}
				passed++
				t.Logf("%s: %s (%d ms)", sdk, s.Step, s.MS)
			}
			err = cmd.Wait()
			if err != nil || passed < 16 {
				t.Fatalf("scenario with %s: %v after %d passed steps; stderr:\n%s", sdk, err, passed, indent(stderr.String()))
			}
		})
	}
}

// e2bDo sends an E2B API request with key and returns the status and body.
func e2bDo(t *testing.T, key, method, path, body string, header ...string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e2bURL()+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// expectE2BError checks an answer is E2B's {code, message} error with status code, the message
// containing want.
func expectE2BError(t *testing.T, what string, code int, body string, wantCode int, want string) {
	t.Helper()
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(body), &e); code != wantCode || err != nil || e.Code != wantCode || !strings.Contains(e.Message, want) {
		t.Errorf("%s: %d %s; want %d with an E2B error body saying %q", what, code, body, wantCode, want)
	}
}

// TestE2BEndpointErrors: bad input gets E2B's error body with the right status and costs
// nothing (no claim is left behind), and a sandbox of another tenant is absent on every path
// of both planes; a template with a warm pool of its name is served warm.
func TestE2BEndpointErrors(t *testing.T) {
	t.Parallel()
	requireRealNode(t)
	a, b := newE2BTenant(t), newE2BTenant(t)
	applyYAML(t, a.ns, fmt.Sprintf(warmPool, "warm-shell", 1, "shell", "Recreate"))
	waitPoolReady(t, a.ns, "warm-shell", 1)

	code, body := e2bDo(t, "", "GET", "/v2/sandboxes", "")
	expectE2BError(t, "no key", code, body, 401, "missing API key")
	code, body = e2bDo(t, "e2b_"+strings.Repeat("1", 40), "GET", "/v2/sandboxes", "")
	expectE2BError(t, "unknown key", code, body, 401, "invalid API key")
	for _, c := range []struct{ what, body, want string }{
		{"malformed JSON", `{"templateID": "shell",`, "invalid request body"},
		{"wrong type", `{"templateID": "shell", "timeout": "soon"}`, "field timeout must be an integer"},
		{"no template", `{}`, "templateID is required"},
		{"timeout out of bounds", `{"templateID": "shell", "timeout": 0}`, "timeout must be between"},
		{"invalid env name", `{"templateID": "shell", "envVars": {"1 bad": "x"}}`, "spec.env"},
		{"unsupported network", `{"templateID": "shell", "network": {"denyOut": ["0.0.0.0/0"]}}`, "not supported: network"},
	} {
		code, body := e2bDo(t, a.key, "POST", "/v2/sandboxes", c.body)
		expectE2BError(t, c.what, code, body, 400, c.want)
	}
	code, body = e2bDo(t, a.key, "POST", "/v2/sandboxes", `{"templateID": "no-such-template"}`)
	expectE2BError(t, "unknown template", code, body, 404, `template "no-such-template" not found`)
	code, body = e2bDo(t, a.key, "POST", "/sandboxes/x/snapshots", `{}`)
	expectE2BError(t, "snapshots", code, body, 501, "not supported")
	code, body = e2bDo(t, a.key, "GET", "/v2/sandboxes?state=gone", "")
	expectE2BError(t, "bad state filter", code, body, 400, `state "gone"`)
	if out := kubectl(t, "get", "sandboxclaims", "-n", a.ns, "-o", "name"); out != "" {
		t.Errorf("refused creates left claims behind: %s", out)
	}

	// Warm: the pool's name as template ID; the claim adopts the pool's member.
	code, body = e2bDo(t, a.key, "POST", "/sandboxes", `{"templateID": "warm-shell", "timeout": 300, "metadata": {"kind": "warm"}}`)
	if code != 201 {
		t.Fatalf("create from the warm pool (v1 path): %d %s", code, body)
	}
	var created struct {
		SandboxID, TemplateID, EnvdAccessToken, EnvdVersion string
	}
	if err := json.Unmarshal([]byte(body), &created); err != nil || created.EnvdAccessToken == "" || created.EnvdVersion == "" {
		t.Fatalf("create answered %s (%v)", body, err)
	}
	if got := jsonpath(t, a.ns, "{.spec.warmPoolRef.name}", "sandboxclaim", created.SandboxID); got != "warm-shell" {
		t.Errorf("the claim's warm pool is %q, want warm-shell", got)
	}
	sandboxName := jsonpath(t, a.ns, "{.status.sandbox.name}", "sandboxclaim", created.SandboxID)
	if got := jsonpath(t, a.ns, "{.metadata.labels.agents\\.x-k8s\\.io/launch-type}", "sandbox", sandboxName); got != "warm" {
		t.Errorf("the claim's sandbox %s has launch type %q, want warm", sandboxName, got)
	}

	// Another tenant: the sandbox is absent on every path of both planes.
	id := created.SandboxID
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/sandboxes/" + id, ""},
		{"DELETE", "/sandboxes/" + id, ""},
		{"POST", "/sandboxes/" + id + "/timeout", `{"timeout": 1}`},
		{"POST", "/sandboxes/" + id + "/pause", ""},
		{"POST", "/v2/sandboxes/" + id + "/connect", `{"timeout": 60}`},
		{"POST", "/sandboxes/" + id + "/connect", `{"timeout": 60}`},
	} {
		code, body := e2bDo(t, b.key, c.method, c.path, c.body)
		expectE2BError(t, "the other tenant's "+c.method+" "+c.path, code, body, 404, "not found")
	}
	code, body = e2bDo(t, b.key, "GET", "/v2/sandboxes", "")
	if code != 200 || strings.Contains(body, id) {
		t.Errorf("the other tenant's list: %d %s; want 200 without %s", code, body, id)
	}
	code, body = e2bDo(t, "", "GET", "/health", "", "E2b-Sandbox-Id", id, "X-Access-Token", created.EnvdAccessToken)
	if code != 204 && code != 200 {
		t.Errorf("the daemon's /health with the sandbox's own token: %d %s", code, body)
	}
	for what, token := range map[string]string{"no token": "", "a wrong token": "not-a-token", "a forged token": created.EnvdAccessToken[:21] + "AAAA"} {
		code, body := e2bDo(t, "", "GET", "/files?path=/etc/hostname", "", "E2b-Sandbox-Id", id, "X-Access-Token", token)
		expectE2BError(t, "the daemon's /files with "+what, code, body, 401, "token")
	}
	if got := jsonpath(t, a.ns, "{.metadata.name}", "sandboxclaim", id); got != id {
		t.Errorf("the claim is gone after the other tenant's requests: %q", got)
	}

	// Kill, then kill again: 204 then 404.
	if code, body := e2bDo(t, a.key, "DELETE", "/sandboxes/"+id, ""); code != 204 {
		t.Errorf("kill: %d %s", code, body)
	}
	code, body = e2bDo(t, a.key, "DELETE", "/sandboxes/"+id, "")
	expectE2BError(t, "kill of a killed sandbox", code, body, 404, "not found")
}
