// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package ownership classifies a child object against the parent that wants it: controlled by that
// parent (drive it), or not (unowned or controlled by someone else: leave it exactly as it is). A
// controller never takes over an object it did not create: the controllers act with the server's
// rights, and an object of the wanted name may be anybody's.
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
	// Unowned: the child has no controller.
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

// ConflictError says that an object of the name a parent needs for a child exists and the parent
// does not control it.
type ConflictError struct {
	Kind, Name string
	// Owner is the object's controller, nil when it has none.
	Owner *metav1.OwnerReference
}

func (e *ConflictError) Error() string {
	who := "has no controller"
	if e.Owner != nil {
		who = fmt.Sprintf("is controlled by %s %q", e.Owner.Kind, e.Owner.Name)
	}
	return fmt.Sprintf("%s %q already exists and %s: it was not made for this object and is left as it is", e.Kind, e.Name, who)
}

// Conflict returns the error for an existing object of kind the parent does not control.
func Conflict(kind string, child metav1.Object) error {
	e := &ConflictError{Kind: kind, Name: child.GetName()}
	if ref := metav1.GetControllerOf(child); ref != nil {
		e.Owner = ref
	}
	return e
}
