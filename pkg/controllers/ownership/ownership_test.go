// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package ownership

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const parent = types.UID("parent-uid")

func ref(uid types.UID, name string, controller *bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: name, UID: uid, Controller: controller}
}

func child(refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "ns", OwnerReferences: refs}}
}

func TestOf(t *testing.T) {
	cases := []struct {
		name string
		refs []metav1.OwnerReference
		want State
	}{
		{"no owner references", nil, Unowned},
		{"non-controller reference to the parent", []metav1.OwnerReference{ref(parent, "p", nil)}, Unowned},
		{"controller=false reference to the parent", []metav1.OwnerReference{ref(parent, "p", ptr.To(false))}, Unowned},
		{"only non-controller references to others", []metav1.OwnerReference{ref("a", "a", nil), ref("b", "b", ptr.To(false))}, Unowned},
		{"the parent is the controller", []metav1.OwnerReference{ref(parent, "p", ptr.To(true))}, Owned},
		{"the parent is the controller among other owners", []metav1.OwnerReference{ref("a", "a", nil), ref(parent, "p", ptr.To(true))}, Owned},
		{"another object is the controller", []metav1.OwnerReference{ref("other", "o", ptr.To(true))}, OwnedByOther},
		{"another controller, the parent only an owner", []metav1.OwnerReference{ref(parent, "p", nil), ref("other", "o", ptr.To(true))}, OwnedByOther},
		{"same name, different UID (a recreated parent)", []metav1.OwnerReference{ref("old-uid", "p", ptr.To(true))}, OwnedByOther},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(child(tc.refs...), parent); got != tc.want {
				t.Errorf("Of = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAdopt(t *testing.T) {
	owner := ref(parent, "p", ptr.To(true))
	owner.BlockOwnerDeletion = ptr.To(true)
	plainA, plainB := ref("a", "a", nil), ref("b", "b", ptr.To(false))
	cases := []struct {
		name string
		refs []metav1.OwnerReference
		want []metav1.OwnerReference
	}{
		{"no references", nil, []metav1.OwnerReference{owner}},
		{"non-controller references are kept, after the controller", []metav1.OwnerReference{plainA, plainB},
			[]metav1.OwnerReference{owner, plainA, plainB}},
		{"a stale controller reference is replaced", []metav1.OwnerReference{plainA, ref("stale", "s", ptr.To(true))},
			[]metav1.OwnerReference{owner, plainA}},
		{"a non-controller reference to the parent itself is folded into the controller one",
			[]metav1.OwnerReference{ref(parent, "p", nil), plainA}, []metav1.OwnerReference{owner, plainA}},
		{"already adopted: unchanged", []metav1.OwnerReference{owner}, []metav1.OwnerReference{owner}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := child(tc.refs...)
			Adopt(c, owner)
			if !apiequality.Semantic.DeepEqual(c.OwnerReferences, tc.want) {
				t.Errorf("owner references = %+v, want %+v", c.OwnerReferences, tc.want)
			}
			if Of(c, parent) != Owned {
				t.Errorf("after Adopt, Of = %v, want Owned", Of(c, parent))
			}
		})
	}
}

func TestConflict(t *testing.T) {
	err := Conflict("Pod", child(ref("other", "o", ptr.To(true))))
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("Conflict returned %T, want *ConflictError", err)
	}
	if ce.Kind != "Pod" || ce.Name != "child" || ce.Owner.UID != "other" {
		t.Errorf("ConflictError = %+v", ce)
	}
	if got, want := err.Error(), `Pod "child" is controlled by Sandbox "o", refusing to use it`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
