// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package objectmeta

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const parent = types.UID("parent-uid")

func ref(uid types.UID, name string, controller *bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: name, UID: uid, Controller: controller}
}

var sandboxKind = schema.GroupKind{Group: "agents.x-k8s.io", Kind: "Sandbox"}

func withAPIVersion(r metav1.OwnerReference, v string) metav1.OwnerReference {
	r.APIVersion = v
	return r
}

func withKind(r metav1.OwnerReference, k string) metav1.OwnerReference {
	r.Kind = k
	return r
}

func TestControllerOf(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		want             bool
	}{
		{"agents.x-k8s.io/v1beta1", "Sandbox", true},
		{"agents.x-k8s.io/v1alpha1", "Sandbox", true},
		{"agents.x-k8s.io/v9", "Sandbox", true},
		{"v1", "Sandbox", false},
		{"extensions.agents.x-k8s.io/v1beta1", "Sandbox", false},
		{"agents.x-k8s.io/v1beta1", "Pod", false},
		{"agents.x-k8s.io/a/b", "Sandbox", false},
	} {
		r := withKind(withAPIVersion(ref("u", "p", ptr.To(true)), tc.apiVersion), tc.kind)
		if got := ControllerOf(child(r), sandboxKind) != nil; got != tc.want {
			t.Errorf("ControllerOf(%s %s) found = %v, want %v", tc.apiVersion, tc.kind, got, tc.want)
		}
	}
}

func child(refs ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "ns", OwnerReferences: refs}}
}

func TestOf(t *testing.T) {
	cases := []struct {
		name string
		refs []metav1.OwnerReference
		want Ownership
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
		{"another version of the parent's group", []metav1.OwnerReference{withAPIVersion(ref(parent, "p", ptr.To(true)), "agents.x-k8s.io/v1alpha1")}, Owned},
		{"the parent's UID under a bare v1", []metav1.OwnerReference{withAPIVersion(ref(parent, "p", ptr.To(true)), "v1")}, OwnedByOther},
		{"the parent's UID under a misspelled group", []metav1.OwnerReference{withAPIVersion(ref(parent, "p", ptr.To(true)), "agent.x-k8s.io/v1beta1")}, OwnedByOther},
		{"the parent's UID under another kind", []metav1.OwnerReference{withKind(ref(parent, "p", ptr.To(true)), "SandboxClaim")}, OwnedByOther},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := child(tc.refs...)
			if got := OwnershipOf(c, sandboxKind, parent); got != tc.want {
				t.Errorf("OwnershipOf = %v, want %v", got, tc.want)
			}
			if got := IsControlledBy(c, sandboxKind, parent); got != (tc.want == Owned) {
				t.Errorf("IsControlledBy = %v, want %v", got, tc.want == Owned)
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
			err := OwnershipConflict("Pod", child(tc.refs...))
			var ce *OwnershipConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("OwnershipConflict returned %T, want *OwnershipConflictError", err)
			}
			var owner types.UID
			if ce.Owner != nil {
				owner = ce.Owner.UID
			}
			if ce.Kind != "Pod" || ce.Name != "child" || owner != tc.wantOwner {
				t.Errorf("OwnershipConflictError = %+v", ce)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}
