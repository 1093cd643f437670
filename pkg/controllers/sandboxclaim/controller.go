// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandboxclaim is the SandboxClaim controller: it serves each claim with exactly one
// Sandbox, adopted from a warm pool when one fits and created from the claim's template otherwise,
// mirrors the Sandbox's state into the claim and enforces the claim's lifecycle.
package sandboxclaim

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	agentsinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/agents/v1beta1"
	extinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/extensions/v1beta1"
	agentslisters "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/listers/agents/v1beta1"
	extlisters "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/listers/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/warm"
)

// Name is the name of this controller in --controllers, logs and metrics.
const Name = controllers.SandboxClaim

// FieldManager is the field manager of every write of this controller.
const FieldManager = "sandboxclaim-controller"

const (
	// byTemplate indexes claims by namespace/template, so a new or changed template reaches the
	// claims waiting for it at once.
	byTemplate = "byTemplate"
	// byController indexes sandboxes by the UID of their controller, so a claim finds the sandbox
	// it adopted even before its status says so (after a crash between the two writes).
	byController = "byController"
)

var (
	claimKind       = extensionsv1beta1.SchemeGroupVersion.WithKind("SandboxClaim")
	sandboxReadyKey = string(agentsv1beta1.SandboxConditionReady)
)

// Controller reconciles SandboxClaims.
type Controller struct {
	client  versioned.Interface
	loop    *controllers.WorkLoop
	synced  []cache.InformerSynced
	events  record.EventRecorder
	now     func() time.Time
	workers int
	chooser *warm.Chooser
	tracer  trace.TracerProvider
	podExec PodExec

	claims          extlisters.SandboxClaimLister
	claimIndex      cache.Indexer
	templates       extlisters.SandboxTemplateLister
	namespaces      corelisters.NamespaceLister
	sandboxes       agentslisters.SandboxLister
	sandboxIndex    cache.Indexer
	sharedRevisions bool
	firstObservedAt sync.Map // claim UID -> time the controller first saw it, for latency metrics
	cacheWaitSince  sync.Map // claim UID -> time it started waiting for the sandbox cache
	writtenStatus   *controllers.WrittenStatus[extensionsv1beta1.SandboxClaimStatus]
}

// Config is what the controller needs from the process.
type Config struct {
	Client    versioned.Interface
	Claims    extinformers.SandboxClaimInformer
	Templates extinformers.SandboxTemplateInformer
	Sandboxes agentsinformers.SandboxInformer
	// Chooser picks the warm members claims adopt; the create-time binding takes its members from
	// the same one.
	Chooser *warm.Chooser
	// Namespaces tell a claim of an earlier namespace of the same name, which is not served.
	Namespaces coreinformers.NamespaceInformer
	Events     record.EventRecorder
	Workers    int
	// SharedRevisions says claims and sandboxes are kept in one etcd, so that their
	// resourceVersions compare and the sandbox cache can tell whether it has caught up with a
	// claim.
	SharedRevisions bool
	// Tracer records the spans of provisioning, children of the traces claims record; nil for
	// none (a claim's trace context still passes on to its sandbox).
	Tracer trace.TracerProvider
	// PodExec runs the templates' env deliveries in the sandboxes' pods; nil: every delivery
	// fails, saying so.
	PodExec PodExec
}

// New wires the controller to its informers; call it before the informers start.
func New(c Config) (*Controller, error) {
	tracer := c.Tracer
	if tracer == nil {
		tracer = noop.NewTracerProvider()
	}
	ctrl := &Controller{
		tracer:          tracer,
		client:          c.Client,
		events:          c.Events,
		now:             time.Now,
		workers:         c.Workers,
		chooser:         c.Chooser,
		podExec:         c.PodExec,
		claims:          c.Claims.Lister(),
		claimIndex:      c.Claims.Informer().GetIndexer(),
		templates:       c.Templates.Lister(),
		namespaces:      c.Namespaces.Lister(),
		sandboxes:       c.Sandboxes.Lister(),
		sandboxIndex:    c.Sandboxes.Informer().GetIndexer(),
		sharedRevisions: c.SharedRevisions,
		writtenStatus: controllers.NewWrittenStatus(func(a, b extensionsv1beta1.SandboxClaimStatus) bool {
			return apiequality.Semantic.DeepEqual(a.SandboxStatus, b.SandboxStatus) && controllers.SameConditions(a.Conditions, b.Conditions)
		}),
	}
	ctrl.loop = controllers.NewWorkLoop(Name, ctrl.sync)
	ctrl.synced = []cache.InformerSynced{c.Claims.Informer().HasSynced, c.Templates.Informer().HasSynced,
		c.Sandboxes.Informer().HasSynced, c.Namespaces.Informer().HasSynced, c.Chooser.HasSynced}

	if err := c.Claims.Informer().AddIndexers(cache.Indexers{byTemplate: func(obj any) ([]string, error) {
		claim := obj.(*extensionsv1beta1.SandboxClaim)
		return []string{claim.Namespace + "/" + claim.Spec.TemplateRef.Name}, nil
	}}); err != nil {
		return nil, err
	}
	if err := c.Sandboxes.Informer().AddIndexers(cache.Indexers{byController: func(obj any) ([]string, error) {
		if ref := metav1.GetControllerOfNoCopy(obj.(*agentsv1beta1.Sandbox)); ref != nil {
			return []string{string(ref.UID)}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}

	if _, err := c.Claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			ctrl.firstSight(obj.(*extensionsv1beta1.SandboxClaim))
			ctrl.loop.Enqueue(obj)
		},
		UpdateFunc: func(_, obj any) { ctrl.loop.Enqueue(obj) },
		DeleteFunc: func(obj any) {
			if claim, ok := obj.(*extensionsv1beta1.SandboxClaim); ok {
				ctrl.firstObservedAt.Delete(claim.UID)
				ctrl.cacheWaitSince.Delete(claim.UID)
			}
			ctrl.writtenStatus.Forget(obj)
			ctrl.loop.Enqueue(obj)
		},
	}); err != nil {
		return nil, err
	}
	if _, err := c.Templates.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.enqueueClaimsOfTemplate,
		UpdateFunc: func(_, obj any) { ctrl.enqueueClaimsOfTemplate(obj) },
	}); err != nil {
		return nil, err
	}
	if _, err := c.Sandboxes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.sandboxChanged,
		UpdateFunc: func(_, obj any) { ctrl.sandboxChanged(obj) },
		DeleteFunc: ctrl.sandboxDeleted,
	}); err != nil {
		return nil, err
	}
	return ctrl, nil
}

// firstSight marks a claim the controller sees for the first time and not yet Ready with the
// moment it saw it: that claim's startup is measured when it becomes Ready, once. A claim bound at
// create time is Ready from the start and measured by the binding; one Ready already when seen
// (after a restart or a handover) was measured by whoever made it Ready.
func (c *Controller) firstSight(claim *extensionsv1beta1.SandboxClaim) {
	if !meta.IsStatusConditionTrue(claim.Status.Conditions, sandboxReadyKey) {
		c.firstObservedAt.LoadOrStore(claim.UID, c.now())
	}
}

// Run reconciles until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	c.loop.Run(ctx, c.workers, c.synced...)
}

func (c *Controller) enqueueClaimsOfTemplate(obj any) {
	t, ok := obj.(*extensionsv1beta1.SandboxTemplate)
	if !ok {
		return
	}
	keys, err := c.claimIndex.IndexKeys(byTemplate, t.Namespace+"/"+t.Name)
	if err != nil {
		return
	}
	for _, k := range keys {
		c.loop.Queue.Add(k)
	}
}

// sandboxChanged wakes the claim that controls the sandbox.
func (c *Controller) sandboxChanged(obj any) {
	sb, ok := obj.(*agentsv1beta1.Sandbox)
	if !ok {
		return
	}
	if ref := objectmeta.ControllerOf(sb, claimKind.GroupKind()); ref != nil {
		c.loop.Queue.Add(sb.Namespace + "/" + ref.Name)
	}
}

func (c *Controller) sandboxDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	sb, ok := obj.(*agentsv1beta1.Sandbox)
	if !ok {
		return
	}
	if ref := objectmeta.ControllerOf(sb, claimKind.GroupKind()); ref != nil {
		c.loop.Queue.Add(sb.Namespace + "/" + ref.Name)
	}
}

// ownedSandboxes returns the sandboxes controlled by the claim with this UID: a controller
// reference of another kind that copies the claim's UID is not the claim's.
func (c *Controller) ownedSandboxes(uid types.UID) []*agentsv1beta1.Sandbox {
	objs, err := c.sandboxIndex.ByIndex(byController, string(uid))
	if err != nil {
		return nil
	}
	out := make([]*agentsv1beta1.Sandbox, 0, len(objs))
	for _, o := range objs {
		if sb := o.(*agentsv1beta1.Sandbox); objectmeta.IsControlledBy(sb, claimKind.GroupKind(), uid) {
			out = append(out, sb)
		}
	}
	return out
}
