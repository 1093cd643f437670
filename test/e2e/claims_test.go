// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

const agentTemplate = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: %s}
spec:
  envVarsInjectionPolicy: %s
  podTemplate:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - name: agent
        image: ghcr.io/example/agent:%s
        env: [{name: MODE, value: template}]
`

const warmPool = `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata: {name: %s}
spec:
  replicas: %d
  sandboxTemplateRef: {name: %s}
  updateStrategy: {type: %s}
`

// waitPoolReady waits until the pool reports ready members.
func waitPoolReady(t *testing.T, ns, pool string, ready int) {
	t.Helper()
	kubectl(t, "wait", "-n", ns, fmt.Sprintf("--for=jsonpath={.status.readyReplicas}=%d", ready), "swp/"+pool, "--timeout=120s")
}

// createClaims creates the named claims of template all at once and waits until each is Ready.
func createClaims(t *testing.T, client versioned.Interface, ns, template string, names ...string) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for _, name := range names {
		wg.Go(func() {
			claim := &extensionsv1beta1.SandboxClaim{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       extensionsv1beta1.SandboxClaimSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: template}},
			}
			if _, err := client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("creating a claim: %v", err)
	}
	eventually(t, 2*time.Minute, "every claim Ready", func() (bool, string) {
		list, err := client.ExtensionsV1beta1().SandboxClaims(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, c := range list.Items {
			if meta.IsStatusConditionTrue(c.Status.Conditions, "Ready") {
				ready++
			}
		}
		return ready == len(names), fmt.Sprintf("%d of %d Ready", ready, len(names))
	})
}

// ownership checks that every claim has exactly one sandbox and every sandbox one owner, and
// returns how many of the claims' sandboxes were adopted warm.
func ownership(t *testing.T, kube kubernetes.Interface, client versioned.Interface, ns string, claims int) (warm int) {
	t.Helper()
	ctx := context.Background()
	list, err := client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	perClaim := map[string]int{}
	for _, sb := range list.Items {
		var controllers []string
		for _, ref := range sb.OwnerReferences {
			if ref.Controller != nil && *ref.Controller {
				controllers = append(controllers, ref.Kind+"/"+ref.Name)
			}
		}
		if len(controllers) != 1 {
			t.Errorf("sandbox %s has controllers %v, want exactly one", sb.Name, controllers)
			continue
		}
		if kind, name, _ := strings.Cut(controllers[0], "/"); kind == "SandboxClaim" {
			perClaim[name]++
			if sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation] != "" {
				warm++
			}
		}
	}
	if len(perClaim) != claims {
		t.Errorf("%d claims have a sandbox, want %d", len(perClaim), claims)
	}
	for name, n := range perClaim {
		if n != 1 {
			t.Errorf("claim %s controls %d sandboxes", name, n)
		}
	}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A pool refilling may have made sandboxes (and their pods) since the first list; a pod is
	// made after its sandbox, so the sandboxes listed after the pods include every pod's.
	list, err = client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sandboxes := map[string]bool{}
	for _, sb := range list.Items {
		sandboxes[sb.Name] = true
	}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref == nil || !sandboxes[ref.Name] {
			t.Errorf("pod %s belongs to no sandbox", p.Name)
		}
	}
	return warm
}

// TestWarmPoolClaims: a pool of 3 serves 3 of 4 claims made at once without restarting their pods,
// the fourth gets the member started in their place (or a cold sandbox if none was yet), and the
// pool refills.
func TestWarmPoolClaims(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kube, client := adminClients(t)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "agent", "Disallowed", "v1")+"---\n"+fmt.Sprintf(warmPool, "pool", 3, "agent", "OnReplenish"))
	waitPoolReady(t, ns, "pool", 3)
	podUIDs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(kubectl(t, "get", "pods", "-n", ns, "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\n"}{end}`)), "\n") {
		name, uid, _ := strings.Cut(line, "=")
		podUIDs[name] = uid
	}
	if len(podUIDs) != 3 {
		t.Fatalf("pool pods = %v, want 3", podUIDs)
	}

	createClaims(t, client, ns, "agent", "c1", "c2", "c3", "c4")
	// Three claims take the Ready members; the fourth takes the member the pool started in their
	// place if it was there already (still starting), or else gets a cold sandbox.
	warm := ownership(t, kube, client, ns, 4)
	if warm != 3 && warm != 4 {
		t.Errorf("%d warm adoptions, want 3 Ready members and a starting one or a cold sandbox", warm)
	}
	// The adopted pods kept running: same names, same UIDs, now labelled with their claim.
	adopted := 0
	for _, c := range []string{"c1", "c2", "c3", "c4"} {
		sb := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", c)
		if uid, ok := podUIDs[sb]; ok {
			adopted++
			if got := jsonpath(t, ns, "{.metadata.uid}", "pod", sb); got != uid {
				t.Errorf("claim %s: pod %s uid %s, want the warm pod's %s (no restart)", c, sb, got, uid)
			}
			claimUID := jsonpath(t, ns, "{.metadata.uid}", "sandboxclaim", c)
			eventually(t, waitTimeout, "the adopted pod labelled with its claim", func() (bool, string) {
				got, _, _ := kubectlErr(t, "get", "pod", sb, "-n", ns, "-o", "jsonpath={.metadata.labels.agents\\.x-k8s\\.io/claim-uid}")
				return got == claimUID, got
			})
		}
	}
	if adopted != 3 {
		t.Errorf("%d claims got a warm pod, want 3", adopted)
	}
	waitPoolReady(t, ns, "pool", 3)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/c1", "--timeout=10s")
	eventually(t, waitTimeout, "SandboxAdopted events, and SandboxProvisioned for a cold sandbox", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.kind=SandboxClaim")
		return strings.Contains(out, "SandboxAdopted") && strings.Contains(out, "SandboxProvisioned") == (warm == 3), out
	})
}

// TestWarmClaimReadyOnCreate: a claim that a Ready warm member can serve is Ready in the output of
// kubectl create itself, bound to that member, whose pod keeps running.
func TestWarmClaimReadyOnCreate(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "agent", "Disallowed", "v1")+"---\n"+fmt.Sprintf(warmPool, "pool", 1, "agent", "OnReplenish"))
	waitPoolReady(t, ns, "pool", 1)
	member := jsonpath(t, ns, "{.items[0].metadata.name}", "sandboxes")
	podUID := jsonpath(t, ns, "{.metadata.uid}", "pod", member)

	claim := "apiVersion: extensions.agents.x-k8s.io/v1alpha1\nkind: SandboxClaim\nmetadata:\n  name: fast\nspec:\n  sandboxTemplateRef:\n    name: agent\n"
	out := kubectlAsStdin(t, "", claim, "create", "-n", ns, "-f", "-", "-o",
		`jsonpath={.status.conditions[?(@.type=="Ready")].status} {.status.sandbox.name} {.metadata.uid}`)
	got := strings.Fields(out)
	if len(got) != 3 || got[0] != "True" || got[1] != member {
		t.Fatalf("kubectl create printed %q, want Ready True and sandbox %s", out, member)
	}
	claimUID := got[2]
	owner := jsonpath(t, ns, `{.metadata.ownerReferences[?(@.controller==true)].uid}`, "sandbox", member)
	if owner != claimUID {
		t.Errorf("sandbox %s is controlled by %q, want the claim %s", member, owner, claimUID)
	}
	if got := jsonpath(t, ns, "{.metadata.uid}", "pod", member); got != podUID {
		t.Errorf("pod %s uid %s, want the warm pod's %s (no restart)", member, got, podUID)
	}
	waitPoolReady(t, ns, "pool", 1)
}

// TestWarmPoolRace: 50 claims at once for 20 warm members give exactly 20 warm adoptions and 30
// cold sandboxes, each sandbox with one owner.
func TestWarmPoolRace(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kube, client := adminClients(t)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "agent", "Disallowed", "v1")+"---\n"+fmt.Sprintf(agentTemplate, "other", "Disallowed", "v1")+
		"---\n"+fmt.Sprintf(warmPool, "pool", 20, "agent", "OnReplenish"))
	waitPoolReady(t, ns, "pool", 20)
	// Point the pool at another template before the race: its 20 members stay (OnReplenish) and
	// are all the claims of "agent" can win; what it refills with belongs to "other".
	kubectl(t, "patch", "-n", ns, "swp/pool", "--type=merge", "-p", `{"spec":{"sandboxTemplateRef":{"name":"other"}}}`)
	var names []string
	for i := range 50 {
		names = append(names, fmt.Sprintf("race-%02d", i))
	}
	createClaims(t, client, ns, "agent", names...)
	if warm := ownership(t, kube, client, ns, 50); warm != 20 {
		t.Errorf("%d warm adoptions, want exactly the 20 Ready members (and 30 cold sandboxes)", warm)
	}
}

// TestNetworkPolicy: a managed template gets exactly the secure default policy, the template's own
// rules replace it, and Unmanaged removes it.
func TestNetworkPolicy(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "agent", "Disallowed", "v1"))
	policy := "agent-network-policy"
	eventually(t, waitTimeout, "the template's NetworkPolicy", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "networkpolicy", policy, "-n", ns, "-o", "name")
		return strings.TrimSpace(out) != "", out
	})
	spec := jsonpath(t, ns, "{.spec}", "networkpolicy", policy)
	for _, want := range []string{
		`"policyTypes":["Ingress","Egress"]`,
		`{"from":[{"podSelector":{"matchLabels":{"app":"sandbox-router"}}}]}`,
		`"cidr":"0.0.0.0/0","except":["10.0.0.0/8","172.16.0.0/12","192.168.0.0/16","100.64.0.0/10","169.254.0.0/16"]`,
		`"cidr":"::/0","except":["fc00::/7","fe80::/10"]`,
		`"podSelector":{"matchLabels":{"agents.x-k8s.io/sandbox-template-ref-hash":`,
	} {
		if !strings.Contains(spec, want) {
			t.Errorf("default policy lacks %s:\n%s", want, spec)
		}
	}
	if n := strings.Count(spec, `"from"`) + strings.Count(spec, `"to"`); n != 2 {
		t.Errorf("default policy has %d peers lists, want exactly one ingress and one egress rule:\n%s", n, spec)
	}

	kubectl(t, "patch", "-n", ns, "sandboxtemplate/agent", "--type=merge", "-p",
		`{"spec":{"networkPolicy":{"egress":[{"ports":[{"protocol":"UDP","port":53}]}]}}}`)
	eventually(t, waitTimeout, "the template's own rules in the policy", func() (bool, string) {
		spec, _, _ := kubectlErr(t, "get", "networkpolicy", policy, "-n", ns, "-o", "jsonpath={.spec}")
		return strings.Contains(spec, `"port":53`) && !strings.Contains(spec, "sandbox-router"), spec
	})

	kubectl(t, "patch", "-n", ns, "sandboxtemplate/agent", "--type=merge", "-p", `{"spec":{"networkPolicyManagement":"Unmanaged"}}`)
	kubectl(t, "wait", "-n", ns, "--for=delete", "networkpolicy/"+policy, "--timeout=60s")
}

// TestClaimEnv: with an Allowed template the pod of a claim made cold gets the variable, whether
// the claim says warmpool none or may adopt and finds no member.
func TestClaimEnv(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "agent", "Allowed", "v1")+`---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: pooled}
spec:
  sandboxTemplateRef: {name: agent}
  env: [{name: NOTEBOOK_DIR, value: /workspace}]
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: fresh}
spec:
  sandboxTemplateRef: {name: agent}
  warmpool: none
  env: [{name: NOTEBOOK_DIR, value: /workspace}]
`)
	// Without a pool of the template, the claim that may adopt starts cold as well: both pods
	// are made with the env (warm claims with env: TestWarmClaimEnv).
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/fresh", "sandboxclaim/pooled", "--timeout=90s")
	for _, claim := range []string{"fresh", "pooled"} {
		sb := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", claim)
		expectContains(t, claim+"'s pod env", jsonpath(t, ns, "{.spec.containers[0].env}", "pod", sb),
			`{"name":"NOTEBOOK_DIR","value":"/workspace"}`, `{"name":"MODE","value":"template"}`)
	}
}

// TestClaimShutdownPolicies: Retain keeps an expired claim as ClaimExpired without its sandbox;
// DeleteForeground keeps the claim, being deleted, until its sandbox and pod are gone.
func TestClaimShutdownPolicies(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	// Far ahead at first: the claims are Ready and the pod held before they expire, however long
	// that takes on a loaded machine; then shutdownTime is moved to now.
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "agent", "Disallowed", "v1")+fmt.Sprintf(`---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: retained}
spec:
  sandboxTemplateRef: {name: agent}
  lifecycle: {shutdownTime: %q, shutdownPolicy: Retain}
---
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata: {name: foreground}
spec:
  sandboxTemplateRef: {name: agent}
  lifecycle: {shutdownTime: %q, shutdownPolicy: DeleteForeground}
`, later, later))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/retained", "sandboxclaim/foreground", "--timeout=90s")
	fgSandbox := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", "foreground")
	// Hold the foreground claim's pod in Terminating with a finalizer of the test's own, so its
	// deletion can be watched in order.
	kubectl(t, "patch", "-n", ns, "pod/"+fgSandbox, "--type=merge", "-p", `{"metadata":{"finalizers":["e2e.agents.x-k8s.io/hold"]}}`)
	release := func() {
		kubectlErr(t, "patch", "-n", ns, "pod/"+fgSandbox, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	}
	t.Cleanup(release)
	now := time.Now().UTC().Format(time.RFC3339)
	for _, claim := range []string{"foreground", "retained"} {
		kubectl(t, "patch", "-n", ns, "sandboxclaim/"+claim, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"lifecycle":{"shutdownTime":%q}}}`, now))
	}

	// DeleteForeground: past shutdownTime the claim is being deleted but stays while its pod does.
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.metadata.deletionTimestamp}", "sandboxclaim/foreground", "--timeout=60s")
	kubectl(t, "wait", "-n", ns, "--for=jsonpath={.metadata.deletionTimestamp}", "pod/"+fgSandbox, "--timeout=60s")
	if got := jsonpath(t, ns, "{.metadata.name}", "sandboxclaim", "foreground"); got != "foreground" {
		t.Fatalf("the DeleteForeground claim is gone while its pod is still terminating")
	}
	release()
	kubectl(t, "wait", "-n", ns, "--for=delete", "sandboxclaim/foreground", "--timeout=60s")
	for _, kind := range []string{"sandbox", "pod"} {
		if out, _, _ := kubectlErr(t, "get", kind, fgSandbox, "-n", ns, "--ignore-not-found", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("%s %s still there after its DeleteForeground claim is gone", kind, fgSandbox)
		}
	}

	// Retain: the claim stays as ClaimExpired, its sandbox goes.
	kubectl(t, "wait", "-n", ns, `--for=jsonpath={.status.conditions[?(@.type=="Ready")].reason}=ClaimExpired`, "sandboxclaim/retained", "--timeout=60s")
	eventually(t, waitTimeout, "the retained claim's sandbox gone", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "sandboxes", "-n", ns, "-o", "name")
		return len(names(out)) == 0, out
	})
	eventually(t, waitTimeout, "the ClaimExpired events", func() (bool, string) {
		out, _, _ := kubectlErr(t, "get", "events", "-n", ns, "--field-selector", "reason=ClaimExpired", "-o", "name")
		return len(names(out)) >= 2, out
	})
}

// TestWarmPoolUpdateStrategies: after a template change Recreate replaces the pool's members and
// OnReplenish keeps them.
func TestWarmPoolUpdateStrategies(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	applyYAML(t, ns, fmt.Sprintf(agentTemplate, "tmpl-recreate", "Disallowed", "v1")+"---\n"+fmt.Sprintf(agentTemplate, "tmpl-replenish", "Disallowed", "v1")+"---\n"+
		fmt.Sprintf(warmPool, "recreate", 2, "tmpl-recreate", "Recreate")+"---\n"+fmt.Sprintf(warmPool, "replenish", 2, "tmpl-replenish", "OnReplenish"))
	waitPoolReady(t, ns, "recreate", 2)
	waitPoolReady(t, ns, "replenish", 2)
	members := func(pool string) string {
		return jsonpath(t, ns, "{.items[*].metadata.name}", "sandboxes", "-l", extensionsv1beta1.WarmPoolSandboxLabel+"="+objectmeta.NameHash(pool))
	}
	before := map[string]string{"recreate": members("recreate"), "replenish": members("replenish")}

	for _, tmpl := range []string{"tmpl-recreate", "tmpl-replenish"} {
		kubectl(t, "patch", "-n", ns, "sandboxtemplate/"+tmpl, "--type=json", "-p",
			`[{"op":"replace","path":"/spec/podTemplate/spec/containers/0/image","value":"ghcr.io/example/agent:v2"}]`)
	}
	eventually(t, 2*time.Minute, "the Recreate pool's members replaced with the new image", func() (bool, string) {
		images, _, _ := kubectlErr(t, "get", "sandboxes", "-n", ns, "-l", extensionsv1beta1.WarmPoolSandboxLabel+"="+objectmeta.NameHash("recreate"),
			"-o", "jsonpath={.items[*].spec.podTemplate.spec.containers[0].image}")
		return images == "ghcr.io/example/agent:v2 ghcr.io/example/agent:v2", images
	})
	waitPoolReady(t, ns, "recreate", 2)
	if after := members("recreate"); after == before["recreate"] {
		t.Errorf("Recreate pool kept its members %q", after)
	}
	if after := members("replenish"); after != before["replenish"] {
		t.Errorf("OnReplenish pool members changed from %q to %q", before["replenish"], after)
	}
}
