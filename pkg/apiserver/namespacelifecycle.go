// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"io"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// NamespaceLifecyclePluginName is the admission plugin that takes the place of the generic
// NamespaceLifecycle.
const NamespaceLifecyclePluginName = "SandboxNamespaceLifecycle"

// namespaceLifecycle is the generic NamespaceLifecycle admission with two additions.
//
// An object already being deleted may still be updated when its namespace no longer exists, so
// that its finalizers can be removed. The generic plugin refuses every update in a missing
// namespace, which leaves an object deleted there (by the namespacecleanup controller) Terminating
// forever; the cluster never meets that case because its namespace controller empties a namespace
// before it goes.
//
// Every object gets, at create, the UID of the cluster namespace it is created in
// (agents.x-k8s.io/namespace-uid, whatever the request says), and keeps it on every update (a
// request cannot change or add it). Our objects outlive a namespace deleted while this server was
// away; the UID tells them from the objects of a new namespace of the same name
// (namespacecleanup deletes them, the controllers never serve them).
type namespaceLifecycle struct {
	*lifecycle.Lifecycle
	namespaces corelisters.NamespaceLister
	client     kubernetes.Interface
}

var (
	_ admission.MutationInterface                  = &namespaceLifecycle{}
	_ admission.InitializationValidator            = &namespaceLifecycle{}
	_ initializer.WantsExternalKubeInformerFactory = &namespaceLifecycle{}
	_ initializer.WantsExternalKubeClientSet       = &namespaceLifecycle{}
)

// SetExternalKubeInformerFactory gives both the generic plugin and this one the namespace cache.
func (l *namespaceLifecycle) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	l.Lifecycle.SetExternalKubeInformerFactory(f)
	l.namespaces = f.Core().V1().Namespaces().Lister()
}

// SetExternalKubeClientSet gives both the generic plugin and this one the cluster client.
func (l *namespaceLifecycle) SetExternalKubeClientSet(client kubernetes.Interface) {
	l.Lifecycle.SetExternalKubeClientSet(client)
	l.client = client
}

// ValidateInitialization checks that both have what they need.
func (l *namespaceLifecycle) ValidateInitialization() error {
	if l.namespaces == nil || l.client == nil {
		return errors.New("missing namespace lister or client")
	}
	return l.Lifecycle.ValidateInitialization()
}

// Admit defers to the generic plugin, lets an update of a deleted object through, and records or
// keeps the namespace UID.
func (l *namespaceLifecycle) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	err := l.Lifecycle.Admit(ctx, a, o)
	if err != nil && (a.GetOperation() != admission.Update || !apierrors.IsNotFound(err)) {
		return err
	}
	if err != nil {
		if old, accessErr := meta.Accessor(a.GetOldObject()); accessErr != nil || old.GetDeletionTimestamp() == nil {
			return err
		}
	}
	if a.GetNamespace() == "" {
		return nil
	}
	switch a.GetOperation() {
	case admission.Create:
		if a.GetSubresource() != "" {
			return nil
		}
		obj, accessErr := meta.Accessor(a.GetObject())
		if accessErr != nil {
			return nil
		}
		uid, err := l.namespaceUID(ctx, a.GetNamespace())
		if err != nil {
			return err
		}
		setNamespaceUID(obj, uid)
	case admission.Update:
		obj, accessErr := meta.Accessor(a.GetObject())
		old, oldErr := meta.Accessor(a.GetOldObject())
		if accessErr != nil || oldErr != nil {
			return nil
		}
		setNamespaceUID(obj, types.UID(old.GetAnnotations()[agentsv1beta1.NamespaceUIDAnnotation]))
	}
	return nil
}

// namespaceUID is the UID of the namespace, from the cache or, for one too new for it, the cluster.
func (l *namespaceLifecycle) namespaceUID(ctx context.Context, name string) (types.UID, error) {
	if ns, err := l.namespaces.Get(name); err == nil {
		return ns.UID, nil
	}
	ns, err := l.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return ns.UID, nil
}

// setNamespaceUID sets the namespace UID annotation of obj to uid, or removes it when uid is empty.
func setNamespaceUID(obj metav1.Object, uid types.UID) {
	annotations := obj.GetAnnotations()
	current, has := annotations[agentsv1beta1.NamespaceUIDAnnotation]
	switch {
	case uid == "" && !has, uid != "" && current == string(uid):
		return
	case uid == "":
		delete(annotations, agentsv1beta1.NamespaceUIDAnnotation)
	default:
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[agentsv1beta1.NamespaceUIDAnnotation] = string(uid)
	}
	obj.SetAnnotations(annotations)
}

// UseNamespaceLifecycle registers namespaceLifecycle and runs it where the generic plugin ran,
// which stays registered (every registered plugin must be in the order) but off by default.
func UseNamespaceLifecycle(o *genericoptions.AdmissionOptions) {
	o.Plugins.Register(NamespaceLifecyclePluginName, func(io.Reader) (admission.Interface, error) {
		generic, err := lifecycle.NewLifecycle(sets.New(metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic))
		if err != nil {
			return nil, err
		}
		return &namespaceLifecycle{Lifecycle: generic}, nil
	})
	if i := slices.Index(o.RecommendedPluginOrder, lifecycle.PluginName); i >= 0 {
		o.RecommendedPluginOrder = slices.Insert(slices.Clone(o.RecommendedPluginOrder), i, NamespaceLifecyclePluginName)
	}
	o.DefaultOffPlugins = o.DefaultOffPlugins.Clone().Insert(lifecycle.PluginName)
}
