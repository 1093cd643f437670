// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClaimNeverGetsACollidingTemplatesMember (attack 27): warm members are labelled with a 32-bit
// hash of their template's name. An edit user makes a template whose name hashes as the tenants'
// template, with the attacker's image, and a warm pool of it. A claim-only tenant's claim of its
// own template is never handed the attacker's member: it gets a cold sandbox of its template,
// and the attacker's member stays in its pool.
func TestClaimNeverGetsACollidingTemplatesMember(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	_, client := adminClients(t)
	ctx := context.Background()
	tenant, editor := "tenant-"+randSuffix(5), "editor-"+randSuffix(5)
	grantTenant(t, ns, tenant)
	bindClusterRole(t, ns, editor, "edit")
	waitCanI(t, "create", "sandboxclaims.extensions.agents.x-k8s.io", "-n", ns, "--as="+tenant)
	waitCanI(t, "create", "sandboxwarmpools.extensions.agents.x-k8s.io", "-n", ns, "--as="+editor)
	victim, colliding := collidingNames(t)
	if nameHash(victim) != nameHash(colliding) {
		t.Fatalf("%s and %s do not collide", victim, colliding)
	}

	applyYAML(t, ns, fmt.Sprintf(`apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: %s}
spec:
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/agent:latest}]}}
`, victim))
	kubectlAsStdin(t, "", fmt.Sprintf(`apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata: {name: %s}
spec:
  podTemplate: {spec: {containers: [{name: agent, image: ghcr.io/example/attacker:latest}]}}
---
`, colliding)+fmt.Sprintf(faultPool, "trap", 1, colliding), "create", "-n", ns, "-f", "-", "--as="+editor)
	var member string
	eventually(t, waitTimeout, "the attacker's pool's Ready member", func() (bool, string) {
		list, err := client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("%d sandboxes, %v", len(list.Items), err)
		}
		member = list.Items[0].Name
		for _, c := range list.Items[0].Status.Conditions {
			if c.Type == "Ready" && c.Status == metav1.ConditionTrue {
				return true, ""
			}
		}
		return false, member + " not Ready"
	})

	for _, claim := range []string{"mine", "mine-too"} {
		kubectlAsStdin(t, "", fmt.Sprintf(faultClaim, claim, victim), "create", "-n", ns, "-f", "-", "--as="+tenant)
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/"+claim, "--timeout=90s")
		if got := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", claim); got != claim {
			t.Errorf("claim %s got sandbox %q, want its own cold sandbox %s", claim, got, claim)
		}
		if image := jsonpath(t, ns, "{.spec.containers[0].image}", "pod", claim); image != "ghcr.io/example/agent:latest" {
			t.Errorf("claim %s's pod runs %q, want its template's image", claim, image)
		}
	}
	sb, err := client.AgentsV1beta1().Sandboxes(ns).Get(ctx, member, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(sb); ref == nil || ref.Kind != "SandboxWarmPool" || ref.Name != "trap" {
		t.Errorf("the attacker's member %s is now controlled by %v, want its pool trap", member, ref)
	}

	// The attacker's own claims of its template take its member, as honest claims of a pool do.
	kubectlAsStdin(t, "", fmt.Sprintf(faultClaim, "theirs", colliding), "create", "-n", ns, "-f", "-", "--as="+editor)
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "sandboxclaim/theirs", "--timeout=90s")
	if got := jsonpath(t, ns, "{.status.sandbox.name}", "sandboxclaim", "theirs"); got != member {
		t.Errorf("the claim of the pool's own template got sandbox %q, want the member %s", got, member)
	}
}
