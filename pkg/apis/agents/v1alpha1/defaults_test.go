// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/install"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1alpha1"
)

// TestDefaults decodes the v1alpha1 hello-world example the seeds ship and checks that v1alpha1
// gets the same defaults as v1beta1, and keeps what a manifest sets.
func TestDefaults(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	codecs := serializer.NewCodecFactory(scheme)
	obj, _, err := codecs.UniversalDecoder(v1alpha1.SchemeGroupVersion).Decode([]byte(`
apiVersion: agents.x-k8s.io/v1alpha1
kind: Sandbox
metadata:
  name: hello-world
spec:
  podTemplate:
    spec:
      containers:
      - name: my-container
        image: alpine:latest
      restartPolicy: Never
`), nil, nil)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	s := obj.(*v1alpha1.Sandbox)
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 1 {
		t.Errorf("spec.replicas = %v, want 1", s.Spec.Replicas)
	}
	if s.Spec.ShutdownPolicy == nil || *s.Spec.ShutdownPolicy != v1alpha1.ShutdownPolicyRetain {
		t.Errorf("spec.shutdownPolicy = %v, want Retain", s.Spec.ShutdownPolicy)
	}

	explicit := &v1alpha1.Sandbox{}
	explicit.Spec.Replicas = ptr.To[int32](0)
	explicit.Spec.ShutdownPolicy = ptr.To(v1alpha1.ShutdownPolicyDelete)
	scheme.Default(explicit)
	if *explicit.Spec.Replicas != 0 || *explicit.Spec.ShutdownPolicy != v1alpha1.ShutdownPolicyDelete {
		t.Errorf("explicit values changed: replicas %d, shutdownPolicy %q", *explicit.Spec.Replicas, *explicit.Spec.ShutdownPolicy)
	}
}
