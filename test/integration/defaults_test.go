// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	agentsv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1alpha1"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// TestDefaults checks that the defaults are filled in on create, are stored (a get shows them too)
// and that explicit values are kept.
func TestDefaults(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "defaults"

	t.Run("Sandbox", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		created, err := sandboxes.Create(ctx, newSandbox(ns, "defaulted"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := sandboxes.Get(ctx, "defaulted", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []*agentsv1beta1.Sandbox{created, got} {
			if int32Of(o.Spec.Replicas) != 1 {
				t.Errorf("spec.replicas %d, want 1", int32Of(o.Spec.Replicas))
			}
			if o.Spec.ShutdownPolicy == nil || *o.Spec.ShutdownPolicy != agentsv1beta1.ShutdownPolicyRetain {
				t.Errorf("spec.shutdownPolicy %v, want Retain", o.Spec.ShutdownPolicy)
			}
			if o.Generation != 1 {
				t.Errorf("metadata.generation %d, want 1", o.Generation)
			}
		}

		explicit := newSandbox(ns, "explicit")
		explicit.Spec.Replicas = ptr.To[int32](0)
		explicit.Spec.ShutdownPolicy = ptr.To(agentsv1beta1.ShutdownPolicyDelete)
		e, err := sandboxes.Create(ctx, explicit, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if int32Of(e.Spec.Replicas) != 0 || *e.Spec.ShutdownPolicy != agentsv1beta1.ShutdownPolicyDelete {
			t.Errorf("explicit values not kept: replicas %d, shutdownPolicy %s", int32Of(e.Spec.Replicas), *e.Spec.ShutdownPolicy)
		}
	})

	t.Run("Sandbox in v1alpha1", func(t *testing.T) {
		ctx := testContext(t)
		sb := &agentsv1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: "alpha-defaulted", Namespace: ns},
			Spec:       agentsv1alpha1.SandboxSpec{PodTemplate: agentsv1alpha1.PodTemplate{Spec: podSpec()}},
		}
		o, err := s.Client.AgentsV1alpha1().Sandboxes(ns).Create(ctx, sb, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if int32Of(o.Spec.Replicas) != 1 || o.Spec.ShutdownPolicy == nil || *o.Spec.ShutdownPolicy != agentsv1alpha1.ShutdownPolicyRetain {
			t.Errorf("v1alpha1 defaults: replicas %d, shutdownPolicy %v", int32Of(o.Spec.Replicas), o.Spec.ShutdownPolicy)
		}
	})

	t.Run("SandboxClaim", func(t *testing.T) {
		ctx := testContext(t)
		claims := s.Client.ExtensionsV1beta1().SandboxClaims(ns)
		plain, err := claims.Create(ctx, newClaim(ns, "plain", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if plain.Spec.WarmPool == nil || *plain.Spec.WarmPool != extv1beta1.WarmPoolPolicyDefault {
			t.Errorf("spec.warmpool %v, want default", plain.Spec.WarmPool)
		}
		if plain.Spec.Lifecycle != nil {
			t.Errorf("spec.lifecycle %s, want unset when not given", jsonOf(t, plain.Spec.Lifecycle))
		}

		withLifecycle := newClaim(ns, "with-lifecycle", "tmpl")
		withLifecycle.Spec.Lifecycle = &extv1beta1.Lifecycle{TTLSecondsAfterFinished: ptr.To[int32](30)}
		c, err := claims.Create(ctx, withLifecycle, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := claims.Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lc := got.Spec.Lifecycle; lc == nil || lc.ShutdownPolicy == nil || *lc.ShutdownPolicy != extv1beta1.ShutdownPolicyRetain {
			t.Errorf("spec.lifecycle %s, want shutdownPolicy Retain", jsonOf(t, got.Spec.Lifecycle))
		}

		none := newClaim(ns, "no-pool", "tmpl")
		none.Spec.WarmPool = ptr.To(extv1beta1.WarmPoolPolicyNone)
		n, err := claims.Create(ctx, none, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *n.Spec.WarmPool != extv1beta1.WarmPoolPolicyNone {
			t.Errorf("explicit warmpool none became %q", *n.Spec.WarmPool)
		}
	})

	t.Run("SandboxTemplate", func(t *testing.T) {
		ctx := testContext(t)
		tmpl, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Create(ctx, newTemplate(ns, "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if tmpl.Spec.NetworkPolicyManagement != extv1beta1.NetworkPolicyManagementManaged {
			t.Errorf("spec.networkPolicyManagement %q, want Managed", tmpl.Spec.NetworkPolicyManagement)
		}
		if tmpl.Spec.EnvVarsInjectionPolicy != extv1beta1.EnvVarsInjectionPolicyDisallowed {
			t.Errorf("spec.envVarsInjectionPolicy %q, want Disallowed", tmpl.Spec.EnvVarsInjectionPolicy)
		}
	})

	t.Run("SandboxWarmPool", func(t *testing.T) {
		ctx := testContext(t)
		pool, err := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).Create(ctx, newPool(ns, "pool", "tmpl", 2), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pool.Spec.UpdateStrategy == nil || pool.Spec.UpdateStrategy.Type != extv1beta1.OnReplenishSandboxWarmPoolUpdateStrategyType {
			t.Errorf("spec.updateStrategy %s, want type OnReplenish", jsonOf(t, pool.Spec.UpdateStrategy))
		}
	})
}
