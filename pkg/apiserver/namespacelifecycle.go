// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"io"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// NamespaceLifecyclePluginName is the admission plugin that takes the place of the generic
// NamespaceLifecycle.
const NamespaceLifecyclePluginName = "SandboxNamespaceLifecycle"

// namespaceLifecycle is the generic NamespaceLifecycle admission with one exception: an object
// already being deleted may still be updated when its namespace no longer exists, so that its
// finalizers can be removed. The generic plugin refuses every update in a missing namespace, which
// leaves an object deleted there (by the namespacecleanup controller) Terminating forever; the
// cluster never meets that case because its namespace controller empties a namespace before it goes.
type namespaceLifecycle struct {
	*lifecycle.Lifecycle
}

// Admit defers to the generic plugin, then lets an update of a deleted object through.
func (l namespaceLifecycle) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	err := l.Lifecycle.Admit(ctx, a, o)
	if err == nil || a.GetOperation() != admission.Update || !apierrors.IsNotFound(err) {
		return err
	}
	if old, accessErr := meta.Accessor(a.GetOldObject()); accessErr == nil && old.GetDeletionTimestamp() != nil {
		return nil
	}
	return err
}

// UseNamespaceLifecycle registers namespaceLifecycle and runs it where the generic plugin ran,
// which stays registered (every registered plugin must be in the order) but off by default.
func UseNamespaceLifecycle(o *genericoptions.AdmissionOptions) {
	o.Plugins.Register(NamespaceLifecyclePluginName, func(io.Reader) (admission.Interface, error) {
		generic, err := lifecycle.NewLifecycle(sets.New(metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic))
		if err != nil {
			return nil, err
		}
		return namespaceLifecycle{generic}, nil
	})
	if i := slices.Index(o.RecommendedPluginOrder, lifecycle.PluginName); i >= 0 {
		o.RecommendedPluginOrder = slices.Insert(slices.Clone(o.RecommendedPluginOrder), i, NamespaceLifecyclePluginName)
	}
	o.DefaultOffPlugins = o.DefaultOffPlugins.Clone().Insert(lifecycle.PluginName)
}
