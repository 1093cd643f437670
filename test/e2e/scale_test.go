// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"testing"
)

// TestScale drives the scale subresources with kubectl scale: a Sandbox suspends (0) and
// resumes (1) and refuses anything else; a SandboxWarmPool takes any non-negative size.
func TestScale(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: scalable
spec:
  podTemplate:
    spec:
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata:
  name: pool-template
spec:
  podTemplate:
    spec:
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata:
  name: pool
spec:
  replicas: 1
  sandboxTemplateRef:
    name: pool-template
`)

	t.Run("sandbox", func(t *testing.T) {
		out := kubectl(t, "scale", "sandbox/scalable", "-n", ns, "--replicas=0")
		expectContains(t, "kubectl scale --replicas=0", out, "sandbox.agents.x-k8s.io/scalable scaled")
		if got := jsonpath(t, ns, "{.spec.replicas}", "sandbox", "scalable"); got != "0" {
			t.Errorf("after kubectl scale --replicas=0: spec.replicas = %q", got)
		}
		// kubectl wait reads the same field the way scripts do.
		kubectl(t, "wait", "sandbox/scalable", "-n", ns, "--for=jsonpath={.spec.replicas}=0", "--timeout=60s")

		kubectl(t, "scale", "sandbox/scalable", "-n", ns, "--replicas=1")
		if got := jsonpath(t, ns, "{.spec.replicas}", "sandbox", "scalable"); got != "1" {
			t.Errorf("after kubectl scale --replicas=1: spec.replicas = %q", got)
		}

		_, stderr, err := kubectlErr(t, "scale", "sandbox/scalable", "-n", ns, "--replicas=2")
		expectFailure(t, "kubectl scale sandbox --replicas=2", stderr, err, "is invalid", "spec.replicas", "2")
		if got := jsonpath(t, ns, "{.spec.replicas}", "sandbox", "scalable"); got != "1" {
			t.Errorf("after the refused kubectl scale --replicas=2: spec.replicas = %q, want 1", got)
		}

		// The precondition of kubectl scale reads the scale subresource.
		_, stderr, err = kubectlErr(t, "scale", "sandbox/scalable", "-n", ns, "--current-replicas=0", "--replicas=1")
		expectFailure(t, "kubectl scale --current-replicas=0 of a sandbox at 1", stderr, err, "Expected replicas to be 0, was 1")
	})

	t.Run("warm pool", func(t *testing.T) {
		out := kubectl(t, "scale", "swp/pool", "-n", ns, "--replicas=5")
		expectContains(t, "kubectl scale swp --replicas=5", out, "sandboxwarmpool.extensions.agents.x-k8s.io/pool scaled")
		if got := jsonpath(t, ns, "{.spec.replicas}", "swp", "pool"); got != "5" {
			t.Errorf("after kubectl scale swp --replicas=5: spec.replicas = %q", got)
		}
		row := parseTable(t, kubectl(t, "get", "swp", "pool", "-n", ns)).row(t, "pool")
		if row["REPLICAS"] != "5" {
			t.Errorf("kubectl get swp pool: REPLICAS is %q, want 5", row["REPLICAS"])
		}
		kubectl(t, "scale", "swp/pool", "-n", ns, "--replicas=0")
		if got := jsonpath(t, ns, "{.spec.replicas}", "swp", "pool"); got != "0" {
			t.Errorf("after kubectl scale swp --replicas=0: spec.replicas = %q", got)
		}
	})
}
