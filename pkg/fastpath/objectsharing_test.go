// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package fastpath

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

func podSpec(image string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{
		Name:      "agent",
		Image:     image,
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
	}}}
}

func managedFields(raw string) []metav1.ManagedFieldsEntry {
	return []metav1.ManagedFieldsEntry{{Manager: "kubectl", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(raw)}}
}

func TestObjectSharesIdenticalParts(t *testing.T) {
	a := &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: managedFields(`{"f:spec":{}}`)},
		Spec: agents.SandboxSpec{PodTemplate: agents.PodTemplate{Spec: podSpec("python:3.12")}}}
	b := &agentsv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "b", ManagedFields: managedFields(`{"f:spec":{}}`)},
		Spec: agentsv1beta1.SandboxSpec{PodTemplate: agentsv1beta1.PodTemplate{Spec: podSpec("python:3.12")}}}
	c := &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: managedFields(`{"f:status":{}}`)},
		Spec: agents.SandboxSpec{PodTemplate: agents.PodTemplate{Spec: podSpec("python:3.13")}}}
	want := []any{a.DeepCopy(), b.DeepCopy(), c.DeepCopy()}
	ShareParts(a)
	ShareParts(b)
	ShareParts(c)
	for i, got := range []any{a, b, c} {
		if !apiequality.Semantic.DeepEqual(got, want[i]) {
			t.Errorf("object %d changed by sharing: %#v, want %#v", i, got, want[i])
		}
	}
	if &a.Spec.PodTemplate.Spec.Containers[0] != &b.Spec.PodTemplate.Spec.Containers[0] {
		t.Error("identical pod specs do not share their containers")
	}
	if &a.Spec.PodTemplate.Spec.Containers[0] == &c.Spec.PodTemplate.Spec.Containers[0] {
		t.Error("different pod specs share their containers")
	}
	if a.ManagedFields[0].FieldsV1 != b.ManagedFields[0].FieldsV1 {
		t.Error("identical field sets are not shared")
	}
	if a.ManagedFields[0].FieldsV1 == c.ManagedFields[0].FieldsV1 {
		t.Error("different field sets are shared")
	}
}

func TestTableKeepsTheMostRecentlyUsed(t *testing.T) {
	table := NewSharingTable[int](2)
	table.Share([]byte("one"), 1)
	table.Share([]byte("two"), 2)
	if got := table.Share([]byte("one"), 10); got != 1 {
		t.Errorf("one = %d, want the kept 1", got)
	}
	table.Share([]byte("three"), 3) // evicts two, the least recently used
	if got := table.Share([]byte("two"), 20); got != 20 {
		t.Errorf("two = %d, want 20: it was evicted", got)
	}
	if got := table.Share([]byte("three"), 30); got != 3 { // two and three are kept, one evicted
		t.Errorf("three = %d, want the kept 3", got)
	}
	if n := table.order.Len(); n != 2 || len(table.entries) != 2 {
		t.Errorf("table keeps %d values (%d keys), want 2", n, len(table.entries))
	}
}
