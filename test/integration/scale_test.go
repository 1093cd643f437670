// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"encoding/json"
	"fmt"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// TestScale drives the scale subresources of Sandbox (0 or 1) and SandboxWarmPool (any count from
// 0) as kubectl scale and an autoscaler do.
func TestScale(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "scale"

	t.Run("Sandbox", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		sb, err := sandboxes.Create(ctx, newSandbox(ns, "scaled"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}

		sc, err := sandboxes.GetScale(ctx, "scaled", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get scale: %v", err)
		}
		if sc.Spec.Replicas != 1 || sc.Status.Replicas != 0 || sc.Status.Selector != "" {
			t.Errorf("initial scale %s, want spec.replicas 1, status.replicas 0, no selector", jsonOf(t, sc))
		}
		if sc.Name != "scaled" || sc.Namespace != ns || sc.UID != sb.UID || sc.ResourceVersion != sb.ResourceVersion {
			t.Errorf("scale metadata %s does not match the Sandbox (uid %s, resourceVersion %s)", jsonOf(t, sc.ObjectMeta), sb.UID, sb.ResourceVersion)
		}
		// The typed client drops TypeMeta; the wire form says what the server sends.
		raw, err := s.Client.AgentsV1beta1().RESTClient().Get().Namespace(ns).Resource("sandboxes").Name("scaled").SubResource("scale").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var wire metav1.TypeMeta
		if err := json.Unmarshal(raw, &wire); err != nil {
			t.Fatal(err)
		}
		if wire.Kind != "Scale" || wire.APIVersion != "autoscaling/v1" {
			t.Errorf("scale is %s %s, want autoscaling/v1 Scale", wire.APIVersion, wire.Kind)
		}

		for _, replicas := range []int32{0, 1} {
			sc.Spec.Replicas = replicas
			got, err := sandboxes.UpdateScale(ctx, "scaled", sc, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("scale to %d: %v", replicas, err)
			}
			if got.Spec.Replicas != replicas {
				t.Errorf("scale answered spec.replicas %d, want %d", got.Spec.Replicas, replicas)
			}
			obj, err := sandboxes.Get(ctx, "scaled", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if int32Of(obj.Spec.Replicas) != replicas {
				t.Errorf("after scale to %d the Sandbox has spec.replicas %d", replicas, int32Of(obj.Spec.Replicas))
			}
			sc = got
		}
		after, err := sandboxes.Get(ctx, "scaled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.Generation != 3 {
			t.Errorf("generation after two scale writes %d, want 3", after.Generation)
		}

		sc.Spec.Replicas = 2
		_, err = sandboxes.UpdateScale(ctx, "scaled", sc, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec.replicas")

		// A stale resourceVersion on the Scale is a precondition failure.
		stale := sc.DeepCopy()
		stale.ResourceVersion = sb.ResourceVersion
		stale.Spec.Replicas = 0
		if _, err := sandboxes.UpdateScale(ctx, "scaled", stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Errorf("scale with a stale resourceVersion: want 409 Conflict, got %v", err)
		}

		// status.replicas and status.selector come through the Scale.
		cur, err := sandboxes.Get(ctx, "scaled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Status.Replicas = 1
		cur.Status.LabelSelector = "agents.x-k8s.io/sandbox-name-hash=abcd1234"
		if _, err := sandboxes.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		sc, err = sandboxes.GetScale(ctx, "scaled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Status.Replicas != 1 || sc.Status.Selector != "agents.x-k8s.io/sandbox-name-hash=abcd1234" {
			t.Errorf("scale status %s, want replicas 1 and the selector of the Sandbox", jsonOf(t, sc.Status))
		}

		// A merge patch of the scale subresource, as kubectl scale sends. The answer is a Scale,
		// which the typed Patch (it decodes a Sandbox) cannot read, so the REST client sends it.
		raw, err = s.Client.AgentsV1beta1().RESTClient().Patch(types.MergePatchType).Namespace(ns).Resource("sandboxes").Name("scaled").
			SubResource("scale").Body([]byte(`{"spec":{"replicas":0}}`)).DoRaw(ctx)
		if err != nil {
			t.Fatalf("patch scale: %v", err)
		}
		var patchedScale autoscalingv1.Scale
		if err := json.Unmarshal(raw, &patchedScale); err != nil {
			t.Fatal(err)
		}
		if patchedScale.Spec.Replicas != 0 || patchedScale.Status.Selector != "agents.x-k8s.io/sandbox-name-hash=abcd1234" {
			t.Errorf("scale patch answered %s", raw)
		}
		patched, err := sandboxes.Get(ctx, "scaled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if int32Of(patched.Spec.Replicas) != 0 {
			t.Errorf("after a scale patch to 0 spec.replicas is %d", int32Of(patched.Spec.Replicas))
		}
	})

	t.Run("SandboxWarmPool", func(t *testing.T) {
		ctx := testContext(t)
		pools := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns)
		if _, err := pools.Create(ctx, newPool(ns, "pool", "tmpl", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		sc, err := pools.GetScale(ctx, "pool", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Spec.Replicas != 1 {
			t.Errorf("initial scale spec.replicas %d, want 1", sc.Spec.Replicas)
		}
		sc.Spec.Replicas = 5
		got, err := pools.UpdateScale(ctx, "pool", sc, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.Replicas != 5 {
			t.Errorf("scale answered spec.replicas %d, want 5", got.Spec.Replicas)
		}
		p, err := pools.Get(ctx, "pool", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ptr.Deref(p.Spec.Replicas, -1); got != 5 {
			t.Errorf("pool spec.replicas %d after scale to 5", got)
		}

		neg := got.DeepCopy()
		neg.Spec.Replicas = -1
		_, err = pools.UpdateScale(ctx, "pool", neg, metav1.UpdateOptions{})
		expectInvalid(t, err, "spec.replicas")

		p.Status.Replicas = 4
		p.Status.ReadyReplicas = 3
		p.Status.Selector = "agents.x-k8s.io/pool=pool,agents.x-k8s.io/sandbox-pod-template-hash=abcd1234"
		if _, err := pools.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		sc, err = pools.GetScale(ctx, "pool", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Spec.Replicas != 5 || sc.Status.Replicas != 4 || sc.Status.Selector != p.Status.Selector {
			t.Errorf("scale %s, want spec 5, status 4 and selector %q", jsonOf(t, sc), p.Status.Selector)
		}
	})

	// status.selector is checked with labels.Parse, which accepts "!=" and the "<"/">" operators,
	// while the scale subresource turns it into a metav1.LabelSelector, which has neither: a status
	// the server stored must not make the object's scale unreadable.
	t.Run("a stored status.selector is served through the Scale", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		for i, selector := range []string{"agents.x-k8s.io/sandbox-name-hash!=abcd1234", "generation>1"} {
			name := fmt.Sprintf("selector-%d", i)
			sb, err := sandboxes.Create(ctx, newSandbox(ns, name), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sb.Status.LabelSelector = selector
			if _, err := sandboxes.UpdateStatus(ctx, sb, metav1.UpdateOptions{}); apierrors.IsInvalid(err) {
				continue // refusing the selector up front is a fine answer too
			} else if err != nil {
				t.Fatal(err)
			}
			sc, err := sandboxes.GetScale(ctx, name, metav1.GetOptions{})
			if apierrors.IsInternalError(err) {
				t.Fatalf("status.selector %q is accepted by UpdateStatus, then GET sandboxes/%s/scale answers 500: %v", selector, name, err)
			}
			if err != nil {
				t.Fatalf("GET scale with status.selector %q: %v", selector, err)
			}
			if sc.Status.Selector != selector {
				t.Errorf("scale status.selector %q, want %q", sc.Status.Selector, selector)
			}
		}
	})

	t.Run("scale of a missing object is NotFound", func(t *testing.T) {
		ctx := testContext(t)
		if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).GetScale(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get scale: want 404, got %v", err)
		}
		sc := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 1}}
		if _, err := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).UpdateScale(ctx, "missing", sc, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("update scale: want 404, got %v", err)
		}
	})
}
