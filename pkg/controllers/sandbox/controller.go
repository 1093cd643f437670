// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandbox is the Sandbox controller: it turns each Sandbox into its Pod, headless Service
// and PersistentVolumeClaims in the cluster and reports their state in the Sandbox's status.
package sandbox

import (
	"context"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	agentsinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/agents/v1beta1"
	agentslisters "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/listers/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// Name is the name of this controller in --controllers, logs and metrics.
const Name = controllers.Sandbox

// FieldManager is the field manager of every write of this controller.
const FieldManager = "sandbox-controller"

// Finalizer holds a deleted Sandbox until the controller has deleted its children. The API server
// adds it on create (no extra write) when this controller runs.
const Finalizer = agentsv1beta1.SandboxChildrenFinalizer

// minExpiryRequeue is the shortest wait before an expiry is looked at again.
const minExpiryRequeue = 2 * time.Second

// defaultFirstStatusDelay is how long the first status of a new Sandbox may wait for its pod to be
// Ready.
const defaultFirstStatusDelay = time.Second

var sandboxKind = agentsv1beta1.SchemeGroupVersion.WithKind("Sandbox")

// Controller reconciles Sandboxes.
type Controller struct {
	kube    kubernetes.Interface
	client  versioned.Interface
	loop    *controllers.WorkLoop
	synced  []cache.InformerSynced
	events  record.EventRecorder
	domain  string
	now     func() time.Time
	workers int
	// podStarting holds, per Sandbox key whose pod this controller just created, when its
	// held-back first status must be written at the latest.
	podStarting      sync.Map
	firstStatusDelay time.Duration
	writtenStatus    *controllers.WrittenStatus[agentsv1beta1.SandboxStatus]

	sandboxes  agentslisters.SandboxLister
	namespaces corelisters.NamespaceLister
	pods       corelisters.PodLister
	services   corelisters.ServiceLister
	pvcs       corelisters.PersistentVolumeClaimLister
}

// Config is what the controller needs from the process.
type Config struct {
	Kube          kubernetes.Interface
	Client        versioned.Interface
	Sandboxes     agentsinformers.SandboxInformer
	Namespaces    coreinformers.NamespaceInformer
	Pods          coreinformers.PodInformer
	Services      coreinformers.ServiceInformer
	PVCs          coreinformers.PersistentVolumeClaimInformer
	Events        record.EventRecorder
	ClusterDomain string
	Workers       int
}

// New wires the controller to its informers. The pod, service and claim informers only need to
// hold objects labelled with agents.x-k8s.io/sandbox-name-hash.
func New(c Config) (*Controller, error) {
	ctrl := &Controller{
		kube:    c.Kube,
		client:  c.Client,
		events:  c.Events,
		domain:  c.ClusterDomain,
		now:     time.Now,
		workers: c.Workers,
		// A variable so tests can turn it off.
		firstStatusDelay: defaultFirstStatusDelay,
		writtenStatus:    controllers.NewWrittenStatus(sameStatus),
		sandboxes:        c.Sandboxes.Lister(),
		namespaces:       c.Namespaces.Lister(),
		pods:             c.Pods.Lister(),
		services:         c.Services.Lister(),
		pvcs:             c.PVCs.Lister(),
	}
	ctrl.loop = controllers.NewWorkLoop(Name, ctrl.sync)
	ctrl.synced = []cache.InformerSynced{
		c.Sandboxes.Informer().HasSynced, c.Namespaces.Informer().HasSynced, c.Pods.Informer().HasSynced,
		c.Services.Informer().HasSynced, c.PVCs.Informer().HasSynced,
	}
	if _, err := c.Sandboxes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.loop.Enqueue,
		UpdateFunc: func(_, obj any) { ctrl.loop.Enqueue(obj) },
		DeleteFunc: func(obj any) {
			ctrl.writtenStatus.Forget(obj)
			ctrl.loop.Enqueue(obj)
		},
	}); err != nil {
		return nil, err
	}
	children := cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.enqueueOwner,
		UpdateFunc: func(_, obj any) { ctrl.enqueueOwner(obj) },
		DeleteFunc: ctrl.enqueueOwner,
	}
	for _, inf := range []cache.SharedIndexInformer{c.Pods.Informer(), c.Services.Informer(), c.PVCs.Informer()} {
		if _, err := inf.AddEventHandler(children); err != nil {
			return nil, err
		}
	}
	return ctrl, nil
}

// Run reconciles until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	c.loop.Run(ctx, c.workers, c.synced...)
}

// enqueueOwner queues the Sandbox that controls a child.
func (c *Controller) enqueueOwner(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	child, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	ref := objectmeta.ControllerOf(child, sandboxKind.GroupKind())
	if ref == nil {
		return
	}
	c.loop.Queue.Add(child.GetNamespace() + "/" + ref.Name)
}

// sameStatus compares two statuses but not the transition times of their conditions.
func sameStatus(a, b agentsv1beta1.SandboxStatus) bool {
	if !controllers.SameConditions(a.Conditions, b.Conditions) {
		return false
	}
	a.Conditions, b.Conditions = nil, nil
	return apiequality.Semantic.DeepEqual(a, b)
}
