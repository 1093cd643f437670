// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package ownership classifies a child object against the parent that wants it: owned by that
// parent (drive it), unowned (adopt it) or controlled by someone else (refuse to touch it).
package ownership

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// State is the relation of a child to a parent.
type State int

const (
	// Owned: the parent is the child's controller.
	Owned State = iota
	// Unowned: the child has no controller and may be adopted.
	Unowned
	// OwnedByOther: another object controls the child.
	OwnedByOther
)

// Of returns the relation of child to the parent with the given UID.
func Of(child metav1.Object, parentUID types.UID) State {
	ref := metav1.GetControllerOfNoCopy(child)
	switch {
	case ref == nil:
		return Unowned
	case ref.UID == parentUID:
		return Owned
	default:
		return OwnedByOther
	}
}

// ConflictError says that a child the parent needs is controlled by another object.
type ConflictError struct {
	Kind, Name string
	Owner      metav1.OwnerReference
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %q is controlled by %s %q, refusing to use it", e.Kind, e.Name, e.Owner.Kind, e.Owner.Name)
}

// Conflict returns the error for a child of kind controlled by another object.
func Conflict(kind string, child metav1.Object) error {
	e := &ConflictError{Kind: kind, Name: child.GetName()}
	if ref := metav1.GetControllerOfNoCopy(child); ref != nil {
		e.Owner = *ref
	}
	return e
}

// Adopt makes owner the controller of child, keeping any other (non-controller) owner references.
func Adopt(child metav1.Object, owner metav1.OwnerReference) {
	refs := []metav1.OwnerReference{owner}
	for _, r := range child.GetOwnerReferences() {
		if r.UID != owner.UID && (r.Controller == nil || !*r.Controller) {
			refs = append(refs, r)
		}
	}
	child.SetOwnerReferences(refs)
}
