// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package manager

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/fastpath"
)

// DropManagedFields keeps managedFields out of the controllers' caches: no controller reads them,
// and they are often the largest part of an object's metadata. Updates sent from a cached object
// then carry no managedFields, which the API server takes as "unchanged".
//
// Warm pool members keep theirs, as the warm chooser's cache of them does (it has no transform):
// binding a claim at create time stores the adopted member, as cached, through the field manager
// in the same etcd transaction as the claim, and the field manager builds the new managedFields
// from the cached ones. Members are few (the pools' sizes), so what they cost is small.
//
// It only sets the object's own field: objects of our kinds share everything else with the
// server's watch cache (pkg/fastpath).
var DropManagedFields cache.TransformFunc = func(obj any) (any, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return obj, nil
	}
	if _, member := m.GetLabels()[extensionsv1beta1.WarmPoolSandboxLabel]; !member {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// trimForCache is DropManagedFields for objects decoded for the controllers alone, the cluster's
// kinds, whose parts held alike by many objects are then shared (pkg/fastpath).
var trimForCache cache.TransformFunc = func(obj any) (any, error) {
	obj, _ = DropManagedFields(obj)
	if o, ok := obj.(runtime.Object); ok {
		fastpath.ShareParts(o)
	}
	return obj, nil
}
