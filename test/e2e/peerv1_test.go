// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestWarmPoolReadinessGracePeriod: on the real node, a member whose readiness probe always fails
// is deleted and replaced once it has been not Ready for its pool's
// spec.readinessGracePeriodSeconds (the peer's minimum, 30 s) since its creation, with an event;
// the same member of a pool left at the default five minutes stays until that pool's field is
// changed, which replaces it as not Ready in time, not as stale. The manifests are the peer's
// v1.0.12 shape, applied with kubectl apply --server-side --validate=strict (fieldValidation=Strict).
func TestWarmPoolReadinessGracePeriod(t *testing.T) {
	t.Parallel()
	requireRealNode(t)
	ns := newRealNamespace(t)
	// The server's own timestamps tell how long a member lived: creation to deletion request.
	w := startWatch(t, "", 4*time.Minute, "get", "sandboxes", "-n", ns, "--watch", "--no-headers", "-o",
		`custom-columns=NAME:.metadata.name,CREATED:.metadata.creationTimestamp,DELETING:.metadata.deletionTimestamp,READY:.status.conditions[?(@.type=="Ready")].status`)
	manifest := realNodeTemplate("never-ready", "", shellContainer("agent", `readinessProbe: {exec: {command: ["false"]}, periodSeconds: 1}`)) + `---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata: {name: impatient}
spec:
  replicas: 1
  readinessGracePeriodSeconds: 30
  sandboxTemplateRef: {name: never-ready}
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata: {name: patient}
spec:
  replicas: 1
  updateStrategy: {type: Recreate}
  sandboxTemplateRef: {name: never-ready}
`
	out, stderr, err := kubectlWith(t, kubectlOptions{stdin: manifest}, "apply", "--server-side", "--validate=strict", "-n", ns, "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply --server-side --validate=strict: %v\n%s", err, stderr)
	}
	expectContains(t, "kubectl apply --server-side", out, "sandboxwarmpool.extensions.agents.x-k8s.io/impatient serverside-applied")

	// memberOf matches the lines of pool's members other than the ones named in except.
	memberOf := func(pool string, except ...string) func(string) bool {
		return func(line string) bool {
			f := strings.Fields(line)
			return len(f) == 4 && strings.HasPrefix(f[0], pool+"-") && !slices.Contains(except, f[0])
		}
	}
	// deletedAfter waits for member's deletion and returns its time from creation to the delete,
	// failing the test if the member was ever Ready.
	deletedAfter := func(member string) time.Duration {
		t.Helper()
		line := w.next(t, member+"'s deletion", func(line string) bool {
			f := strings.Fields(line)
			if len(f) == 4 && f[0] == member && f[3] == "True" {
				t.Errorf("member %s became Ready: %s", member, line)
			}
			return len(f) == 4 && f[0] == member && f[2] != "<none>"
		})
		f := strings.Fields(line)
		created, err1 := time.Parse(time.RFC3339, f[1])
		deleted, err2 := time.Parse(time.RFC3339, f[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("timestamps of %q: %v %v", line, err1, err2)
		}
		return deleted.Sub(created)
	}
	membersDeleted := func(pool, want string) {
		t.Helper()
		eventually(t, waitTimeout, "a MembersDeleted event of "+pool+" saying "+want, func() (bool, string) {
			msgs := kubectl(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name="+pool+",reason=MembersDeleted",
				"-o", `jsonpath={range .items[*]}{.message}{"\n"}{end}`)
			return strings.Contains(msgs, want), msgs
		})
	}

	// Both pools make a member; neither ever becomes Ready.
	first := strings.Fields(w.next(t, "impatient's first member", memberOf("impatient")))[0]
	patient := strings.Fields(w.next(t, "patient's member", memberOf("patient")))[0]

	lived := deletedAfter(first)
	t.Logf("%s was deleted %s after its creation", first, lived)
	// The deadline is 30 s after the creation, and the pool asks to come back then: not earlier,
	// and well before any resync or the default five minutes.
	if lived < 30*time.Second || lived > 45*time.Second {
		t.Errorf("impatient's member was deleted %s after its creation, want from 30 s to 45 s", lived)
	}
	second := strings.Fields(w.next(t, "impatient's replacement", memberOf("impatient", first)))[0]
	membersDeleted("impatient", "Deleted 1 member (1 not ready in time)")
	// The replacement, never Ready either, goes the same way: by then the patient pool's member
	// has been not Ready for a minute, twice impatient's grace period.
	if lived := deletedAfter(second); lived < 30*time.Second || lived > 45*time.Second {
		t.Errorf("impatient's second member was deleted %s after its creation, want from 30 s to 45 s", lived)
	}

	// The patient pool's member, on the default five minutes, is still there and still not Ready.
	if got := jsonpath(t, ns, `{.metadata.deletionTimestamp}/{.status.conditions[?(@.type=="Ready")].status}`, "sandbox", patient); got != "/False" {
		t.Errorf("patient's member %s: deletionTimestamp/Ready %q, want none and False", patient, got)
	}
	// Shortening its grace period applies to the member it has: past the new deadline, it is
	// replaced as not Ready in time. Under Recreate a stale member would go too, but the field is
	// no part of a member's revision.
	kubectl(t, "patch", "swp", "patient", "-n", ns, "--type=merge", "-p", `{"spec":{"readinessGracePeriodSeconds":30}}`)
	if lived := deletedAfter(patient); lived < 30*time.Second {
		t.Errorf("patient's member was deleted %s after its creation, before its new deadline", lived)
	}
	membersDeleted("patient", "Deleted 1 member (1 not ready in time)")
	w.next(t, "patient's replacement", memberOf("patient", patient))
}
