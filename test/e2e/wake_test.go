// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"testing"
)

// TestWakeOnDemand: a suspended sandbox is resumed by a request through sandboxes/proxy, which
// it answers; with a short idle timeout it is suspended again (its PVC kept, Ready=False
// IdleSuspended) once nobody uses it, and the next request wakes it again.
func TestWakeOnDemand(t *testing.T) {
	t.Parallel()
	ns := newHostNetworkNamespace(t)
	proc := startSandboxProcess(t)
	applyYAML(t, ns, fmt.Sprintf(`apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: sleepy}
spec:
  replicas: 0
  podTemplate: {spec: %s}
  volumeClaimTemplates:
  - metadata: {name: work}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`, proxyPodSpec(proc.port)))
	kubectl(t, "wait", "-n", ns, "--for=condition=Suspended", "sandbox/sleepy", "--timeout=90s")
	admin := restConfig(t, adminKubeconfig)
	echo := "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes/sleepy/proxy/echo"

	// Woken by a request, which it answers.
	if code, body, _ := proxyCall(t, admin, "POST", echo, "wake up", nil); code != 200 || body != "POST wake up" {
		t.Fatalf("request to the suspended sandbox: %d %q; want 200 %q", code, body, "POST wake up")
	}
	if got := jsonpath(t, ns, "{.spec.replicas} {.spec.operatingMode}", "sandbox", "sleepy"); got != "1 Running" {
		t.Errorf("after the wake: replicas and operatingMode %q; want %q", got, "1 Running")
	}
	if got := jsonpath(t, ns, "{.status.lastActivityTime}", "sandbox", "sleepy"); got == "" {
		t.Error("the proxied request left no status.lastActivityTime")
	}

	// Idle for 10 s: suspended, the PVC kept.
	kubectl(t, "patch", "-n", ns, "sandbox/sleepy", "--type=merge", "-p", `{"spec":{"idleTimeout":"10s"}}`)
	kubectl(t, "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=IdleSuspended`, "sandbox/sleepy", "--timeout=90s")
	kubectl(t, "wait", "-n", ns, "--for=condition=Suspended", "sandbox/sleepy", "--timeout=90s")
	if got := jsonpath(t, ns, "{.spec.replicas}", "sandbox", "sleepy"); got != "0" {
		t.Errorf("idle sandbox has replicas %q; want 0", got)
	}
	if got := jsonpath(t, ns, "{.metadata.name}", "pvc", "work-sleepy"); got != "work-sleepy" {
		t.Errorf("PVC work-sleepy after the idle suspend: %q; want it kept", got)
	}
	if out := kubectl(t, "get", "events", "-n", ns, "--field-selector", "reason=IdleSuspended", "-o", "name"); out == "" {
		t.Error("no IdleSuspended event")
	}

	// And woken again by the next request.
	if code, body, _ := proxyCall(t, admin, "GET", echo, "", nil); code != 200 || body != "GET " {
		t.Fatalf("request to the idle-suspended sandbox: %d %q; want 200 %q", code, body, "GET ")
	}
	if got := jsonpath(t, ns, `{.status.conditions[?(@.type=="Ready")].status}`, "sandbox", "sleepy"); got != "True" {
		t.Errorf("Ready after the second wake = %q; want True", got)
	}
}
