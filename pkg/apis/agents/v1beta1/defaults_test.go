// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/install"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

func newScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return scheme
}

// decode reads a manifest as v1beta1 through the codec the API server uses, which defaults it.
func decode(t *testing.T, scheme *runtime.Scheme, manifest string) *v1beta1.Sandbox {
	t.Helper()
	codecs := serializer.NewCodecFactory(scheme)
	obj, _, err := codecs.UniversalDecoder(v1beta1.SchemeGroupVersion).Decode([]byte(manifest), nil, nil)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	s, ok := obj.(*v1beta1.Sandbox)
	if !ok {
		t.Fatalf("decoded a %T, want *v1beta1.Sandbox", obj)
	}
	return s
}

func TestDefaultsMinimalSandbox(t *testing.T) {
	s := decode(t, newScheme(), `
apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: hello-world
spec:
  podTemplate:
    spec:
      containers:
      - name: agent
        image: ghcr.io/example/agent:latest
        ports:
        - containerPort: 8080
      restartPolicy: Never
`)
	if s.Spec.Replicas == nil || *s.Spec.Replicas != 1 {
		t.Errorf("spec.replicas = %v, want 1", s.Spec.Replicas)
	}
	if s.Spec.ShutdownPolicy == nil || *s.Spec.ShutdownPolicy != v1beta1.ShutdownPolicyRetain {
		t.Errorf("spec.shutdownPolicy = %v, want Retain", s.Spec.ShutdownPolicy)
	}
	if s.Spec.ShutdownTime != nil {
		t.Errorf("spec.shutdownTime = %v, want unset", s.Spec.ShutdownTime)
	}
	if s.Spec.Service != nil {
		t.Errorf("spec.service = %v, want unset", *s.Spec.Service)
	}
	// The Pod's own defaults come with the generated defaulters too.
	if got := s.Spec.PodTemplate.Spec.Containers[0].Ports[0].Protocol; got != corev1.ProtocolTCP {
		t.Errorf("container port protocol = %q, want TCP", got)
	}
}

func TestDefaultsKeepExplicitValues(t *testing.T) {
	scheme := newScheme()
	cases := []struct {
		name     string
		replicas *int32
		policy   *v1beta1.ShutdownPolicy
		want     int32
		wantPol  v1beta1.ShutdownPolicy
	}{
		{"nothing set", nil, nil, 1, v1beta1.ShutdownPolicyRetain},
		{"suspended and Delete", ptr.To[int32](0), ptr.To(v1beta1.ShutdownPolicyDelete), 0, v1beta1.ShutdownPolicyDelete},
		{"running and Retain", ptr.To[int32](1), ptr.To(v1beta1.ShutdownPolicyRetain), 1, v1beta1.ShutdownPolicyRetain},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1beta1.Sandbox{}
			s.Spec.Replicas = tc.replicas
			s.Spec.ShutdownPolicy = tc.policy
			scheme.Default(s)
			if *s.Spec.Replicas != tc.want {
				t.Errorf("spec.replicas = %d, want %d", *s.Spec.Replicas, tc.want)
			}
			if *s.Spec.ShutdownPolicy != tc.wantPol {
				t.Errorf("spec.shutdownPolicy = %q, want %q", *s.Spec.ShutdownPolicy, tc.wantPol)
			}
		})
	}
}

// TestDefaultsOperatingModeAndReplicas shows the two spellings of the same choice filled in from
// each other on create, and values that disagree left for validation.
func TestDefaultsOperatingModeAndReplicas(t *testing.T) {
	scheme := newScheme()
	cases := []struct {
		name     string
		replicas *int32
		mode     v1beta1.OperatingMode
		want     int32
		wantMode v1beta1.OperatingMode
	}{
		{"neither", nil, "", 1, v1beta1.OperatingModeRunning},
		{"replicas 0", ptr.To[int32](0), "", 0, v1beta1.OperatingModeSuspended},
		{"replicas 1", ptr.To[int32](1), "", 1, v1beta1.OperatingModeRunning},
		{"Suspended", nil, v1beta1.OperatingModeSuspended, 0, v1beta1.OperatingModeSuspended},
		{"Running", nil, v1beta1.OperatingModeRunning, 1, v1beta1.OperatingModeRunning},
		{"disagreeing, kept", ptr.To[int32](1), v1beta1.OperatingModeSuspended, 1, v1beta1.OperatingModeSuspended},
		{"replicas out of range, no mode", ptr.To[int32](3), "", 3, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1beta1.Sandbox{}
			s.Spec.Replicas, s.Spec.OperatingMode = tc.replicas, tc.mode
			scheme.Default(s)
			if *s.Spec.Replicas != tc.want || s.Spec.OperatingMode != tc.wantMode {
				t.Errorf("replicas %d, operatingMode %q; want %d, %q", *s.Spec.Replicas, s.Spec.OperatingMode, tc.want, tc.wantMode)
			}
		})
	}
}
