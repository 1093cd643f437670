// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// forgedMember is a Sandbox dressed as a member of pool (uid) of template: the warm-pool and
// template labels on it and its pod template, and the pool as its controller.
func forgedMember(name, poolName, poolUID, poolHash, templateHash string) string {
	return fmt.Sprintf(`apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: %[1]s
  labels: {agents.x-k8s.io/warm-pool-sandbox: "%[4]s", agents.x-k8s.io/sandbox-template-ref-hash: "%[5]s"}
  ownerReferences:
  - {apiVersion: extensions.agents.x-k8s.io/v1beta1, kind: SandboxWarmPool, name: %[2]s, uid: %[3]s, controller: true}
spec:
  podTemplate:
    metadata: {labels: {agents.x-k8s.io/sandbox-template-ref-hash: "%[5]s"}}
    spec: {containers: [{name: agent, image: ghcr.io/attacker/backdoor:latest}]}
`, name, poolName, poolUID, poolHash, templateHash)
}

// TestWarmPoolPoisoning: a namespace editor, a cluster admin impersonating system:apiserver and
// a claim-only tenant cannot make a Sandbox that looks like a pool member; the next claim gets a
// member the pool controller made.
func TestWarmPoolPoisoning(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	editor, tenant := "editor-"+randSuffix(5), "tenant-"+randSuffix(5)
	editorKC, tenantKC := newUser(t, editor), newUser(t, tenant)
	bindClusterRole(t, ns, editor, "edit")
	grantTenant(t, ns, tenant)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "t", "Disallowed", "v1")+"---\n"+fmt.Sprintf(warmPool, "pool", 1, "t", "OnReplenish"))
	waitPoolReady(t, ns, "pool", 1)
	poolUID := jsonpath(t, ns, "{.metadata.uid}", "swp/pool")
	members := strings.Fields(jsonpath(t, ns, "{.items[*].metadata.name}", "sandboxes"))
	if len(members) != 1 {
		t.Fatalf("pool members %q, want one", members)
	}
	labels := func(key string) string {
		return jsonpath(t, ns, "{.metadata.labels['"+strings.ReplaceAll(key, ".", `\.`)+"']}", "sandbox/"+members[0])
	}
	poolHash, templateHash := labels("agents.x-k8s.io/warm-pool-sandbox"), labels("agents.x-k8s.io/sandbox-template-ref-hash")
	if poolHash == "" || templateHash == "" {
		t.Fatalf("the member has no pool or template label")
	}
	wantFields := []string{
		"metadata.labels[agents.x-k8s.io/warm-pool-sandbox]: Forbidden",
		"metadata.labels[agents.x-k8s.io/sandbox-template-ref-hash]: Forbidden",
		"spec.podTemplate.metadata.labels[agents.x-k8s.io/sandbox-template-ref-hash]: Forbidden",
		"metadata.ownerReferences[0]: Forbidden",
	}
	for _, attacker := range []struct {
		what string
		o    kubectlOptions
		args []string
	}{
		{"a namespace editor", kubectlOptions{kubeconfig: editorKC}, nil},
		{"an admin impersonating system:apiserver", kubectlOptions{}, []string{"--as=system:apiserver", "--as-group=system:masters"}},
		{"an admin impersonating the controllers' name", kubectlOptions{}, []string{"--as=system:sandbox-apiserver:controllers", "--as-group=system:masters"}},
	} {
		o := attacker.o
		o.stdin = forgedMember("forged", "pool", poolUID, poolHash, templateHash)
		_, stderr, err := kubectlWith(t, o, append([]string{"create", "-n", ns, "-f", "-"}, attacker.args...)...)
		expectFailure(t, attacker.what+" creates a forged member", stderr, err, append([]string{`The Sandbox "forged" is invalid`}, wantFields...)...)
		// Relabelling the real member is refused too.
		_, stderr, err = kubectlWith(t, attacker.o, append([]string{"label", "-n", ns, "sandbox/" + members[0], "--overwrite", "agents.x-k8s.io/warm-pool-sandbox=other"}, attacker.args...)...)
		expectFailure(t, attacker.what+" relabels the member", stderr, err, "metadata.labels[agents.x-k8s.io/warm-pool-sandbox]: Forbidden")
	}
	if _, _, err := kubectlErr(t, "get", "sandbox", "forged", "-n", ns); err == nil {
		t.Fatalf("the forged sandbox was stored")
	}
	if got := labels("agents.x-k8s.io/warm-pool-sandbox"); got != poolHash {
		t.Fatalf("the member's pool label is %q, want %q", got, poolHash)
	}

	// The tenant's claim gets the genuine member.
	kubectlAsStdin(t, tenantKC, claimYAML("mine"), "create", "-n", ns, "-f", "-")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/mine", "--timeout=90s")
	if got := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim/mine"); got != members[0] {
		t.Errorf("the claim got sandbox %q, want the pool's member %q", got, members[0])
	}
}

// TestClaimCannotOpenWhatTheTemplateKeepsClosed: a claim-only tenant cannot give its pod the
// labels the template's NetworkPolicy admits peers by, mesh or runtime keys, nor put env into a
// sidecar, an init container or a loader variable; the ordinary claim still works.
func TestClaimCannotOpenWhatTheTemplateKeepsClosed(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	tenant := "tenant-" + randSuffix(5)
	kc := newUser(t, tenant)
	grantTenant(t, ns, tenant)
	applyYAML(t, ns, `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: t}
spec:
  envVarsInjectionPolicy: Allowed
  podTemplate:
    spec:
      initContainers: [{name: setup, image: busybox}]
      containers:
      - {name: agent, image: ghcr.io/example/agent:v1}
      - {name: proxy, image: envoyproxy/envoy:v1.30}
`)
	waitCanI(t, "use", "sandboxtemplates/t", "-n", ns, "--as="+tenant)
	claim := func(name, spec string) string {
		return fmt.Sprintf("apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nmetadata: {name: %s}\nspec:\n  sandboxTemplateRef: {name: t}\n  warmpool: none\n%s", name, spec)
	}
	for _, tc := range []struct {
		what, spec string
		want       []string
	}{
		{"the router label", "  additionalPodMetadata: {labels: {app: sandbox-router}}\n",
			[]string{"spec.additionalPodMetadata.labels[app]: Forbidden", "NetworkPolicy admits peers by this label"}},
		{"a mesh opt-out", "  additionalPodMetadata: {annotations: {sidecar.istio.io/inject: \"false\"}}\n",
			[]string{"spec.additionalPodMetadata.annotations[sidecar.istio.io/inject]: Forbidden"}},
		{"a runtime annotation", "  additionalPodMetadata: {annotations: {io.katacontainers.config.hypervisor.path: /tmp/qemu}}\n",
			[]string{"spec.additionalPodMetadata.annotations[io.katacontainers.config.hypervisor.path]: Forbidden"}},
		{"env into the sidecar", "  env: [{name: A, value: b, containerName: proxy}]\n", []string{"spec.env[0].containerName: Forbidden"}},
		{"env into the init container", "  env: [{name: A, value: b, containerName: setup}]\n", []string{"spec.env[0].containerName: Forbidden"}},
		{"LD_PRELOAD", "  env: [{name: LD_PRELOAD, value: /tmp/x.so}]\n", []string{"spec.env[0].name: Forbidden", "loader or interpreter variable"}},
	} {
		_, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: claim("bad", tc.spec)}, "create", "-n", ns, "-f", "-")
		expectFailure(t, tc.what, stderr, err, append([]string{`The SandboxClaim "bad" is invalid`}, tc.want...)...)
	}
	if _, _, err := kubectlErr(t, "get", "sandboxclaim", "bad", "-n", ns); err == nil {
		t.Fatalf("a refused claim was stored")
	}
	kubectlAsStdin(t, kc, claim("ok", "  additionalPodMetadata: {labels: {team: a}}\n  env: [{name: GREETING, value: hi}]\n"), "create", "-n", ns, "-f", "-")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/ok", "--timeout=90s")
	if got := jsonpath(t, ns, `{.spec.podTemplate.spec.containers[0].env[?(@.name=="GREETING")].value}`, "sandbox/ok"); got != "hi" {
		t.Errorf("the agent container's GREETING is %q, want hi", got)
	}
}

// TestTemplateUseIsAuthorized: creating a claim needs the use verb on its template; a tenant
// without it gets a 403 naming the template, one with it (on that template only) its sandbox.
func TestTemplateUseIsAuthorized(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	user := "claimer-" + randSuffix(5)
	kc := newUser(t, user)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "t", "Disallowed", "v1")+"---\n"+fmt.Sprintf(agentTemplate, "gpu", "Disallowed", "v1")+"---\n"+
		roleFor(user, "claims-only", "- {apiGroups: [extensions.agents.x-k8s.io], resources: [sandboxclaims], verbs: [get, list, watch, create, patch, delete]}\n"+
			"- {apiGroups: [extensions.agents.x-k8s.io], resources: [sandboxtemplates], verbs: [get, list, watch]}\n"))
	waitCanI(t, "create", "sandboxclaims", "-n", ns, "--as="+user)
	_, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: claimYAML("c")}, "create", "-n", ns, "-f", "-")
	expectFailure(t, "a claim without use", stderr, err, `sandboxtemplates.extensions.agents.x-k8s.io "t" is forbidden`,
		fmt.Sprintf(`User %q cannot use resource "sandboxtemplates"`, user))
	// A server-side apply creates through an update: it is checked too.
	_, stderr, err = kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: claimYAML("c")}, "apply", "--server-side", "-n", ns, "-f", "-")
	expectFailure(t, "a claim applied server-side without use", stderr, err, `sandboxtemplates.extensions.agents.x-k8s.io "t" is forbidden`)
	if _, _, err := kubectlErr(t, "get", "sandboxclaim", "c", "-n", ns); err == nil {
		t.Fatalf("the refused claim was stored")
	}

	applyYAML(t, ns, roleFor(user, "use-t", "- {apiGroups: [extensions.agents.x-k8s.io], resources: [sandboxtemplates], resourceNames: [t], verbs: [use]}\n"))
	waitCanI(t, "use", "sandboxtemplates/t", "-n", ns, "--as="+user)
	// The server caches a refusal for a few seconds, as kube-apiserver's webhook authorizer does.
	eventually(t, waitTimeout, "the claim with use granted to be created", func() (bool, string) {
		_, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: claimYAML("c")}, "create", "-n", ns, "-f", "-")
		return err == nil, stderr
	})
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/c", "--timeout=90s")
	gpuClaim := strings.Replace(claimYAML("g"), "name: t\n", "name: gpu\n", 1)
	_, stderr, err = kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: gpuClaim}, "create", "-n", ns, "-f", "-")
	expectFailure(t, "a claim of a template not granted", stderr, err, `sandboxtemplates.extensions.agents.x-k8s.io "gpu" is forbidden`)

	// A claim that names only a warm pool uses the pool's template: the use of that template is
	// what is checked, so use granted on t alone is enough for a pool of t and not for a pool of gpu.
	applyYAML(t, ns, fmt.Sprintf(warmPool, "pool-t", 0, "t", "OnReplenish")+"---\n"+fmt.Sprintf(warmPool, "pool-gpu", 0, "gpu", "OnReplenish"))
	byPool := func(name, pool string) string {
		return fmt.Sprintf("apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nmetadata: {name: %s}\nspec:\n  warmPoolRef: {name: %s}\n", name, pool)
	}
	kubectlAsStdin(t, kc, byPool("by-pool-t", "pool-t"), "create", "-n", ns, "-f", "-")
	if got := jsonpath(t, ns, "{.spec.sandboxTemplateRef.name}", "sandboxclaim", "by-pool-t"); got != "t" {
		t.Errorf("claim by pool-t has template %q, want t", got)
	}
	_, stderr, err = kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: byPool("by-pool-gpu", "pool-gpu")}, "create", "-n", ns, "-f", "-")
	expectFailure(t, "a claim by a pool of a template not granted", stderr, err, `sandboxtemplates.extensions.agents.x-k8s.io "gpu" is forbidden`)
}

// TestResourceQuotaCountsSandboxObjects: a ResourceQuota's object count holds for claims as for
// built-in kinds: kube-controller-manager computes the usage, this server refuses the create
// beyond it, and kubectl describe quota shows it.
func TestResourceQuotaCountsSandboxObjects(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	tenant := "tenant-" + randSuffix(5)
	kc := newUser(t, tenant)
	grantTenant(t, ns, tenant)
	const claims = "count/sandboxclaims.extensions.agents.x-k8s.io"
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "t", "Disallowed", "v1")+`---
apiVersion: v1
kind: ResourceQuota
metadata: {name: sandboxes}
spec:
  hard:
    count/sandboxclaims.extensions.agents.x-k8s.io: "1"
    count/sandboxes.agents.x-k8s.io: "5"
    count/sandboxtemplates.extensions.agents.x-k8s.io: "5"
    count/sandboxwarmpools.extensions.agents.x-k8s.io: "0"
`)
	used := func() map[string]string {
		var q struct {
			Status struct {
				Used map[string]string `json:"used"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(kubectl(t, "get", "resourcequota", "sandboxes", "-n", ns, "-o", "json")), &q); err != nil {
			t.Fatal(err)
		}
		return q.Status.Used
	}
	// kube-controller-manager's quota controller counts the template already there. On a plane
	// just started it may not have discovered the aggregated resources yet: it looks again every
	// 30 s and retries the quota with backoff, within its 5-minute full resync at the latest.
	eventually(t, 5*time.Minute, "the quota controller to count the template", func() (bool, string) {
		u := used()
		return u["count/sandboxtemplates.extensions.agents.x-k8s.io"] == "1" && u[claims] == "0", fmt.Sprint(u)
	})
	waitCanI(t, "create", "sandboxclaims", "-n", ns, "--as="+tenant)
	kubectlAsStdin(t, kc, claimYAML("first"), "create", "-n", ns, "-f", "-")
	_, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kc, stdin: claimYAML("second")}, "create", "-n", ns, "-f", "-")
	expectFailure(t, "a claim beyond the quota", stderr, err, `sandboxclaims.extensions.agents.x-k8s.io "second" is forbidden: exceeded quota: sandboxes`, claims+"=1")
	_, stderr, err = kubectlWith(t, kubectlOptions{stdin: fmt.Sprintf(warmPool, "pool", 1, "t", "OnReplenish")}, "create", "-n", ns, "-f", "-")
	expectFailure(t, "a warm pool the quota forbids", stderr, err, "exceeded quota: sandboxes", "count/sandboxwarmpools.extensions.agents.x-k8s.io=0")
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/first", "--timeout=90s")
	eventually(t, waitTimeout, "the quota to count the claim and its sandbox", func() (bool, string) {
		u := used()
		return u[claims] == "1" && u["count/sandboxes.agents.x-k8s.io"] == "1", fmt.Sprint(u)
	})
	describe := kubectl(t, "describe", "quota", "sandboxes", "-n", ns)
	for _, line := range []string{claims + "  1     1", "count/sandboxes.agents.x-k8s.io                    1     5"} {
		if !strings.Contains(strings.Join(strings.Fields(describe), " "), strings.Join(strings.Fields(line), " ")) {
			t.Errorf("kubectl describe quota does not show %q:\n%s", line, describe)
		}
	}
	// Freeing the place of a deleted claim is kube-controller-manager's replenishment, which for
	// aggregated resources may wait for its periodic resync: not asserted here.
}

// roleFor is a Role of the given rules (YAML list items) and its RoleBinding to user.
func roleFor(user, name, rules string) string {
	return fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: %[2]s}
rules:
%[3]s---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: %[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: %[2]s}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %[1]s}]
`, user, name, rules)
}
