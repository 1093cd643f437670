// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package ownership

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
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

func TestConflict(t *testing.T) {
	cases := []struct {
		name      string
		refs      []metav1.OwnerReference
		wantOwner types.UID
		want      string
	}{
		{"controlled by another object", []metav1.OwnerReference{ref("other", "o", ptr.To(true))}, "other",
			`Pod "child" already exists and is controlled by Sandbox "o": it was not made for this object and is left as it is`},
		{"no controller", []metav1.OwnerReference{ref(parent, "p", nil)}, "",
			`Pod "child" already exists and has no controller: it was not made for this object and is left as it is`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Conflict("Pod", child(tc.refs...))
			var ce *ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("Conflict returned %T, want *ConflictError", err)
			}
			var owner types.UID
			if ce.Owner != nil {
				owner = ce.Owner.UID
			}
			if ce.Kind != "Pod" || ce.Name != "child" || owner != tc.wantOwner {
				t.Errorf("ConflictError = %+v", ce)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}
