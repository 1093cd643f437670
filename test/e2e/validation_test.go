// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"strings"
	"testing"
)

// TestBadInput sends what users get wrong: kubectl must fail and print the server's field errors,
// and nothing of it may be stored.
func TestBadInput(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)

	invalid := []struct {
		name, resource, manifest string
		want                     []string // in stderr
	}{{
		name: "sandbox", resource: "sandbox/bad-sandbox",
		manifest: `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: bad-sandbox
spec:
  podTemplate:
    spec:
      containers: []
  replicas: 2
  shutdownPolicy: Sometimes
`,
		want: []string{
			`The Sandbox "bad-sandbox" is invalid`,
			"spec.podTemplate.spec.containers: Required value",
			"spec.replicas: Invalid value: 2",
			`spec.shutdownPolicy: Unsupported value: "Sometimes"`, `"Delete"`, `"Retain"`,
		},
	}, {
		name: "sandbox v1alpha1", resource: "sandbox/bad-alpha",
		manifest: `apiVersion: agents.x-k8s.io/v1alpha1
kind: Sandbox
metadata:
  name: bad-alpha
spec:
  podTemplate:
    spec:
      containers:
      - name: agent
  replicas: -1
`,
		want: []string{
			`The Sandbox "bad-alpha" is invalid`,
			"spec.podTemplate.spec.containers[0].image: Required value",
			"spec.replicas: Invalid value: -1",
		},
	}, {
		name: "claim", resource: "sandboxclaim/bad-claim",
		manifest: `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata:
  name: bad-claim
spec:
  sandboxTemplateRef:
    name: ""
  lifecycle:
    shutdownPolicy: Never
`,
		want: []string{
			`The SandboxClaim "bad-claim" is invalid`,
			"spec.sandboxTemplateRef.name: Required value",
			`spec.lifecycle.shutdownPolicy: Unsupported value: "Never"`, `"DeleteForeground"`,
		},
	}, {
		name: "template", resource: "sandboxtemplate/bad-template",
		manifest: `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata:
  name: bad-template
spec:
  podTemplate:
    spec:
      containers:
      - name: agent
        image: busybox
  networkPolicyManagement: Sometimes
  envVarsInjectionPolicy: Always
`,
		want: []string{
			`The SandboxTemplate "bad-template" is invalid`,
			`spec.networkPolicyManagement: Unsupported value: "Sometimes"`,
			`spec.envVarsInjectionPolicy: Unsupported value: "Always"`,
		},
	}, {
		name: "warm pool", resource: "swp/bad-pool",
		manifest: `apiVersion: extensions.agents.x-k8s.io/v1alpha1
kind: SandboxWarmPool
metadata:
  name: bad-pool
spec:
  replicas: -3
  sandboxTemplateRef: {}
  updateStrategy:
    type: Rolling
`,
		want: []string{
			`The SandboxWarmPool "bad-pool" is invalid`,
			"spec.replicas: Invalid value: -3",
			"spec.sandboxTemplateRef.name: Required value",
			`spec.updateStrategy.type: Unsupported value: "Rolling"`,
		},
	}}
	for _, c := range invalid {
		t.Run("invalid "+c.name, func(t *testing.T) {
			_, stderr, err := kubectlWith(t, kubectlOptions{stdin: c.manifest}, "apply", "-n", ns, "-f", "-")
			expectFailure(t, "kubectl apply of an invalid "+c.name, stderr, err, c.want...)
			_, stderr, err = kubectlErr(t, "get", c.resource, "-n", ns)
			expectFailure(t, "kubectl get of the refused "+c.name, stderr, err, "NotFound")
		})
	}

	const good = `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: good
spec:
  podTemplate:
    spec:
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
`
	t.Run("invalid update", func(t *testing.T) {
		applyYAML(t, ns, good)
		_, stderr, err := kubectlErr(t, "patch", "sandbox", "good", "-n", ns, "--type=merge",
			"-p", `{"spec":{"replicas":3,"shutdownPolicy":"Later","podTemplate":{"spec":{"containers":[{"name":"Not Valid","image":"x"}]}}}}`)
		expectFailure(t, "kubectl patch to invalid values", stderr, err, `The Sandbox "good" is invalid`,
			"spec.replicas", "spec.shutdownPolicy", "spec.podTemplate.spec.containers[0].name")
		if got := jsonpath(t, ns, "{.spec.replicas} {.spec.shutdownPolicy} {.metadata.generation}", "sandbox", "good"); got != "1 Retain 1" {
			t.Errorf("after the refused patch: replicas, shutdownPolicy, generation = %q, want \"1 Retain 1\"", got)
		}
	})

	unknownField := strings.Replace(good, "name: good", "name: unknown-field", 1) + "  bogusField: 1\n"
	t.Run("unknown field", func(t *testing.T) {
		_, stderr, err := kubectlWith(t, kubectlOptions{stdin: unknownField}, "apply", "--validate=strict", "-n", ns, "-f", "-")
		expectFailure(t, "kubectl apply --validate=strict with an unknown field", stderr, err, "BadRequest", `unknown field "spec.bogusField"`)
		_, stderr, err = kubectlWith(t, kubectlOptions{stdin: unknownField}, "apply", "--server-side", "--validate=strict", "-n", ns, "-f", "-")
		expectFailure(t, "kubectl apply --server-side --validate=strict with an unknown field", stderr, err, "spec.bogusField")
		_, stderr, err = kubectlErr(t, "get", "sandbox", "unknown-field", "-n", ns)
		expectFailure(t, "kubectl get after the refused applies", stderr, err, "NotFound")

		// --validate=warn stores the object without the field and says so.
		out, stderr, err := kubectlWith(t, kubectlOptions{stdin: unknownField}, "apply", "--validate=warn", "-n", ns, "-f", "-")
		if err != nil {
			t.Fatalf("kubectl apply --validate=warn: %v\n%s", err, stderr)
		}
		expectContains(t, "kubectl apply --validate=warn", out, "sandbox.agents.x-k8s.io/unknown-field created")
		expectContains(t, "kubectl apply --validate=warn (stderr)", stderr, "Warning", `unknown field "spec.bogusField"`)
		if got := jsonpath(t, ns, "{.spec}", "sandbox", "unknown-field"); strings.Contains(got, "bogusField") {
			t.Errorf("the unknown field was stored: spec = %s", got)
		}
	})

	t.Run("server dry run", func(t *testing.T) {
		dry := strings.Replace(good, "name: good", "name: dry-run", 1)
		out, stderr, err := kubectlWith(t, kubectlOptions{stdin: dry}, "apply", "--dry-run=server", "-n", ns, "-f", "-")
		if err != nil {
			t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, stderr)
		}
		expectContains(t, "kubectl apply --dry-run=server", out, "sandbox.agents.x-k8s.io/dry-run created (server dry run)")
		_, stderr, err = kubectlErr(t, "get", "sandbox", "dry-run", "-n", ns)
		expectFailure(t, "kubectl get after a server dry run", stderr, err, "NotFound", `"dry-run" not found`)

		// A dry run is validated like the real request.
		_, stderr, err = kubectlWith(t, kubectlOptions{stdin: invalid[0].manifest}, "apply", "--dry-run=server", "-n", ns, "-f", "-")
		expectFailure(t, "kubectl apply --dry-run=server of an invalid sandbox", stderr, err, invalid[0].want...)

		// A dry-run change of a stored object leaves it as it was.
		applyYAML(t, ns, good)
		kubectl(t, "scale", "sandbox/good", "-n", ns, "--replicas=0", "--dry-run=server")
		if got := jsonpath(t, ns, "{.spec.replicas}", "sandbox", "good"); got != "1" {
			t.Errorf("after kubectl scale --dry-run=server: spec.replicas = %q, want 1", got)
		}
	})
}
