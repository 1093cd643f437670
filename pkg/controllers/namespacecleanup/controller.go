// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package namespacecleanup is the controller that deletes this server's objects left behind by a
// namespace that no longer exists in the cluster.
//
// The cluster's namespace controller deletes our objects with the rest of a namespace, but only
// when it can see our API at that moment. A namespace force-finalized while this server was away,
// or finished while the aggregator's discovery was stale, is gone with our objects still stored
// here. Nothing else would ever delete them, and the controllers would retry them forever: a
// claim's Sandbox, a pool's members and a Sandbox's Pod can never be created there again.
//
// Namespaces are matched by UID, not name: a namespace deleted and created again while the server
// was away is another namespace, perhaps another tenant's. Objects whose recorded namespace UID
// (see objectmeta.NamespaceUID) is not the UID of the namespace of their name are deleted one by one;
// the new namespace's own objects are not touched.
package namespacecleanup

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	agentsinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/agents/v1beta1"
	extinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// Name is the name of this controller in --controllers, logs and metrics.
const Name = controllers.NamespaceCleanup

// Controller deletes, per namespace gone from the cluster, every object of the four kinds in it.
// Its queue holds namespace names.
type Controller struct {
	kube       kubernetes.Interface
	loop       *controllers.WorkLoop
	synced     []cache.InformerSynced
	namespaces corelisters.NamespaceLister
	// kinds are the four kinds, each with its cache and how to delete all its objects in a
	// namespace.
	kinds []kind
}

type kind struct {
	resource string
	// objects is the kind's informer cache, indexed by namespace.
	objects  cache.Indexer
	deleteIn func(ctx context.Context, namespace string) error
	// deleteOne deletes exactly one object (UID precondition).
	deleteOne func(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

// Config is what the controller needs from the process.
type Config struct {
	// Kube reaches the cluster, whose namespaces decide.
	Kube kubernetes.Interface
	// Client reaches this server's API.
	Client     versioned.Interface
	Namespaces coreinformers.NamespaceInformer
	Sandboxes  agentsinformers.SandboxInformer
	Claims     extinformers.SandboxClaimInformer
	WarmPools  extinformers.SandboxWarmPoolInformer
	Templates  extinformers.SandboxTemplateInformer
}

// New wires the controller to its informers.
func New(c Config) (*Controller, error) {
	ctrl := &Controller{kube: c.Kube, namespaces: c.Namespaces.Lister()}
	ctrl.loop = controllers.NewWorkLoop(Name, ctrl.sync)
	// Claims and pools first: their finalizers delete the Sandboxes they own, which the last
	// deletion then finds already going.
	all := metav1.ListOptions{}
	ext, agents := c.Client.ExtensionsV1beta1(), c.Client.AgentsV1beta1()
	ctrl.kinds = []kind{
		{"sandboxclaims", c.Claims.Informer().GetIndexer(), func(ctx context.Context, ns string) error {
			return ext.SandboxClaims(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
		}, func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
			return ext.SandboxClaims(ns).Delete(ctx, name, opts)
		}},
		{"sandboxwarmpools", c.WarmPools.Informer().GetIndexer(), func(ctx context.Context, ns string) error {
			return ext.SandboxWarmPools(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
		}, func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
			return ext.SandboxWarmPools(ns).Delete(ctx, name, opts)
		}},
		{"sandboxtemplates", c.Templates.Informer().GetIndexer(), func(ctx context.Context, ns string) error {
			return ext.SandboxTemplates(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
		}, func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
			return ext.SandboxTemplates(ns).Delete(ctx, name, opts)
		}},
		{"sandboxes", c.Sandboxes.Informer().GetIndexer(), func(ctx context.Context, ns string) error {
			return agents.Sandboxes(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
		}, func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
			return agents.Sandboxes(ns).Delete(ctx, name, opts)
		}},
	}

	queueName := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			ctrl.loop.Queue.Add(key)
		}
	}
	// A namespace gone, or one (re)created: its name may hold objects of an older namespace.
	if _, err := c.Namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    queueName,
		DeleteFunc: queueName,
	}); err != nil {
		return nil, err
	}
	// An object of ours whose namespace the cache does not hold, or holds with another UID: on
	// start, the leftovers of a namespace deleted (and maybe created again) while no replica ran;
	// later, usually one in a namespace too new for the cache, which sync confirms with the API
	// before it deletes anything.
	ours := cache.ResourceEventHandlerFuncs{AddFunc: ctrl.checkNamespaceOf}
	ctrl.synced = []cache.InformerSynced{c.Namespaces.Informer().HasSynced}
	for _, inf := range []cache.SharedIndexInformer{c.Sandboxes.Informer(), c.Claims.Informer(), c.WarmPools.Informer(), c.Templates.Informer()} {
		if _, err := inf.AddEventHandler(ours); err != nil {
			return nil, err
		}
		ctrl.synced = append(ctrl.synced, inf.HasSynced)
	}
	return ctrl, nil
}

// Run reconciles until ctx is done. One worker is enough: a namespace is cleaned up once.
func (c *Controller) Run(ctx context.Context) {
	c.loop.Run(ctx, 1, c.synced...)
}

func (c *Controller) checkNamespaceOf(obj any) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	ns, err := c.namespaces.Get(o.GetNamespace())
	if apierrors.IsNotFound(err) || err == nil && objectmeta.StaleNamespace(o, ns) {
		c.loop.Queue.Add(o.GetNamespace())
	}
}

// sync deletes every object of ours in namespace when the cluster confirms the namespace is gone,
// and, when it has a namespace of that name, the objects recorded with another namespace UID. The
// controllers of each kind then run its finalizer as for any deletion.
func (c *Controller) sync(ctx context.Context, namespace string) error {
	if ns, err := c.namespaces.Get(namespace); err == nil && !c.holdsStale(ns) {
		return nil
	}
	// The cache may simply not have seen a new namespace yet: only the API's word deletes.
	live, err := c.kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return err
	}
	logger := klog.FromContext(ctx)
	var errs []error
	for _, k := range c.kinds {
		left, err := k.objects.ByIndex(cache.NamespaceIndex, namespace)
		if err != nil || len(left) == 0 {
			errs = append(errs, err)
			continue
		}
		if live == nil {
			logger.Info("Deleting objects left in a namespace the cluster no longer has", "namespace", namespace, "resource", k.resource, "count", len(left))
			if err := k.deleteIn(ctx, namespace); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		for _, obj := range left {
			o, ok := obj.(metav1.Object)
			if !ok || !objectmeta.StaleNamespace(o, live) || o.GetDeletionTimestamp() != nil {
				continue
			}
			logger.Info("Deleting an object left by an earlier namespace of the same name", "namespace", namespace, "resource", k.resource,
				"name", o.GetName(), "namespaceUID", objectmeta.NamespaceUID(o), "currentNamespaceUID", live.UID)
			uid := o.GetUID()
			err := k.deleteOne(ctx, namespace, o.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// holdsStale says whether the cache holds an object of ours in ns made in an earlier namespace of
// its name, not being deleted yet.
func (c *Controller) holdsStale(ns *corev1.Namespace) bool {
	for _, k := range c.kinds {
		left, _ := k.objects.ByIndex(cache.NamespaceIndex, ns.Name)
		for _, obj := range left {
			if o, ok := obj.(metav1.Object); ok && objectmeta.StaleNamespace(o, ns) && o.GetDeletionTimestamp() == nil {
				return true
			}
		}
	}
	return false
}
