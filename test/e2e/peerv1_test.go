// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"strings"
	"testing"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// Manifests in the shape of the agent-sandbox v1.0 API, applied with kubectl as they are.

const launchTypeJSONPath = `{.metadata.labels.agents\.x-k8s\.io/launch-type}`

// TestOperatingModeSuspends: operatingMode Suspended runs no pod and says so in its conditions,
// Running starts the pod, and kubectl scale moves operatingMode too.
func TestOperatingModeSuspends(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata: {name: paused}
spec:
  operatingMode: Suspended
  podTemplate:
    spec:
      containers: [{name: agent, image: ghcr.io/example/agent:latest}]
`)
	kubectl(t, "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="Suspended")].status}=True`, "sandbox/paused", "--timeout=60s")
	if got := jsonpath(t, ns, `{.spec.replicas} {.status.conditions[?(@.type=="Ready")].reason}`, "sandbox", "paused"); got != "0 "+agentsv1beta1.SandboxReasonSuspended {
		t.Errorf("suspended sandbox: spec.replicas and Ready reason %q, want \"0 SandboxSuspended\"", got)
	}
	if out, _, _ := kubectlErr(t, "get", "pod", "paused", "-n", ns, "--ignore-not-found", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("a suspended sandbox has a pod: %s", out)
	}

	kubectl(t, "patch", "sandbox", "paused", "-n", ns, "--type=merge", "-p", `{"spec":{"operatingMode":"Running"}}`)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandbox/paused", "--timeout=90s")
	got := jsonpath(t, ns, "{.spec.replicas} {.status.nodeName} "+`{.status.conditions[?(@.type=="PodScheduled")].status}`, "sandbox", "paused")
	node := jsonpath(t, ns, "{.spec.nodeName}", "pod", "paused")
	if want := "1 " + node + " True"; node == "" || got != want {
		t.Errorf("running sandbox: spec.replicas, status.nodeName, PodScheduled %q, want %q", got, want)
	}

	kubectl(t, "scale", "sandbox/paused", "-n", ns, "--replicas=0")
	if got := jsonpath(t, ns, "{.spec.operatingMode}", "sandbox", "paused"); got != "Suspended" {
		t.Errorf("after kubectl scale --replicas=0: operatingMode %q, want Suspended", got)
	}
	kubectl(t, "wait", "-n", ns, "--for=delete", "pod/paused", "--timeout=60s")
	kubectl(t, "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="Suspended")].status}=True`, "sandbox/paused", "--timeout=60s")
}

// TestClaimByWarmPoolRef: a pool without replicas keeps one member, and a claim naming the pool
// (and no template) adopts that member: its pod keeps running, and both are labelled warm.
func TestClaimByWarmPoolRef(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "tmpl", "Disallowed", "v1")+`---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata: {name: pool}
spec:
  sandboxTemplateRef: {name: tmpl}
`)
	if got := jsonpath(t, ns, "{.spec.replicas}", "swp", "pool"); got != "1" {
		t.Errorf("pool without replicas: spec.replicas %q, want 1", got)
	}
	waitPoolReady(t, ns, "pool", 1)
	members := func() []string {
		return names(strings.ReplaceAll(jsonpath(t, ns, "{.items[*].metadata.name}", "sandboxes", "-l",
			extensionsv1beta1.WarmPoolSandboxLabel+"="+objectmeta.NameHash("pool")), " ", "\n"))
	}
	m := members()
	if len(m) != 1 {
		t.Fatalf("pool without replicas has members %q, want one", m)
	}
	member := m[0]
	podUID := jsonpath(t, ns, "{.metadata.uid}", "pod", member)
	if got := jsonpath(t, ns, launchTypeJSONPath, "sandbox", member); got != "warm" {
		t.Errorf("pool member launch type %q, want warm", got)
	}

	applyYAML(t, ns, `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: by-pool}
spec:
  warmPoolRef: {name: pool}
`)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/by-pool", "--timeout=60s")
	if got := jsonpath(t, ns, "{.spec.sandboxTemplateRef.name} {.status.sandbox.name}", "sandboxclaim", "by-pool"); got != "tmpl "+member {
		t.Errorf("claim by pool: template and sandbox %q, want \"tmpl %s\" (the pool's member)", got, member)
	}
	if got := jsonpath(t, ns, launchTypeJSONPath, "sandbox", member); got != "warm" {
		t.Errorf("adopted sandbox launch type %q, want warm", got)
	}
	if got := jsonpath(t, ns, "{.metadata.uid} "+launchTypeJSONPath, "pod", member); got != podUID+" warm" {
		t.Errorf("adopted pod: uid and launch type %q, want %q (the member's pod, kept)", got, podUID+" warm")
	}

	out, stderr, err := kubectlWith(t, kubectlOptions{stdin: `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: no-pool}
spec:
  warmPoolRef: {name: missing}
`}, "apply", "-n", ns, "-f", "-")
	expectFailure(t, "a claim naming a pool that does not exist", stderr+out, err, "spec.warmPoolRef.name", "Not found")
}

// TestClaimVolumeClaimTemplates: a claim adding a volume claim template, as its template's policy
// allows, gets a cold sandbox with the merged list and a Bound PersistentVolumeClaim of its own,
// even with a Ready warm member waiting; a template that does not allow it refuses the claim.
func TestClaimVolumeClaimTemplates(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: open}
spec:
  volumeClaimTemplatesPolicy: Allowed
  podTemplate:
    spec:
      containers: [{name: agent, image: ghcr.io/example/agent:latest}]
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata: {name: open-pool}
spec:
  sandboxTemplateRef: {name: open}
`+"---\n"+fmt.Sprintf(agentTemplate, "closed", "Disallowed", "v1"))
	waitPoolReady(t, ns, "open-pool", 1)

	const claim = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: %s}
spec:
  sandboxTemplateRef: {name: %s}
  volumeClaimTemplates:
  - metadata: {name: scratch}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`
	applyYAML(t, ns, fmt.Sprintf(claim, "with-volume", "open"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/with-volume", "--timeout=120s")
	got := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", "with-volume")
	if got != "with-volume" {
		t.Errorf("claim with volume claim templates served by %q, want a sandbox of its own (with-volume)", got)
	}
	if got := jsonpath(t, ns, launchTypeJSONPath+" {.spec.volumeClaimTemplates[*].metadata.name}", "sandbox", "with-volume"); got != "cold scratch" {
		t.Errorf("claim's sandbox: launch type and volume claim templates %q, want \"cold scratch\"", got)
	}
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.status.phase}=Bound", "pvc/scratch-with-volume", "--timeout=60s")
	if got := jsonpath(t, ns, launchTypeJSONPath, "pod", "with-volume"); got != "cold" {
		t.Errorf("claim's pod launch type %q, want cold", got)
	}
	if got := jsonpath(t, ns, "{.status.readyReplicas}", "swp", "open-pool"); got != "1" {
		t.Errorf("the pool's member was taken: readyReplicas %q", got)
	}

	out, stderr, err := kubectlWith(t, kubectlOptions{stdin: fmt.Sprintf(claim, "refused", "closed")}, "apply", "-n", ns, "-f", "-")
	expectFailure(t, "a claim with volume claim templates under Disallowed", stderr+out, err, "spec.volumeClaimTemplates", "volumeClaimTemplatesPolicy")
}
