// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// OwnershipOf classifies a child object against the parent that wants it: controlled by that
// parent (drive it), or not (unowned or controlled by someone else: leave it exactly as it is). A
// controller never takes over an object it did not create: the controllers act with the server's
// rights, and an object of the wanted name may be anybody's.

package objectmeta

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Ownership is the relation of a child to a parent.
type Ownership int

const (
	// Owned: the parent is the child's controller.
	Owned Ownership = iota
	// Unowned: the child has no controller.
	Unowned
	// OwnedByOther: another object controls the child.
	OwnedByOther
)

// OwnershipOf returns the relation of child to the parent of kind parentKind with the given UID.
func OwnershipOf(child metav1.Object, parentKind schema.GroupKind, parentUID types.UID) Ownership {
	switch ref := metav1.GetControllerOfNoCopy(child); {
	case ref == nil:
		return Unowned
	case sameObject(ref, parentKind, parentUID):
		return Owned
	default:
		return OwnedByOther
	}
}

// ControllerOf returns child's controller reference when it names an object of kind gk, nil
// otherwise. Group and kind are compared, never the version: a reference is to the same object
// under any version of its group, and one of another group (a bare "v1", a misspelled group) is
// not to our kinds at all, whatever its kind says.
func ControllerOf(child metav1.Object, gk schema.GroupKind) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(child)
	if ref == nil || !IsOwnerKind(ref, gk) {
		return nil
	}
	return ref
}

// IsControlledBy reports whether the object of kind gk with the given UID is child's controller:
// group, kind and UID compared together.
func IsControlledBy(child metav1.Object, gk schema.GroupKind, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(child)
	return ref != nil && sameObject(ref, gk, uid)
}

// IsOwnerKind reports whether ref names an object of kind gk, in any version of gk's group.
func IsOwnerKind(ref *metav1.OwnerReference, gk schema.GroupKind) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == gk.Group && ref.Kind == gk.Kind
}

func sameObject(ref *metav1.OwnerReference, gk schema.GroupKind, uid types.UID) bool {
	return ref.UID == uid && IsOwnerKind(ref, gk)
}

// OwnershipConflictError says that an object of the name a parent needs for a child exists and the parent
// does not control it.
type OwnershipConflictError struct {
	Kind, Name string
	// Owner is the object's controller, nil when it has none.
	Owner *metav1.OwnerReference
}

func (e *OwnershipConflictError) Error() string {
	who := "has no controller"
	if e.Owner != nil {
		who = fmt.Sprintf("is controlled by %s %q", e.Owner.Kind, e.Owner.Name)
	}
	return fmt.Sprintf("%s %q already exists and %s: it was not made for this object and is left as it is", e.Kind, e.Name, who)
}

// OwnershipConflict returns the error for an existing object of kind the parent does not control.
func OwnershipConflict(kind string, child metav1.Object) error {
	e := &OwnershipConflictError{Kind: kind, Name: child.GetName()}
	if ref := metav1.GetControllerOf(child); ref != nil {
		e.Owner = ref
	}
	return e
}
