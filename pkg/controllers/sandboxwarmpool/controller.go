// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandboxwarmpool is the SandboxWarmPool controller: it keeps spec.replicas Sandboxes made
// from the pool's template ready for claims to adopt, replaces members that are stale (under the
// Recreate strategy) or stuck not Ready, and reports the pool's status. It never takes over a
// Sandbox it did not make: an unowned Sandbox with the pool's labels is not a member.
//
// A member is a Sandbox in the pool's namespace labelled agents.x-k8s.io/warm-pool-sandbox with
// the hash of the pool's name and controlled by the pool. A claim that adopts a member strips the
// pool labels and takes the controller reference, which is what makes the pool replenish.
package sandboxwarmpool

import (
	"context"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	agentsinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/agents/v1beta1"
	extinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/extensions/v1beta1"
	extlisters "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/listers/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// Name is the name of this controller in --controllers, logs and metrics.
const Name = controllers.SandboxWarmPool

// FieldManager is the field manager of every write of this controller.
const FieldManager = "sandboxwarmpool-controller"

// Finalizer holds a deleted pool until the controller has deleted its members. The API server adds
// it on create when this controller runs.
const Finalizer = extensionsv1beta1.WarmPoolMembersFinalizer

// Indexes this controller adds to the shared informers, named after the package so that they do
// not clash with another controller's.
const (
	// poolsByTemplate indexes pools by namespace/spec.sandboxTemplateRef.name.
	poolsByTemplate = "sandboxwarmpool/" + extensionsv1beta1.TemplateRefField
	// sandboxesByPoolLabel indexes sandboxes by namespace/<warm-pool-sandbox label value>.
	sandboxesByPoolLabel = "sandboxwarmpool/" + extensionsv1beta1.WarmPoolSandboxLabel
	// sandboxesByPoolOwner indexes sandboxes controlled by a pool by namespace/<pool name>.
	sandboxesByPoolOwner = "sandboxwarmpool/controller"
)

var poolKind = extensionsv1beta1.SchemeGroupVersion.WithKind("SandboxWarmPool")

// Controller reconciles SandboxWarmPools.
type Controller struct {
	client       versioned.Interface
	loop         *controllers.WorkLoop
	synced       []cache.InformerSynced
	events       record.EventRecorder
	clock        clock.PassiveClock
	workers      int
	maxBatchSize int

	pools       extlisters.SandboxWarmPoolLister
	namespaces  corelisters.NamespaceLister
	poolIndex   cache.Indexer
	templates   extlisters.SandboxTemplateLister
	memberIndex cache.Indexer

	exp *expectations
	// requeueAfter brings a pool back after a delay (a member's readiness deadline, expectations
	// expiring); a field so that tests can see it.
	requeueAfter func(key string, d time.Duration)

	// missing holds the pools warned about a missing template, and which template, so that the
	// warning is recorded once rather than on every pass.
	missingMu sync.Mutex
	missing   map[string]string

	// adoptions holds, per pool, when claims started and last took members: refilling waits for
	// a burst of claims to pass (see refillWait).
	adoptionsMu sync.Mutex
	adoptions   map[string]adoptionBurst
}

// adoptionBurst is a run of claims taking members from one pool: when it started, when the last
// one came and how many came.
type adoptionBurst struct {
	first, last time.Time
	adoptions   int
}

const (
	// refillHold is how long after the last adoption a pool waits before making new members, so
	// that during a burst of claims the server serves the claims first and refills after.
	refillHold = time.Second
	// refillLead is how long the claims still to come must be covered by the pool's Ready members
	// for the refill to keep waiting: new members take seconds to be Ready while claims come, so
	// under a steady stream the pool refills before it runs dry instead of after the stream.
	refillLead = 5 * time.Second
	// refillSustain is how long claims must have kept coming before they count as a stream whose
	// low-water mark starts the refill. A burst shorter than that is served from the members
	// first: claims are cheap and new members are not, and members made during a burst of a
	// second or two are Ready only after it, so they would only slow it down.
	refillSustain = 3 * time.Second
)

// rate is the burst's claims per second so far, counted over at least a second so that its first
// few adoptions do not pass for a flood.
func (b adoptionBurst) rate() float64 {
	return float64(b.adoptions) / max(b.last.Sub(b.first), time.Second).Seconds()
}

// Config is what the controller needs from the process.
type Config struct {
	// Client reaches this server's API: pools, templates and their member Sandboxes.
	Client    versioned.Interface
	Pools     extinformers.SandboxWarmPoolInformer
	Templates extinformers.SandboxTemplateInformer
	Sandboxes agentsinformers.SandboxInformer
	// Namespaces tell a pool of an earlier namespace of the same name, for which nothing is made.
	Namespaces coreinformers.NamespaceInformer
	Events     record.EventRecorder
	Workers    int
	// MaxBatchSize caps the creates, and the deletes, of one pass over a pool; DefaultMaxBatchSize
	// when not positive.
	MaxBatchSize int
}

// New wires the controller to its informers and adds the indexes it needs to the pool and sandbox
// informers (any time before or after they start).
func New(c Config) (*Controller, error) {
	ctrl := &Controller{
		client:       c.Client,
		events:       c.Events,
		clock:        clock.RealClock{},
		workers:      max(c.Workers, 1),
		maxBatchSize: c.MaxBatchSize,
		adoptions:    map[string]adoptionBurst{},
		pools:        c.Pools.Lister(),
		namespaces:   c.Namespaces.Lister(),
		poolIndex:    c.Pools.Informer().GetIndexer(),
		templates:    c.Templates.Lister(),
		memberIndex:  c.Sandboxes.Informer().GetIndexer(),
		missing:      map[string]string{},
	}
	if ctrl.maxBatchSize <= 0 {
		ctrl.maxBatchSize = DefaultMaxBatchSize
	}
	ctrl.exp = newExpectations(ctrl.clock)
	ctrl.loop = controllers.NewWorkLoop(Name, ctrl.sync)
	ctrl.requeueAfter = ctrl.loop.Queue.AddAfter
	ctrl.synced = []cache.InformerSynced{
		c.Pools.Informer().HasSynced, c.Templates.Informer().HasSynced, c.Sandboxes.Informer().HasSynced, c.Namespaces.Informer().HasSynced,
	}

	if err := addIndexers(c.Pools.Informer(), cache.Indexers{poolsByTemplate: indexPoolByTemplate}); err != nil {
		return nil, err
	}
	if err := addIndexers(c.Sandboxes.Informer(), cache.Indexers{
		sandboxesByPoolLabel: indexSandboxByPoolLabel,
		sandboxesByPoolOwner: indexSandboxByPoolOwner,
	}); err != nil {
		return nil, err
	}

	if _, err := c.Pools.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.loop.Enqueue,
		UpdateFunc: func(_, obj any) { ctrl.loop.Enqueue(obj) },
		DeleteFunc: ctrl.deletePool,
	}); err != nil {
		return nil, err
	}
	if _, err := c.Templates.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.enqueuePoolsOfTemplate,
		UpdateFunc: func(_, obj any) { ctrl.enqueuePoolsOfTemplate(obj) },
		DeleteFunc: ctrl.enqueuePoolsOfTemplate,
	}); err != nil {
		return nil, err
	}
	if _, err := c.Sandboxes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    ctrl.addSandbox,
		UpdateFunc: ctrl.updateSandbox,
		DeleteFunc: ctrl.deleteSandbox,
	}); err != nil {
		return nil, err
	}
	return ctrl, nil
}

// Run reconciles until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	c.loop.Run(ctx, c.workers, c.synced...)
}

// addIndexers adds the indexers the informer does not have yet (a second controller built on the
// same informer, as after a lost and regained leader lease, finds them there).
func addIndexers(inf cache.SharedIndexInformer, indexers cache.Indexers) error {
	have := inf.GetIndexer().GetIndexers()
	missing := cache.Indexers{}
	for name, fn := range indexers {
		if _, ok := have[name]; !ok {
			missing[name] = fn
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return inf.AddIndexers(missing)
}

func indexPoolByTemplate(obj any) ([]string, error) {
	p, ok := obj.(*extensionsv1beta1.SandboxWarmPool)
	if !ok || p.Spec.TemplateRef.Name == "" {
		return nil, nil
	}
	return []string{p.Namespace + "/" + p.Spec.TemplateRef.Name}, nil
}

func indexSandboxByPoolLabel(obj any) ([]string, error) {
	sb, ok := obj.(*agentsv1beta1.Sandbox)
	if !ok {
		return nil, nil
	}
	if v, ok := sb.Labels[extensionsv1beta1.WarmPoolSandboxLabel]; ok {
		return []string{sb.Namespace + "/" + v}, nil
	}
	return nil, nil
}

func indexSandboxByPoolOwner(obj any) ([]string, error) {
	sb, ok := obj.(*agentsv1beta1.Sandbox)
	if !ok {
		return nil, nil
	}
	if ref := poolRef(sb); ref != nil {
		return []string{sb.Namespace + "/" + ref.Name}, nil
	}
	return nil, nil
}

// poolRef is the controller reference of a sandbox when a SandboxWarmPool controls it.
func poolRef(sb *agentsv1beta1.Sandbox) *metav1.OwnerReference {
	return objectmeta.ControllerOf(sb, poolKind.GroupKind())
}

// poolKeysOf returns the pools a sandbox event concerns: the pool that controls it or, for a
// sandbox without a controller, the pools of its namespace whose name hash its pool label carries
// (one, barring a hash collision). A sandbox controlled by anything else concerns no pool.
func (c *Controller) poolKeysOf(sb *agentsv1beta1.Sandbox) []string {
	if ref := poolRef(sb); ref != nil {
		return []string{sb.Namespace + "/" + ref.Name}
	}
	if metav1.GetControllerOfNoCopy(sb) != nil {
		return nil
	}
	hash, ok := sb.Labels[extensionsv1beta1.WarmPoolSandboxLabel]
	if !ok {
		return nil
	}
	pools, err := c.pools.SandboxWarmPools(sb.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, p := range pools {
		if objectmeta.NameHash(p.Name) == hash {
			keys = append(keys, p.Namespace+"/"+p.Name)
		}
	}
	return keys
}

func sandboxOf(obj any) *agentsv1beta1.Sandbox {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	sb, _ := obj.(*agentsv1beta1.Sandbox)
	return sb
}

// addSandbox observes a member the pool created (or one already deleting, seen for the first
// time) and queues the pools concerned.
func (c *Controller) addSandbox(obj any) {
	sb := sandboxOf(obj)
	if sb == nil {
		return
	}
	for _, key := range c.poolKeysOf(sb) {
		switch {
		case sb.DeletionTimestamp != nil:
			c.exp.deleted(key, sb.UID)
		case poolRef(sb) != nil:
			c.exp.created(key)
		}
		c.loop.Queue.Add(key)
	}
}

// updateSandbox queues the pools concerned before and after the change: a claim adopting a member
// takes it from its pool. A member marked for deletion counts as deleted for the expectations.
func (c *Controller) updateSandbox(oldObj, newObj any) {
	old, cur := sandboxOf(oldObj), sandboxOf(newObj)
	if old == nil || cur == nil || old.ResourceVersion == cur.ResourceVersion {
		return
	}
	keys := c.poolKeysOf(cur)
	for _, key := range c.poolKeysOf(old) {
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	if objectmeta.ControllerOf(cur, extensionsv1beta1.SchemeGroupVersion.WithKind("SandboxClaim").GroupKind()) != nil {
		for _, key := range c.poolKeysOf(old) {
			c.noteAdoption(key)
		}
	}
	for _, key := range keys {
		if cur.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
			c.exp.deleted(key, cur.UID)
		}
		c.loop.Queue.Add(key)
	}
}

// noteAdoption records that a claim just took a member of the pool.
func (c *Controller) noteAdoption(key string) {
	now := c.clock.Now()
	c.adoptionsMu.Lock()
	defer c.adoptionsMu.Unlock()
	b, ok := c.adoptions[key]
	if !ok {
		b.first = now
	}
	b.last = now
	b.adoptions++
	c.adoptions[key] = b
}

// refillWait is how long the pool, with ready Ready members, should still wait before refilling:
// until refillHold after the last adoption while it has members to serve claims from. Once the
// claims have kept coming for refillSustain, it waits only as long as its Ready members cover
// the claims the burst's rate brings over refillLead (its low-water mark); below that mark it
// refills at once, and the burst goes on being counted.
func (c *Controller) refillWait(key string, ready int) time.Duration {
	now := c.clock.Now()
	c.adoptionsMu.Lock()
	defer c.adoptionsMu.Unlock()
	b, ok := c.adoptions[key]
	if !ok {
		return 0
	}
	wait := b.last.Add(refillHold).Sub(now)
	if wait <= 0 {
		delete(c.adoptions, key)
		return 0
	}
	if ready == 0 {
		return 0
	}
	if b.last.Sub(b.first) >= refillSustain && float64(ready) < b.rate()*refillLead.Seconds() {
		return 0
	}
	return wait
}

func (c *Controller) deleteSandbox(obj any) {
	sb := sandboxOf(obj)
	if sb == nil {
		return
	}
	for _, key := range c.poolKeysOf(sb) {
		c.exp.deleted(key, sb.UID)
		c.loop.Queue.Add(key)
	}
}

func (c *Controller) deletePool(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.forget(key)
}

// enqueuePoolsOfTemplate queues every pool that refers to the template by name.
func (c *Controller) enqueuePoolsOfTemplate(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	pools, err := c.poolIndex.ByIndex(poolsByTemplate, key)
	if err != nil {
		return
	}
	for _, p := range pools {
		c.loop.Enqueue(p)
	}
}

// forget drops what the controller remembers about a pool that is gone.
func (c *Controller) forget(key string) {
	c.exp.forget(key)
	c.missingMu.Lock()
	delete(c.missing, key)
	c.missingMu.Unlock()
	c.adoptionsMu.Lock()
	delete(c.adoptions, key)
	c.adoptionsMu.Unlock()
}
