// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// NamespaceUID and its helpers tell whether an object of this server belongs to the namespace of its name
// that the cluster has now. Our objects live in our own etcd, so a namespace deleted and created
// again while the server was away finds our objects of the old one still there under the same
// name. The server records the namespace's UID on each object when it is created (the
// agents.x-k8s.io/namespace-uid annotation, kept on every update); an object whose recorded UID is
// not the namespace's is a leftover of the old namespace: never served, only cleaned up.

package objectmeta

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// NamespaceUID returns the namespace UID recorded on obj; empty for an object made before the server
// recorded it, whose namespace can only be told by name.
func NamespaceUID(obj metav1.Object) types.UID {
	return types.UID(obj.GetAnnotations()[agentsv1beta1.NamespaceUIDAnnotation])
}

// StaleNamespace says whether obj was made in an earlier namespace of the same name as ns.
func StaleNamespace(obj metav1.Object, ns *corev1.Namespace) bool {
	recorded := NamespaceUID(obj)
	return recorded != "" && recorded != ns.UID
}

// InInactiveNamespace says whether a controller should make nothing for obj: it was made in an earlier
// namespace of the same name (namespacecleanup deletes it), or its namespace is being deleted.
// The cluster refuses anything new in a terminating namespace and deletes obj with it, so a child
// made there only fails, and each failure used to be retried until the namespace was gone.
// Deleting obj's children (its finalizer) goes on as usual. An object whose namespace the cache
// does not hold yet is not known to be inactive.
func InInactiveNamespace(namespaces corelisters.NamespaceLister, obj metav1.Object) bool {
	ns, err := namespaces.Get(obj.GetNamespace())
	if err != nil {
		return false
	}
	return StaleNamespace(obj, ns) || ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating
}

// SameNamespace says whether a and b were made in the same namespace, as far as their records
// tell: it is false only when both record a namespace UID and the two differ.
func SameNamespace(a, b metav1.Object) bool {
	ua, ub := NamespaceUID(a), NamespaceUID(b)
	return ua == "" || ub == "" || ua == ub
}
