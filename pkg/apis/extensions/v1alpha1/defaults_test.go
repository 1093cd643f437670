// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/install"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1alpha1"
)

// TestDefaults decodes v1alpha1 manifests, the apiVersion of the seeds' extensions examples, and
// checks that they get the same defaults as v1beta1.
func TestDefaults(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	decoder := serializer.NewCodecFactory(scheme).UniversalDecoder(v1alpha1.SchemeGroupVersion)
	decode := func(manifest string) runtime.Object {
		t.Helper()
		obj, _, err := decoder.Decode([]byte(manifest), nil, nil)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		return obj
	}

	c := decode(`
apiVersion: extensions.agents.x-k8s.io/v1alpha1
kind: SandboxClaim
metadata:
  name: my-secure-sandbox
spec:
  sandboxTemplateRef:
    name: secure-datascience-template
  lifecycle:
    ttlSecondsAfterFinished: 600
`).(*v1alpha1.SandboxClaim)
	if c.Spec.WarmPool == nil || *c.Spec.WarmPool != v1alpha1.WarmPoolPolicyDefault {
		t.Errorf("claim spec.warmpool = %v, want default", c.Spec.WarmPool)
	}
	if c.Spec.Lifecycle.ShutdownPolicy == nil || *c.Spec.Lifecycle.ShutdownPolicy != v1alpha1.ShutdownPolicyRetain {
		t.Errorf("claim spec.lifecycle.shutdownPolicy = %v, want Retain", c.Spec.Lifecycle.ShutdownPolicy)
	}

	tmpl := decode(`
apiVersion: extensions.agents.x-k8s.io/v1alpha1
kind: SandboxTemplate
metadata:
  name: secure-datascience-template
spec:
  podTemplate:
    spec:
      containers:
      - name: my-container
        image: busybox
`).(*v1alpha1.SandboxTemplate)
	if tmpl.Spec.NetworkPolicyManagement != v1alpha1.NetworkPolicyManagementManaged ||
		tmpl.Spec.EnvVarsInjectionPolicy != v1alpha1.EnvVarsInjectionPolicyDisallowed {
		t.Errorf("template policies = %q, %q, want Managed, Disallowed", tmpl.Spec.NetworkPolicyManagement, tmpl.Spec.EnvVarsInjectionPolicy)
	}

	p := decode(`
apiVersion: extensions.agents.x-k8s.io/v1alpha1
kind: SandboxWarmPool
metadata:
  name: sandboxwarmpool-example
spec:
  replicas: 1
  sandboxTemplateRef:
    name: secure-datascience-template
`).(*v1alpha1.SandboxWarmPool)
	if p.Spec.UpdateStrategy == nil || p.Spec.UpdateStrategy.Type != v1alpha1.OnReplenishSandboxWarmPoolUpdateStrategyType {
		t.Errorf("pool spec.updateStrategy = %+v, want OnReplenish", p.Spec.UpdateStrategy)
	}
}
