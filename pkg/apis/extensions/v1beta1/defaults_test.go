// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/install"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return scheme
}

// decode reads a manifest as v1beta1 through the codec the API server uses, which defaults it.
func decode(t *testing.T, scheme *runtime.Scheme, manifest string) runtime.Object {
	t.Helper()
	codecs := serializer.NewCodecFactory(scheme)
	obj, _, err := codecs.UniversalDecoder(v1beta1.SchemeGroupVersion).Decode([]byte(manifest), nil, nil)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return obj
}

func TestDefaultsSandboxClaim(t *testing.T) {
	scheme := newScheme()
	c := decode(t, scheme, `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata:
  name: my-secure-sandbox
spec:
  sandboxTemplateRef:
    name: secure-datascience-template
`).(*v1beta1.SandboxClaim)
	if c.Spec.WarmPool == nil || *c.Spec.WarmPool != v1beta1.WarmPoolPolicyDefault {
		t.Errorf("spec.warmpool = %v, want default", c.Spec.WarmPool)
	}
	if c.Spec.Lifecycle != nil {
		t.Errorf("spec.lifecycle = %+v, want unset (a claim without lifecycle never expires)", c.Spec.Lifecycle)
	}

	c = decode(t, scheme, `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata:
  name: my-expiring-sandbox
spec:
  sandboxTemplateRef:
    name: secure-datascience-template
  lifecycle:
    shutdownTime: "2099-12-31T23:59:59Z"
`).(*v1beta1.SandboxClaim)
	if c.Spec.Lifecycle == nil || c.Spec.Lifecycle.ShutdownPolicy == nil || *c.Spec.Lifecycle.ShutdownPolicy != v1beta1.ShutdownPolicyRetain {
		t.Errorf("spec.lifecycle = %+v, want shutdownPolicy Retain", c.Spec.Lifecycle)
	}
}

func TestDefaultsSandboxClaimKeepsExplicitValues(t *testing.T) {
	c := &v1beta1.SandboxClaim{Spec: v1beta1.SandboxClaimSpec{
		WarmPool:  ptr.To(v1beta1.WarmPoolPolicyNone),
		Lifecycle: &v1beta1.Lifecycle{ShutdownPolicy: ptr.To(v1beta1.ShutdownPolicyDeleteForeground)},
	}}
	newScheme().Default(c)
	if *c.Spec.WarmPool != v1beta1.WarmPoolPolicyNone {
		t.Errorf("spec.warmpool = %q, want none", *c.Spec.WarmPool)
	}
	if *c.Spec.Lifecycle.ShutdownPolicy != v1beta1.ShutdownPolicyDeleteForeground {
		t.Errorf("spec.lifecycle.shutdownPolicy = %q, want DeleteForeground", *c.Spec.Lifecycle.ShutdownPolicy)
	}
}

func TestDefaultsSandboxTemplate(t *testing.T) {
	scheme := newScheme()
	tmpl := decode(t, scheme, `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata:
  name: python-runtime-template
spec:
  podTemplate:
    spec:
      containers:
      - name: python-runtime
        image: python:3.13
`).(*v1beta1.SandboxTemplate)
	if tmpl.Spec.NetworkPolicyManagement != v1beta1.NetworkPolicyManagementManaged {
		t.Errorf("spec.networkPolicyManagement = %q, want Managed", tmpl.Spec.NetworkPolicyManagement)
	}
	if tmpl.Spec.EnvVarsInjectionPolicy != v1beta1.EnvVarsInjectionPolicyDisallowed {
		t.Errorf("spec.envVarsInjectionPolicy = %q, want Disallowed", tmpl.Spec.EnvVarsInjectionPolicy)
	}
	if tmpl.Spec.NetworkPolicy != nil || tmpl.Spec.Service != nil {
		t.Errorf("networkPolicy %v and service %v should stay unset", tmpl.Spec.NetworkPolicy, tmpl.Spec.Service)
	}

	explicit := &v1beta1.SandboxTemplate{Spec: v1beta1.SandboxTemplateSpec{
		NetworkPolicyManagement: v1beta1.NetworkPolicyManagementUnmanaged,
		EnvVarsInjectionPolicy:  v1beta1.EnvVarsInjectionPolicyOverrides,
	}}
	scheme.Default(explicit)
	if explicit.Spec.NetworkPolicyManagement != v1beta1.NetworkPolicyManagementUnmanaged ||
		explicit.Spec.EnvVarsInjectionPolicy != v1beta1.EnvVarsInjectionPolicyOverrides {
		t.Errorf("explicit values changed: %+v", explicit.Spec)
	}
}

func TestDefaultsSandboxWarmPool(t *testing.T) {
	scheme := newScheme()
	cases := []struct {
		name     string
		strategy *v1beta1.SandboxWarmPoolUpdateStrategy
		want     v1beta1.SandboxWarmPoolUpdateStrategyType
	}{
		{"no update strategy", nil, v1beta1.OnReplenishSandboxWarmPoolUpdateStrategyType},
		{"update strategy without type", &v1beta1.SandboxWarmPoolUpdateStrategy{}, v1beta1.OnReplenishSandboxWarmPoolUpdateStrategyType},
		{"Recreate kept", &v1beta1.SandboxWarmPoolUpdateStrategy{Type: v1beta1.RecreateSandboxWarmPoolUpdateStrategyType}, v1beta1.RecreateSandboxWarmPoolUpdateStrategyType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1beta1.SandboxWarmPool{Spec: v1beta1.SandboxWarmPoolSpec{Replicas: ptr.To[int32](2), UpdateStrategy: tc.strategy}}
			scheme.Default(p)
			if p.Spec.UpdateStrategy == nil || p.Spec.UpdateStrategy.Type != tc.want {
				t.Errorf("spec.updateStrategy = %+v, want type %q", p.Spec.UpdateStrategy, tc.want)
			}
			if p.Spec.Replicas == nil || *p.Spec.Replicas != 2 {
				t.Errorf("spec.replicas = %v, want 2", p.Spec.Replicas)
			}
		})
	}
}

// TestDefaultsPeerV1Manifests decodes manifests in the agent-sandbox v1.0 shape: a pool without
// replicas keeps one member, a claim by warmPoolRef adopts only from that pool, and a template
// lets no claim add volume claim templates unless it says so.
func TestDefaultsPeerV1Manifests(t *testing.T) {
	scheme := newScheme()
	pool := decode(t, scheme, `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata:
  name: python-pool
spec:
  sandboxTemplateRef:
    name: python
`).(*v1beta1.SandboxWarmPool)
	if pool.Spec.Replicas == nil || *pool.Spec.Replicas != 1 {
		t.Errorf("pool spec.replicas = %v, want 1", pool.Spec.Replicas)
	}
	scaledToZero := decode(t, scheme, `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxWarmPool
metadata:
  name: idle-pool
spec:
  replicas: 0
  sandboxTemplateRef:
    name: python
`).(*v1beta1.SandboxWarmPool)
	if scaledToZero.Spec.Replicas == nil || *scaledToZero.Spec.Replicas != 0 {
		t.Errorf("pool spec.replicas = %v, want the explicit 0", scaledToZero.Spec.Replicas)
	}

	claim := decode(t, scheme, `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata:
  name: by-pool
spec:
  warmPoolRef:
    name: python-pool
`).(*v1beta1.SandboxClaim)
	if claim.Spec.WarmPool == nil || *claim.Spec.WarmPool != "python-pool" {
		t.Errorf("claim spec.warmpool = %v, want python-pool", claim.Spec.WarmPool)
	}
	cold := decode(t, scheme, `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxClaim
metadata:
  name: by-pool-cold
spec:
  warmPoolRef:
    name: python-pool
  warmpool: none
`).(*v1beta1.SandboxClaim)
	if *cold.Spec.WarmPool != v1beta1.WarmPoolPolicyNone {
		t.Errorf("claim spec.warmpool = %q, want the explicit none", *cold.Spec.WarmPool)
	}

	template := decode(t, scheme, `
apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata:
  name: python
spec:
  podTemplate:
    spec:
      containers:
      - name: python
        image: python:3.13
`).(*v1beta1.SandboxTemplate)
	if template.Spec.VolumeClaimTemplatesPolicy != v1beta1.VolumeClaimTemplatesPolicyDisallowed {
		t.Errorf("template spec.volumeClaimTemplatesPolicy = %q, want Disallowed", template.Spec.VolumeClaimTemplatesPolicy)
	}
}
