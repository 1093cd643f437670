// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package manager

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

func TestTrimForCache(t *testing.T) {
	fields := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	for _, tc := range []struct {
		name string
		obj  metav1.Object
		keep bool
	}{
		{name: "sandbox", obj: &agentsv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: fields}}},
		{name: "pod", obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: fields}}},
		{name: "warm pool member", keep: true, obj: &agentsv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: fields,
			Labels: map[string]string{extensionsv1beta1.WarmPoolSandboxLabel: "h"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := trimForCache(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			m := got.(metav1.Object)
			if kept := m.GetManagedFields() != nil; kept != tc.keep {
				t.Errorf("managedFields kept = %v, want %v", kept, tc.keep)
			}
			if m.GetName() != "a" {
				t.Errorf("name = %q, want the object's own", m.GetName())
			}
		})
	}
	// Tombstones and other non-objects pass unchanged.
	if got, err := trimForCache("x"); err != nil || got != "x" {
		t.Errorf("trimForCache(%q) = %v, %v", "x", got, err)
	}
}
