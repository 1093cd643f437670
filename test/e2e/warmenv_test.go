// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// envReader is the main process of the warm-env templates: it waits for the delivered file, loads
// it and records what it got, as an agent that reads its task when claimed would.
const envReader = `while [ ! -f /run/claim/env ]; do sleep 0.02; done; . /run/claim/env; ` +
	`echo "${TASK_ID-unset}" > /tmp/process-saw; while :; do sleep 600 & wait $!; done`

// envTemplate is a SandboxTemplate named name whose claims may set env, delivered as the YAML
// (flow style) delivery says, running main.
func envTemplate(name, delivery, main string) string {
	t := realNodeTemplate(name, "", fmt.Sprintf("{name: agent, image: %s, command: [sh, -c, %s]}", sandboxImage, yamlQuote(main))) +
		"  envVarsInjectionPolicy: Allowed\n"
	if delivery != "" {
		t += "  envVarsDelivery: " + delivery + "\n"
	}
	return t
}

// envClaim is a claim of pool carrying env (NAME=value pairs) in its spec.
func envClaim(name, pool string, env ...string) string {
	var entries []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		entries = append(entries, fmt.Sprintf("{name: %s, value: %s}", k, yamlQuote(v)))
	}
	c := fmt.Sprintf("apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nmetadata: {name: %s}\nspec:\n  warmPoolRef: {name: %s}\n", name, pool)
	if len(entries) > 0 {
		c += "  env: [" + strings.Join(entries, ", ") + "]\n"
	}
	return c
}

// createClaim creates manifest as the tenant of kc and returns what its create response says of
// Ready (status and reason) and the sandbox it names.
func createClaim(t *testing.T, kc, ns, manifest string) (ready, sandboxName string) {
	t.Helper()
	out := kubectlAsStdin(t, kc, manifest, "create", "-n", ns, "-f", "-", "-o",
		`jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason} {.status.sandbox.name}`)
	ready, sandboxName, _ = strings.Cut(out, " ")
	return ready, sandboxName
}

// TestWarmClaimEnv: a claim's own env reaches a warm sandbox without a cold start, where its users
// look for it: exec through the plugin and both SDKs, and the sandbox's own process through the
// template's delivery, before the claim is Ready; another claim of the same pool sees none of it;
// a delivery that fails never hands the member over; claims without values are still bound and
// Ready in their create response.
func TestWarmClaimEnv(t *testing.T) {
	t.Parallel()
	ns, kc, client := realNodeTenant(t)
	applyYAML(t, ns, strings.Join([]string{
		envTemplate("env-file", "{file: /run/claim/env}", envReader),
		envTemplate("env-exec", "", realNodeShell),
		// Fails in a warm member (its pod lacks the env, and the delivery's exec is not given
		// it), succeeds in a sandbox made with the env.
		envTemplate("env-cold", `{command: [sh, -c, '[ -n "$TASK_ID" ] || { echo no TASK_ID >&2; exit 3; }']}`, realNodeShell),
		envTemplate("env-broken", "{command: [sh, -c, 'echo delivery-refused >&2; exit 3'], timeoutSeconds: 5}", realNodeShell),
		fmt.Sprintf(warmPool, "file-pool", 2, "env-file", "Recreate"),
		fmt.Sprintf(warmPool, "exec-pool", 1, "env-exec", "Recreate"),
		fmt.Sprintf(warmPool, "cold-pool", 1, "env-cold", "Recreate"),
		fmt.Sprintf(warmPool, "broken-pool", 1, "env-broken", "Recreate"),
	}, "---\n"))
	for pool, n := range map[string]int{"file-pool": 2, "exec-pool": 1, "cold-pool": 1, "broken-pool": 1} {
		waitPoolReady(t, ns, pool, n)
	}
	members := kubectl(t, "get", "sandboxes", "-n", ns, "-o", "name")

	// Five values, one with what a shell would expand.
	values := []string{"TASK_ID=a-1", "USER_TOKEN=tok'en $HOME", "CALLBACK_URL=http://cb.example/a?x=1&y=2", "REGION=eu", "ATTEMPT=1"}
	ready, sbName := createClaim(t, kc, ns, envClaim("with-env", "file-pool", values...))
	if ready != "False/EnvDeliveryPending" || !strings.Contains(members, "sandbox.agents.x-k8s.io/"+sbName+"\n") {
		t.Errorf("create response of a claim with env: Ready %q, sandbox %q; want a warm member, Ready False/EnvDeliveryPending", ready, sbName)
	}
	kubectlAs(t, kc, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/with-env", "--timeout=60s")
	if got := jsonpath(t, ns, `{.status.conditions[?(@.type=="EnvDelivered")].reason}`, "sandboxclaim", "with-env"); got != "Delivered" {
		t.Errorf("EnvDelivered reason %q, want Delivered", got)
	}

	t.Run("exec through the plugin", func(t *testing.T) {
		stdout, stderr, code := plugin(t, kc, "", "exec", "with-env", "--", "sh", "-c", `printf '%s|%s|%s' "$TASK_ID" "$USER_TOKEN" "$CALLBACK_URL"`)
		if want := "a-1|tok'en $HOME|http://cb.example/a?x=1&y=2"; stdout != want || code != 0 {
			t.Errorf("kubectl sandbox exec: %q (exit %d, stderr %q), want %q", stdout, code, stderr, want)
		}
	})
	t.Run("exec through the Go SDK", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		sb, err := client.OpenClaim(ctx, ns, "with-env")
		if err != nil {
			t.Fatal(err)
		}
		if got := runOK(t, sb, "sh", "-c", `echo "$REGION/$ATTEMPT"`); got != "eu/1\n" {
			t.Errorf("Go SDK: %q, want eu/1", got)
		}
	})
	t.Run("exec through the Python SDK", func(t *testing.T) {
		script := `import sys
from sandbox_apiserver import SandboxClient
c = SandboxClient(kubeconfig=sys.argv[1], namespace=sys.argv[2], cleanup=False)
sb = c.get_sandbox("with-env")
print(sb.commands.run("echo $TASK_ID").stdout, end="")
`
		cmd := exec.Command(python, "-c", script, kc, ns)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(repoRoot, "clients/python/src"), "PYTHONDONTWRITEBYTECODE=1")
		out, err := cmd.Output()
		if err != nil || string(out) != "a-1\n" {
			t.Errorf("Python SDK: %q, %v; want a-1", out, err)
		}
	})
	t.Run("the sandbox's own process", func(t *testing.T) {
		stdout, _, _ := plugin(t, kc, "", "exec", "with-env", "--", "sh", "-c", "cat /tmp/process-saw; stat -c %a /run/claim/env")
		if stdout != "a-1\n600\n" {
			t.Errorf("the process read %q from the delivered file (and its mode); want a-1 and 600", stdout)
		}
	})
	t.Run("another claim of the pool", func(t *testing.T) {
		ready, _ := createClaim(t, kc, ns, envClaim("other", "file-pool"))
		if ready != "True/DependenciesReady" {
			t.Errorf("create response of a claim without env: Ready %q, want True (bound at create)", ready)
		}
		stdout, _, _ := plugin(t, kc, "", "exec", "other", "--", "sh", "-c", `echo "${TASK_ID-unset}"; ls /run/claim 2>&1 | head -1; env | grep -c -e a-1 -e tok || true`)
		if !strings.HasPrefix(stdout, "unset\n") || !strings.Contains(stdout, "No such file") || !strings.HasSuffix(stdout, "0\n") {
			t.Errorf("another claim's sandbox: %q; want no TASK_ID, no delivered file, none of the values", stdout)
		}
	})
	t.Run("warm without a delivery", func(t *testing.T) {
		ready, sbName := createClaim(t, kc, ns, envClaim("exec-only", "exec-pool", "TASK_ID=e-5"))
		if ready != "True/DependenciesReady" || sbName == "exec-only" {
			t.Errorf("create response: Ready %q, sandbox %q; want a warm member, Ready at once", ready, sbName)
		}
		if stdout, _, _ := plugin(t, kc, "", "exec", "exec-only", "--", "sh", "-c", "echo $TASK_ID"); stdout != "e-5\n" {
			t.Errorf("exec: %q, want e-5", stdout)
		}
	})
	t.Run("a warm delivery fails, a cold one succeeds", func(t *testing.T) {
		_, warmName := createClaim(t, kc, ns, envClaim("falls-back", "cold-pool", "TASK_ID=c-3"))
		kubectlAs(t, kc, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/falls-back", "--timeout=90s")
		if got := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", "falls-back"); got != "falls-back" {
			t.Errorf("Ready with sandbox %q, want one made for the claim (falls-back)", got)
		}
		kubectl(t, "wait", "-n", ns, "--for=delete", "sandbox/"+warmName, "--timeout=60s")
		events := kubectl(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name=falls-back,reason=EnvDeliveryFailed", "-o", "jsonpath={.items[*].message}")
		expectContains(t, "the warm failure's Event", events, "warm sandbox "+warmName, "no TASK_ID", "discarded")
		if stdout, _, _ := plugin(t, kc, "", "exec", "falls-back", "--", "sh", "-c", "echo $TASK_ID"); stdout != "c-3\n" {
			t.Errorf("exec: %q, want c-3", stdout)
		}
	})
	t.Run("a delivery that always fails", func(t *testing.T) {
		_, warmName := createClaim(t, kc, ns, envClaim("broken", "broken-pool", "TASK_ID=x"))
		kubectl(t, "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="EnvDelivered")].reason}=DeliveryFailed`, "sandboxclaim/broken", "--timeout=90s")
		if got := jsonpath(t, ns, `{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}`, "sandboxclaim", "broken"); got != "False/EnvDeliveryFailed" {
			t.Errorf("Ready %q, want False/EnvDeliveryFailed", got)
		}
		msg := jsonpath(t, ns, `{.status.conditions[?(@.type=="EnvDelivered")].message}`, "sandboxclaim", "broken")
		expectContains(t, "EnvDelivered's message", msg, "exit code 3", "delivery-refused")
		// The member it first adopted is gone, not back in the pool, which made a new one.
		if _, _, err := kubectlErr(t, "get", "sandbox", "-n", ns, warmName); err == nil {
			t.Errorf("the warm member %s whose delivery failed still exists", warmName)
		}
		waitPoolReady(t, ns, "broken-pool", 1)
	})
}
