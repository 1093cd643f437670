// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

func readyCondition(status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{
		Type:               "Ready",
		Status:             status,
		Reason:             reason,
		Message:            "set by the test",
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
	}
}

// TestStatusSpecSplit checks that the status subresource writes status only, the main resource
// spec and metadata only, and that metadata.generation moves with spec changes alone.
func TestStatusSpecSplit(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "status"

	t.Run("Sandbox", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)

		// A status given on create is dropped.
		sb := newSandbox(ns, "split")
		sb.Status.Replicas = 1
		sb.Status.Service = "forged"
		created, err := sandboxes.Create(ctx, sb, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.Status.Replicas != 0 || created.Status.Service != "" {
			t.Errorf("create stored a status: %s", jsonOf(t, created.Status))
		}
		if created.Generation != 1 {
			t.Fatalf("generation after create %d, want 1", created.Generation)
		}

		// UpdateStatus writes status, keeps spec, labels and generation.
		st := created.DeepCopy()
		st.Status.Replicas = 1
		st.Status.Service = "split"
		st.Status.Conditions = []metav1.Condition{readyCondition(metav1.ConditionTrue, "DependenciesReady")}
		st.Spec.Replicas = ptr.To[int32](0)
		st.Spec.Service = ptr.To(true)
		st.Labels["from-status"] = "yes"
		afterStatus, err := sandboxes.UpdateStatus(ctx, st, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update status: %v", err)
		}
		if afterStatus.Status.Replicas != 1 || afterStatus.Status.Service != "split" || len(afterStatus.Status.Conditions) != 1 {
			t.Errorf("status not written: %s", jsonOf(t, afterStatus.Status))
		}
		if int32Of(afterStatus.Spec.Replicas) != 1 || afterStatus.Spec.Service != nil {
			t.Errorf("UpdateStatus changed spec: %s", jsonOf(t, afterStatus.Spec))
		}
		if _, ok := afterStatus.Labels["from-status"]; ok {
			t.Errorf("UpdateStatus changed labels: %v", afterStatus.Labels)
		}
		if afterStatus.Generation != 1 {
			t.Errorf("generation after a status write %d, want 1", afterStatus.Generation)
		}

		// Update writes spec, keeps status.
		up := afterStatus.DeepCopy()
		up.Spec.Service = ptr.To(true)
		up.Status.Replicas = 0
		up.Status.Service = "changed-by-update"
		afterUpdate, err := sandboxes.Update(ctx, up, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		if afterUpdate.Status.Replicas != 1 || afterUpdate.Status.Service != "split" {
			t.Errorf("Update changed status: %s", jsonOf(t, afterUpdate.Status))
		}
		if afterUpdate.Spec.Service == nil || !*afterUpdate.Spec.Service {
			t.Errorf("Update did not write spec.service")
		}
		if afterUpdate.Generation != 2 {
			t.Errorf("generation after a spec change %d, want 2", afterUpdate.Generation)
		}

		// A label change alone does not move generation, nor does an update that changes nothing.
		lbl := afterUpdate.DeepCopy()
		lbl.Labels["tier"] = "gold"
		afterLabel, err := sandboxes.Update(ctx, lbl, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if afterLabel.Labels["tier"] != "gold" || afterLabel.Generation != 2 {
			t.Errorf("label update: labels %v, generation %d (want 2)", afterLabel.Labels, afterLabel.Generation)
		}
		same, err := sandboxes.Update(ctx, afterLabel.DeepCopy(), metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if same.Generation != 2 || same.ResourceVersion != afterLabel.ResourceVersion {
			t.Errorf("no-op update: generation %d, resourceVersion %s -> %s", same.Generation, afterLabel.ResourceVersion, same.ResourceVersion)
		}

		// A spec patch moves generation, a status patch does not.
		patched, err := sandboxes.Patch(ctx, "split", types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if patched.Generation != 3 {
			t.Errorf("generation after a spec patch %d, want 3", patched.Generation)
		}
		statusPatched, err := sandboxes.Patch(ctx, "split", types.MergePatchType,
			[]byte(`{"spec":{"replicas":1},"status":{"replicas":0,"podIPs":["10.0.0.7"]}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatalf("status patch: %v", err)
		}
		if statusPatched.Generation != 3 || int32Of(statusPatched.Spec.Replicas) != 0 ||
			statusPatched.Status.Replicas != 0 || len(statusPatched.Status.PodIPs) != 1 {
			t.Errorf("status patch: generation %d, spec.replicas %d, status %s",
				statusPatched.Generation, int32Of(statusPatched.Spec.Replicas), jsonOf(t, statusPatched.Status))
		}
	})

	t.Run("Sandbox status is validated", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		sb, err := sandboxes.Create(ctx, newSandbox(ns, "bad-status"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sb.Status.Replicas = 2
		sb.Status.PodIPs = []string{"not-an-ip"}
		sb.Status.LabelSelector = "a in (b"
		_, err = sandboxes.UpdateStatus(ctx, sb, metav1.UpdateOptions{})
		expectInvalid(t, err, "status.replicas", "status.podIPs[0]", "status.selector")
	})

	t.Run("SandboxClaim", func(t *testing.T) {
		ctx := testContext(t)
		claims := s.Client.ExtensionsV1beta1().SandboxClaims(ns)
		c, err := claims.Create(ctx, newClaim(ns, "claim", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Status.SandboxStatus.Name = "claim"
		c.Status.Conditions = []metav1.Condition{readyCondition(metav1.ConditionTrue, "SandboxReady")}
		c.Spec.AdditionalPodMetadata.Labels = map[string]string{"from-status": "yes"}
		afterStatus, err := claims.UpdateStatus(ctx, c, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if afterStatus.Status.SandboxStatus.Name != "claim" || len(afterStatus.Spec.AdditionalPodMetadata.Labels) != 0 || afterStatus.Generation != 1 {
			t.Errorf("claim status write: status %s, spec %s, generation %d",
				jsonOf(t, afterStatus.Status), jsonOf(t, afterStatus.Spec), afterStatus.Generation)
		}
		up := afterStatus.DeepCopy()
		up.Status = extv1beta1.SandboxClaimStatus{}
		up.Spec.AdditionalPodMetadata.Labels = map[string]string{"tier": "gold"}
		afterUpdate, err := claims.Update(ctx, up, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if afterUpdate.Status.SandboxStatus.Name != "claim" || afterUpdate.Generation != 2 {
			t.Errorf("claim update: status %s, generation %d (want 2)", jsonOf(t, afterUpdate.Status), afterUpdate.Generation)
		}
	})

	t.Run("SandboxWarmPool", func(t *testing.T) {
		ctx := testContext(t)
		pools := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns)
		p, err := pools.Create(ctx, newPool(ns, "pool", "tmpl", 2), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status = extv1beta1.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 1, Selector: "agents.x-k8s.io/pool=abc"}
		p.Spec.Replicas = ptr.To[int32](9)
		afterStatus, err := pools.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if afterStatus.Status.ReadyReplicas != 1 || int32Of(afterStatus.Spec.Replicas) != 2 || afterStatus.Generation != 1 {
			t.Errorf("pool status write: status %s, spec.replicas %d, generation %d",
				jsonOf(t, afterStatus.Status), int32Of(afterStatus.Spec.Replicas), afterStatus.Generation)
		}
		up := afterStatus.DeepCopy()
		up.Status.ReadyReplicas = 0
		up.Spec.Replicas = ptr.To[int32](3)
		afterUpdate, err := pools.Update(ctx, up, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if afterUpdate.Status.ReadyReplicas != 1 || int32Of(afterUpdate.Spec.Replicas) != 3 || afterUpdate.Generation != 2 {
			t.Errorf("pool update: status %s, spec.replicas %d, generation %d (want 2)",
				jsonOf(t, afterUpdate.Status), int32Of(afterUpdate.Spec.Replicas), afterUpdate.Generation)
		}
		bad := afterUpdate.DeepCopy()
		bad.Status.Replicas = -1
		_, err = pools.UpdateStatus(ctx, bad, metav1.UpdateOptions{})
		expectInvalid(t, err, "status.replicas")
	})

	t.Run("SandboxTemplate generation", func(t *testing.T) {
		ctx := testContext(t)
		templates := s.Client.ExtensionsV1beta1().SandboxTemplates(ns)
		tmpl, err := templates.Create(ctx, newTemplate(ns, "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tmpl.Generation != 1 {
			t.Errorf("generation after create %d, want 1", tmpl.Generation)
		}
		labelled, err := templates.Patch(ctx, "tmpl", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if labelled.Generation != 1 {
			t.Errorf("generation after a label change %d, want 1", labelled.Generation)
		}
		changed, err := templates.Patch(ctx, "tmpl", types.MergePatchType, []byte(`{"spec":{"service":true}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if changed.Generation != 2 {
			t.Errorf("generation after a spec change %d, want 2", changed.Generation)
		}
		// SandboxTemplate has no status subresource.
		err = s.Client.ExtensionsV1beta1().RESTClient().Put().Namespace(ns).Resource("sandboxtemplates").Name("tmpl").SubResource("status").
			Body(changed).Do(ctx).Error()
		if !apierrors.IsNotFound(err) {
			t.Errorf("PUT sandboxtemplates/status: want 404, got %v", err)
		}
	})

	t.Run("status subresource does not create", func(t *testing.T) {
		ctx := testContext(t)
		_, err := s.Client.AgentsV1beta1().Sandboxes(ns).UpdateStatus(ctx, &agentsv1beta1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: "ghost", Namespace: ns},
		}, metav1.UpdateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("UpdateStatus of a missing Sandbox: want 404, got %v", err)
		}
	})
}
