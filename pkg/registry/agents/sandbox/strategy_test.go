// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

func withSpec(replicas *int32, mode agents.OperatingMode) *agents.Sandbox {
	return &agents.Sandbox{Spec: agents.SandboxSpec{Replicas: replicas, OperatingMode: mode}}
}

func TestReplicasAndOperatingModeOnCreate(t *testing.T) {
	st, _ := NewStrategy(runtime.NewScheme(), "", nil)
	cases := []struct {
		name     string
		in       *agents.Sandbox
		replicas int32
		mode     agents.OperatingMode
	}{
		{"neither: Running", withSpec(nil, ""), 1, agents.OperatingModeRunning},
		{"replicas 0 gives Suspended", withSpec(ptr.To[int32](0), ""), 0, agents.OperatingModeSuspended},
		{"Suspended gives replicas 0", withSpec(nil, agents.OperatingModeSuspended), 0, agents.OperatingModeSuspended},
		{"Running gives replicas 1", withSpec(nil, agents.OperatingModeRunning), 1, agents.OperatingModeRunning},
		{"disagreeing: left for validation", withSpec(ptr.To[int32](1), agents.OperatingModeSuspended), 1, agents.OperatingModeSuspended},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st.PrepareForCreate(context.Background(), tc.in)
			if *tc.in.Spec.Replicas != tc.replicas || tc.in.Spec.OperatingMode != tc.mode {
				t.Errorf("replicas %d, operatingMode %q; want %d, %q", *tc.in.Spec.Replicas, tc.in.Spec.OperatingMode, tc.replicas, tc.mode)
			}
		})
	}
}

// TestReplicasAndOperatingModeOnUpdate shows the field a write changed deciding the other: the
// scale subresource and merge patches change replicas only, v1.0 manifests operatingMode only.
func TestReplicasAndOperatingModeOnUpdate(t *testing.T) {
	st, _ := NewStrategy(runtime.NewScheme(), "", nil)
	running := withSpec(ptr.To[int32](1), agents.OperatingModeRunning)
	suspended := withSpec(ptr.To[int32](0), agents.OperatingModeSuspended)
	cases := []struct {
		name     string
		old, in  *agents.Sandbox
		replicas int32
		mode     agents.OperatingMode
	}{
		{"scale to 0 suspends", running, withSpec(ptr.To[int32](0), agents.OperatingModeRunning), 0, agents.OperatingModeSuspended},
		{"scale to 1 resumes", suspended, withSpec(ptr.To[int32](1), agents.OperatingModeSuspended), 1, agents.OperatingModeRunning},
		{"Suspended sets replicas 0", running, withSpec(ptr.To[int32](1), agents.OperatingModeSuspended), 0, agents.OperatingModeSuspended},
		{"Running sets replicas 1", suspended, withSpec(ptr.To[int32](0), agents.OperatingModeRunning), 1, agents.OperatingModeRunning},
		{"Suspended with replicas removed", running, withSpec(nil, agents.OperatingModeSuspended), 0, agents.OperatingModeSuspended},
		{"replicas 0 with operatingMode removed", running, withSpec(ptr.To[int32](0), ""), 0, agents.OperatingModeSuspended},
		{"both changed and agreeing", running, withSpec(ptr.To[int32](0), agents.OperatingModeSuspended), 0, agents.OperatingModeSuspended},
		{"both changed and disagreeing: left for validation", withSpec(ptr.To[int32](0), agents.OperatingModeRunning),
			withSpec(ptr.To[int32](1), agents.OperatingModeSuspended), 1, agents.OperatingModeSuspended},
		{"replicas 2: mode kept, replicas refused by validation", running, withSpec(ptr.To[int32](2), agents.OperatingModeRunning), 2, agents.OperatingModeRunning},
		{"nothing changed", suspended, withSpec(ptr.To[int32](0), agents.OperatingModeSuspended), 0, agents.OperatingModeSuspended},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in.DeepCopy()
			st.PrepareForUpdate(context.Background(), in, tc.old.DeepCopy())
			if *in.Spec.Replicas != tc.replicas || in.Spec.OperatingMode != tc.mode {
				t.Errorf("replicas %d, operatingMode %q; want %d, %q", *in.Spec.Replicas, in.Spec.OperatingMode, tc.replicas, tc.mode)
			}
		})
	}
}

func TestLaunchTypeLabel(t *testing.T) {
	st, _ := NewStrategy(runtime.NewScheme(), "", nil)
	owned := func(kind, apiVersion string, labels map[string]string) *agents.Sandbox {
		s := withSpec(nil, "")
		s.Labels = labels
		if kind != "" {
			s.OwnerReferences = []metav1.OwnerReference{{Kind: kind, APIVersion: apiVersion, Name: "x", UID: "u", Controller: ptr.To(true)}}
		}
		return s
	}
	const ext = "extensions.agents.x-k8s.io/v1beta1"
	label := agentsv1beta1.SandboxLaunchTypeLabel
	t.Run("create", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			in   *agents.Sandbox
			want string
		}{
			{"made directly", owned("", "", nil), agentsv1beta1.LaunchTypeCold},
			{"made for a claim", owned("SandboxClaim", ext, nil), agentsv1beta1.LaunchTypeCold},
			{"made by a warm pool", owned("SandboxWarmPool", ext, nil), agentsv1beta1.LaunchTypeWarm},
			{"a kind of the same name in another group", owned("SandboxWarmPool", "example.com/v1", nil), agentsv1beta1.LaunchTypeCold},
			{"a user's own value is not kept", owned("", "", map[string]string{label: "warm", "app": "x"}), agentsv1beta1.LaunchTypeCold},
		} {
			t.Run(tc.name, func(t *testing.T) {
				st.PrepareForCreate(context.Background(), tc.in)
				if got := tc.in.Labels[label]; got != tc.want {
					t.Errorf("launch type %q, want %q", got, tc.want)
				}
			})
		}
	})
	t.Run("update", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			old, in *agents.Sandbox
			want    string
		}{
			{"adopted by a claim: stays warm", owned("SandboxWarmPool", ext, map[string]string{label: "warm"}), owned("SandboxClaim", ext, map[string]string{label: "warm"}), agentsv1beta1.LaunchTypeWarm},
			{"removed by a write: put back", owned("", "", map[string]string{label: "cold"}), owned("", "", nil), agentsv1beta1.LaunchTypeCold},
			{"changed by a write: put back", owned("", "", map[string]string{label: "cold"}), owned("", "", map[string]string{label: "warm"}), agentsv1beta1.LaunchTypeCold},
			{"stored before the label, adopted now", owned("SandboxWarmPool", ext, nil), owned("SandboxClaim", ext, nil), agentsv1beta1.LaunchTypeWarm},
			{"stored before the label, a claim's", owned("SandboxClaim", ext, nil), owned("SandboxClaim", ext, nil), agentsv1beta1.LaunchTypeCold},
		} {
			t.Run(tc.name, func(t *testing.T) {
				st.PrepareForUpdate(context.Background(), tc.in, tc.old)
				if got := tc.in.Labels[label]; got != tc.want {
					t.Errorf("launch type %q, want %q", got, tc.want)
				}
			})
		}
	})
}

// TestStatusOfSandboxCreatedSuspended: a Sandbox created suspended, by replicas or by operating
// mode, is stored with the status the controller would write for it; any other gets none, and a
// status sent with the create is dropped either way.
func TestStatusOfSandboxCreatedSuspended(t *testing.T) {
	st, _ := NewStrategy(runtime.NewScheme(), "", nil)
	forged := agents.SandboxStatus{Replicas: 1, Service: "forged",
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Forged"}}}
	for _, tc := range []struct {
		name      string
		in        *agents.Sandbox
		suspended bool
	}{
		{"replicas 0", withSpec(ptr.To[int32](0), ""), true},
		{"operatingMode Suspended", withSpec(nil, agents.OperatingModeSuspended), true},
		{"replicas unset", withSpec(nil, ""), false},
		{"replicas 1", withSpec(ptr.To[int32](1), ""), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Status = forged
			st.PrepareForCreate(context.Background(), tc.in)
			got := tc.in.Status
			if got.Replicas != 0 || got.Service != "" || got.LabelSelector != "" {
				t.Errorf("status %+v kept what the create sent", got)
			}
			if !tc.suspended {
				if len(got.Conditions) != 0 {
					t.Errorf("conditions %+v, want none: the controller reports a running Sandbox", got.Conditions)
				}
				return
			}
			ready, suspended := agentsv1beta1.SuspendedConditions(1)
			if len(got.Conditions) != 2 {
				t.Fatalf("conditions %+v, want Ready and Suspended", got.Conditions)
			}
			for i, want := range []metav1.Condition{ready, suspended} {
				c := got.Conditions[i]
				if c.LastTransitionTime.IsZero() {
					t.Errorf("%s has no lastTransitionTime", c.Type)
				}
				c.LastTransitionTime = metav1.Time{}
				if c != want {
					t.Errorf("condition %d = %+v, want %+v", i, c, want)
				}
			}
		})
	}
}
