// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	agentsalphaac "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/applyconfiguration/agents/v1alpha1"
	agentsac "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/applyconfiguration/agents/v1beta1"
	extac "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/applyconfiguration/extensions/v1beta1"
)

// managers returns "manager/operation[/subresource]" for every managedFields entry of an object.
func managers(m metav1.ObjectMeta) []string {
	var out []string
	for _, f := range m.ManagedFields {
		entry := f.Manager + "/" + string(f.Operation)
		if f.Subresource != "" {
			entry += "/" + f.Subresource
		}
		out = append(out, entry)
	}
	return out
}

func hasManager(m metav1.ObjectMeta, entry string) bool {
	for _, e := range managers(m) {
		if e == entry {
			return true
		}
	}
	return false
}

// sandboxApply is the apply configuration of a Sandbox with one container and the given replicas.
func sandboxApply(ns, name string, replicas int32) *agentsac.SandboxApplyConfiguration {
	return agentsac.Sandbox(name, ns).
		WithLabels(map[string]string{"app": "agent"}).
		WithSpec(agentsac.SandboxSpec().
			WithReplicas(replicas).
			WithPodTemplate(agentsac.PodTemplate().WithSpec(podSpec())))
}

// TestServerSideApply checks field ownership: conflicts between appliers, forcing, and the managed
// fields that record both.
func TestServerSideApply(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "apply"

	t.Run("conflict and force", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)

		created, err := sandboxes.Apply(ctx, sandboxApply(ns, "owned", 1), metav1.ApplyOptions{FieldManager: "a"})
		if err != nil {
			t.Fatalf("apply by a: %v", err)
		}
		if int32Of(created.Spec.Replicas) != 1 || created.Generation != 1 {
			t.Errorf("applied Sandbox: replicas %d, generation %d", int32Of(created.Spec.Replicas), created.Generation)
		}
		if created.Spec.ShutdownPolicy == nil || *created.Spec.ShutdownPolicy != agentsv1beta1.ShutdownPolicyRetain {
			t.Errorf("apply skipped defaulting: shutdownPolicy %v", created.Spec.ShutdownPolicy)
		}
		if !hasManager(created.ObjectMeta, "a/Apply") {
			t.Errorf("managedFields %v, want a/Apply", managers(created.ObjectMeta))
		}

		// Re-applying the same configuration changes nothing.
		again, err := sandboxes.Apply(ctx, sandboxApply(ns, "owned", 1), metav1.ApplyOptions{FieldManager: "a"})
		if err != nil {
			t.Fatal(err)
		}
		if again.ResourceVersion != created.ResourceVersion {
			t.Errorf("an identical apply wrote the object: resourceVersion %s -> %s", created.ResourceVersion, again.ResourceVersion)
		}

		b := agentsac.Sandbox("owned", ns).WithSpec(agentsac.SandboxSpec().WithReplicas(0))
		_, err = sandboxes.Apply(ctx, b, metav1.ApplyOptions{FieldManager: "b"})
		if !apierrors.IsConflict(err) {
			t.Fatalf("apply of a field owned by a: want 409 Conflict, got %v", err)
		}
		if !strings.Contains(err.Error(), ".spec.replicas") || !strings.Contains(err.Error(), `"a"`) {
			t.Errorf("the conflict does not name .spec.replicas and its manager a: %v", err)
		}
		if status, ok := err.(apierrors.APIStatus); ok && status.Status().Details != nil {
			var fields []string
			for _, c := range status.Status().Details.Causes {
				fields = append(fields, c.Field)
			}
			if len(fields) != 1 || fields[0] != ".spec.replicas" {
				t.Errorf("conflict causes name %v, want [.spec.replicas]", fields)
			}
		}
		unchanged, err := sandboxes.Get(ctx, "owned", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if int32Of(unchanged.Spec.Replicas) != 1 {
			t.Errorf("a conflicting apply changed replicas to %d", int32Of(unchanged.Spec.Replicas))
		}

		forced, err := sandboxes.Apply(ctx, b, metav1.ApplyOptions{FieldManager: "b", Force: true})
		if err != nil {
			t.Fatalf("forced apply by b: %v", err)
		}
		if int32Of(forced.Spec.Replicas) != 0 || forced.Generation != 2 {
			t.Errorf("forced apply: replicas %d, generation %d", int32Of(forced.Spec.Replicas), forced.Generation)
		}
		if !hasManager(forced.ObjectMeta, "a/Apply") || !hasManager(forced.ObjectMeta, "b/Apply") {
			t.Errorf("managedFields %v, want a/Apply and b/Apply", managers(forced.ObjectMeta))
		}
		// a still owns the pod template, so its next apply of replicas 1 conflicts with b now.
		if _, err := sandboxes.Apply(ctx, sandboxApply(ns, "owned", 1), metav1.ApplyOptions{FieldManager: "a"}); !apierrors.IsConflict(err) {
			t.Errorf("apply by a after b took replicas: want 409 Conflict, got %v", err)
		}
	})

	t.Run("ownership holds across versions", func(t *testing.T) {
		ctx := testContext(t)
		if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Apply(ctx, sandboxApply(ns, "versions", 1), metav1.ApplyOptions{FieldManager: "a"}); err != nil {
			t.Fatal(err)
		}
		b := agentsalphaac.Sandbox("versions", ns).WithSpec(agentsalphaac.SandboxSpec().WithReplicas(0))
		alpha := s.Client.AgentsV1alpha1().Sandboxes(ns)
		if _, err := alpha.Apply(ctx, b, metav1.ApplyOptions{FieldManager: "b"}); !apierrors.IsConflict(err) {
			t.Fatalf("v1alpha1 apply of a field a owns through v1beta1: want 409 Conflict, got %v", err)
		}
		got, err := alpha.Apply(ctx, b, metav1.ApplyOptions{FieldManager: "b", Force: true})
		if err != nil {
			t.Fatal(err)
		}
		versions := map[string]string{}
		for _, f := range got.ManagedFields {
			versions[f.Manager] = f.APIVersion
		}
		if versions["a"] != "agents.x-k8s.io/v1beta1" || versions["b"] != "agents.x-k8s.io/v1alpha1" {
			t.Errorf("managedFields versions %v", versions)
		}
	})

	t.Run("appliers share a keyed list", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		if _, err := sandboxes.Apply(ctx, sandboxApply(ns, "shared", 1), metav1.ApplyOptions{FieldManager: "a"}); err != nil {
			t.Fatal(err)
		}
		// b adds a container: containers are a list keyed by name, so a's container stays.
		sidecar := podSpec()
		sidecar.Containers = []corev1.Container{{Name: "sidecar", Image: "envoy:1.30"}}
		got, err := sandboxes.Apply(ctx, agentsac.Sandbox("shared", ns).WithSpec(agentsac.SandboxSpec().
			WithPodTemplate(agentsac.PodTemplate().WithSpec(sidecar))), metav1.ApplyOptions{FieldManager: "b"})
		if err != nil {
			t.Fatalf("apply of a second container by b: %v", err)
		}
		expectContainers(t, got.Spec.PodTemplate, "agent", "sidecar")
	})

	t.Run("an update does not conflict but takes ownership", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		applied, err := sandboxes.Apply(ctx, sandboxApply(ns, "updated", 1), metav1.ApplyOptions{FieldManager: "a"})
		if err != nil {
			t.Fatal(err)
		}
		applied.Spec.Replicas = ptr.To[int32](0)
		updated, err := sandboxes.Update(ctx, applied, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		if err != nil {
			t.Fatalf("update of an applied field: %v", err)
		}
		if !hasManager(updated.ObjectMeta, "kubectl-edit/Update") {
			t.Errorf("managedFields %v, want kubectl-edit/Update", managers(updated.ObjectMeta))
		}
		if _, err := sandboxes.Apply(ctx, sandboxApply(ns, "updated", 1), metav1.ApplyOptions{FieldManager: "a"}); !apierrors.IsConflict(err) {
			t.Errorf("re-apply after another manager took the field: want 409 Conflict, got %v", err)
		}
	})

	t.Run("apply status", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		if _, err := sandboxes.Apply(ctx, sandboxApply(ns, "status", 1), metav1.ApplyOptions{FieldManager: "user"}); err != nil {
			t.Fatal(err)
		}
		st := agentsac.Sandbox("status", ns).
			WithSpec(agentsac.SandboxSpec().WithReplicas(0)). // ignored by the status subresource
			WithStatus(agentsac.SandboxStatus().WithReplicas(1).WithService("status"))
		got, err := sandboxes.ApplyStatus(ctx, st, metav1.ApplyOptions{FieldManager: "controller", Force: true})
		if err != nil {
			t.Fatalf("apply status: %v", err)
		}
		if got.Status.Replicas != 1 || got.Status.Service != "status" || int32Of(got.Spec.Replicas) != 1 {
			t.Errorf("apply status: status %s, spec.replicas %d", jsonOf(t, got.Status), int32Of(got.Spec.Replicas))
		}
		if !hasManager(got.ObjectMeta, "controller/Apply/status") {
			t.Errorf("managedFields %v, want controller/Apply/status", managers(got.ObjectMeta))
		}
		// The main resource never applies status.
		withStatus := sandboxApply(ns, "status", 1).WithStatus(agentsac.SandboxStatus().WithReplicas(0))
		got, err = sandboxes.Apply(ctx, withStatus, metav1.ApplyOptions{FieldManager: "user"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Replicas != 1 {
			t.Errorf("an apply of the main resource changed status.replicas to %d", got.Status.Replicas)
		}
	})

	t.Run("extensions kinds", func(t *testing.T) {
		ctx := testContext(t)
		pools := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns)
		pool := extac.SandboxWarmPool("pool", ns).WithSpec(extac.SandboxWarmPoolSpec().
			WithReplicas(2).WithTemplateRef(extac.SandboxTemplateRef().WithName("tmpl")))
		got, err := pools.Apply(ctx, pool, metav1.ApplyOptions{FieldManager: "gitops"})
		if err != nil {
			t.Fatal(err)
		}
		if ptr.Deref(got.Spec.Replicas, 0) != 2 || got.Spec.UpdateStrategy == nil || got.Spec.UpdateStrategy.Type != "OnReplenish" {
			t.Errorf("applied pool %s", jsonOf(t, got.Spec))
		}
		hpa := extac.SandboxWarmPool("pool", ns).WithSpec(extac.SandboxWarmPoolSpec().WithReplicas(7))
		if _, err := pools.Apply(ctx, hpa, metav1.ApplyOptions{FieldManager: "autoscaler"}); !apierrors.IsConflict(err) {
			t.Errorf("pool replicas owned by gitops: want 409 Conflict, got %v", err)
		}

		claims := s.Client.ExtensionsV1beta1().SandboxClaims(ns)
		bad := extac.SandboxClaim("bad", ns).WithSpec(extac.SandboxClaimSpec().
			WithLifecycle(extac.Lifecycle().WithTTLSecondsAfterFinished(-1)))
		_, err = claims.Apply(ctx, bad, metav1.ApplyOptions{FieldManager: "gitops"})
		expectInvalid(t, err, "spec.sandboxTemplateRef.name", "spec.lifecycle.ttlSecondsAfterFinished")
		if _, err := claims.Get(ctx, "bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("an invalid apply stored a claim: %v", err)
		}
	})
}
