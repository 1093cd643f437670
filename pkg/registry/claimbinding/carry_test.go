// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package claimbinding

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

func TestCarryObservedGeneration(t *testing.T) {
	member := func() *agents.Sandbox {
		sb := &agents.Sandbox{}
		sb.Generation = 3
		sb.Spec.Replicas = ptr.To[int32](1)
		sb.Spec.PodTemplate.ObjectMeta.Labels = map[string]string{"pool": "p"}
		sb.Status.Conditions = []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 3},
			{Type: "PodScheduled", Status: metav1.ConditionTrue, ObservedGeneration: 3},
			{Type: "Custom", Status: metav1.ConditionTrue, ObservedGeneration: 3},
			{Type: "Finished", Status: metav1.ConditionTrue, ObservedGeneration: 2},
		}
		return sb
	}
	cases := []struct {
		name  string
		adopt func(*agents.Sandbox)
		// want is each condition's observedGeneration after the carry, in order.
		want []int64
	}{
		{"pod template metadata and idle timeout", func(sb *agents.Sandbox) {
			sb.Spec.PodTemplate.ObjectMeta.Labels = map[string]string{"claimed-by": "c"}
			sb.Spec.PodTemplate.ObjectMeta.Annotations = map[string]string{"a": "b"}
			sb.Spec.IdleTimeout = &metav1.Duration{Duration: time.Minute}
		}, []int64{4, 4, 3, 2}},
		{"replicas", func(sb *agents.Sandbox) { sb.Spec.Replicas = ptr.To[int32](0) }, []int64{3, 3, 3, 2}},
		{"shutdown time", func(sb *agents.Sandbox) { sb.Spec.ShutdownTime = &metav1.Time{Time: time.Now()} }, []int64{3, 3, 3, 2}},
		{"pod spec", func(sb *agents.Sandbox) { sb.Spec.PodTemplate.Spec.Hostname = "h" }, []int64{3, 3, 3, 2}},
		{"service", func(sb *agents.Sandbox) { sb.Spec.Service = ptr.To(true) }, []int64{3, 3, 3, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			candidate := member()
			adopted := candidate.DeepCopy()
			adopted.Generation = 4
			tc.adopt(adopted)
			adopted.Status.Conditions = candidate.Status.Conditions // shared, as a shallow copy of a cached object's would be
			carryObservedGeneration(candidate, adopted)
			for i, c := range adopted.Status.Conditions {
				if c.ObservedGeneration != tc.want[i] {
					t.Errorf("%s at generation %d, want %d", c.Type, c.ObservedGeneration, tc.want[i])
				}
			}
			for _, c := range candidate.Status.Conditions[:3] {
				if c.ObservedGeneration != 3 {
					t.Errorf("the candidate's %s moved to generation %d", c.Type, c.ObservedGeneration)
				}
			}
		})
	}
}
