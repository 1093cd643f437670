// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package warm chooses the warm-pool members claims adopt. One Chooser runs in every replica, for
// the process's lifetime, fed by its own caches of the members, templates and pools; the
// create-time binding in the registry and the claim controller both take their candidates from
// it, each writing the adoption its own way (one etcd transaction at create, an API update with
// the candidate's resourceVersion in the controller), so a member goes to one claim only.
package warm

import (
	"context"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/adoption"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	agentsinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/agents/v1beta1"
	extinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/extensions/v1beta1"
	agentslisters "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/listers/agents/v1beta1"
	extlisters "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/listers/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

var sandboxReadyKey = string(agentsv1beta1.SandboxConditionReady)

// Config is what a Chooser needs from the process.
type Config struct {
	// Sandboxes caches the warm-pool members (those with the WarmPoolSandboxLabel); a member
	// leaves it when a claim takes it.
	Sandboxes agentsinformers.SandboxInformer
	Templates extinformers.SandboxTemplateInformer
	// WarmPools tell which pool made a member: a claim takes only those.
	WarmPools extinformers.SandboxWarmPoolInformer
	// Events records the claims' SandboxAdopted events; nil records none.
	Events record.EventRecorder
	// Tracer records the spans of adoptions, children of the traces claims record; nil for none.
	Tracer trace.TracerProvider
	// Now is the clock claims' expiry and startup are measured by; nil for time.Now.
	Now func() time.Time
	// Spread makes the chooser start at a random one of the first few candidates rather than the
	// oldest, so that replicas choosing from the same members at once seldom try the same one.
	Spread bool
}

// Chooser picks the warm members claims adopt, from a Queue kept by its sandbox cache.
type Chooser struct {
	queue     *Queue
	templates extlisters.SandboxTemplateLister
	pools     extlisters.SandboxWarmPoolLister
	sandboxes agentslisters.SandboxLister
	synced    []cache.InformerSynced
	events    record.EventRecorder
	tracer    trace.TracerProvider
	spread    bool
	now       func() time.Time
}

// New wires a Chooser to its informers; call it before they start.
func New(c Config) (*Chooser, error) {
	tracer, now := c.Tracer, c.Now
	if tracer == nil {
		tracer = noop.NewTracerProvider()
	}
	if now == nil {
		now = time.Now
	}
	ch := &Chooser{
		queue:     NewQueue(),
		templates: c.Templates.Lister(),
		pools:     c.WarmPools.Lister(),
		sandboxes: c.Sandboxes.Lister(),
		events:    c.Events,
		tracer:    tracer,
		spread:    c.Spread,
		now:       now,
	}
	members, err := c.Sandboxes.Informer().AddEventHandler(ch)
	if err != nil {
		return nil, err
	}
	// The members' cache counts as synced once its members are queued.
	ch.synced = []cache.InformerSynced{c.Templates.Informer().HasSynced, c.WarmPools.Informer().HasSynced, members.HasSynced}
	return ch, nil
}

// OnAdd keeps a member in the queue while a claim may adopt it; the chooser is its sandbox
// informer's event handler.
func (c *Chooser) OnAdd(obj any, _ bool) {
	if sb, ok := obj.(*agentsv1beta1.Sandbox); ok {
		c.track(sb)
	}
}

// OnUpdate moves a member between buckets, or out of the queue, as it changes.
func (c *Chooser) OnUpdate(_, obj any) { c.OnAdd(obj, false) }

// OnDelete takes a deleted sandbox, or the tombstone of one, out of the queue.
func (c *Chooser) OnDelete(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if sb, ok := obj.(*agentsv1beta1.Sandbox); ok {
		c.queue.Remove(sb.Namespace + "/" + sb.Name)
	}
}

// Queue is the queue of members the chooser keeps.
func (c *Chooser) Queue() *Queue { return c.queue }

// Templates lists the templates the chooser caches.
func (c *Chooser) Templates() extlisters.SandboxTemplateLister { return c.templates }

// Tracer records the spans of adoptions.
func (c *Chooser) Tracer() trace.TracerProvider { return c.tracer }

// Now is the chooser's clock.
func (c *Chooser) Now() time.Time { return c.now() }

// HasSynced reports whether the chooser's caches are synced.
func (c *Chooser) HasSynced() bool {
	for _, synced := range c.synced {
		if !synced() {
			return false
		}
	}
	return true
}

// cacheSyncWait bounds how long a claim's create waits for the chooser's caches to fill. They
// start with the process, and the first list of a watch cache still initializing is answered
// "come back in a second": without the wait, the claims of that second, which a server already
// answering /readyz takes, are stored unserved and wait for the claim controller instead of being
// Ready in their create response.
const cacheSyncWait = 5 * time.Second

// WaitSynced reports whether the chooser's caches are synced, waiting for them up to
// cacheSyncWait or until ctx is done.
func (c *Chooser) WaitSynced(ctx context.Context) bool {
	if c.HasSynced() {
		return true // every create after the first second: no timer, no poll
	}
	ctx, cancel := context.WithTimeout(ctx, cacheSyncWait)
	defer cancel()
	return cache.WaitForCacheSync(ctx.Done(), c.synced...)
}

// track keeps sb in the queue while a claim may adopt it.
func (c *Chooser) track(sb *agentsv1beta1.Sandbox) {
	key := sb.Namespace + "/" + sb.Name
	if b, ok := adoptableBucket(sb); ok {
		c.queue.Add(b, key)
	} else {
		c.queue.Remove(key)
	}
}

// adoptableBucket says whether a claim may adopt sb and in which bucket it waits: a member of a
// warm pool, controlled by the pool its label names, not being deleted, in the Ready bucket or,
// while its pod is not Ready, the starting one. Labels alone are anybody's to copy; the chooser
// also checks the controller's UID against the pool (madeByPool).
func adoptableBucket(sb *agentsv1beta1.Sandbox) (Bucket, bool) {
	refHash := sb.Labels[extensionsv1beta1.SandboxTemplateRefHashLabel]
	if sb.DeletionTimestamp != nil || sb.Labels[extensionsv1beta1.WarmPoolSandboxLabel] == "" || refHash == "" {
		return Bucket{}, false
	}
	if ref := adoption.PoolRef(sb); ref == nil || objectmeta.NameHash(ref.Name) != sb.Labels[extensionsv1beta1.WarmPoolSandboxLabel] {
		return Bucket{}, false
	}
	return Bucket{Namespace: sb.Namespace, TemplateRefHash: refHash,
		Starting: !meta.IsStatusConditionTrue(sb.Status.Conditions, sandboxReadyKey)}, true
}

// Offer hands the claim's candidates to try, one at a time, until try takes one: the Ready
// members first, then those still starting, at most maxTries of each, counting only those try
// was called for (a stale key costs no write). try reports taken when someone else had the
// candidate first, and the next one is offered; when it fails otherwise, the candidate was not at
// fault and goes back to the queue for the next claim, and Offer returns the error. Offer reports
// whether try took a candidate.
//
// Candidates are the members of the claim's namespace (not an earlier one of the same name, by
// the namespace UIDs they record) and template and, under a named pool policy, of that pool. The
// template is checked on the pool that made the member, not only on its label (see madeByPool).
func (c *Chooser) Offer(claim *extensionsv1beta1.SandboxClaim, policy extensionsv1beta1.WarmPoolPolicy, maxTries int, try func(key string, candidate *agentsv1beta1.Sandbox) (taken bool, err error)) (bool, error) {
	bucket := Bucket{Namespace: claim.Namespace, TemplateRefHash: objectmeta.NameHash(claim.Spec.TemplateRef.Name)}
	poolHash := objectmeta.NameHash(string(policy))
	accept := func(key string) bool {
		_, name, _ := cache.SplitMetaNamespaceKey(key)
		sb, err := c.sandboxes.Sandboxes(claim.Namespace).Get(name)
		if err != nil {
			return true // gone since it was queued: next drops the key
		}
		// A member of another template's pool whose name hashes alike keeps its place, for that
		// template's claims.
		return objectmeta.SameNamespace(sb, claim) && !c.ofAnotherTemplate(sb, claim.Spec.TemplateRef.Name) &&
			(policy == extensionsv1beta1.WarmPoolPolicyDefault || sb.Labels[extensionsv1beta1.WarmPoolSandboxLabel] == poolHash)
	}
	for _, b := range []Bucket{bucket, bucket.StartingBucket()} {
		if took, err := c.offer(b, claim.Spec.TemplateRef.Name, accept, maxTries, try); took || err != nil {
			return took, err
		}
	}
	return false, nil
}

// offer is Offer in one bucket, for a claim of template.
func (c *Chooser) offer(bucket Bucket, template string, accept func(string) bool, maxTries int, try func(key string, candidate *agentsv1beta1.Sandbox) (bool, error)) (bool, error) {
	for tries := 0; tries < maxTries; {
		key, candidate, ok := c.next(bucket, template, accept)
		if !ok {
			return false, nil
		}
		if candidate == nil {
			continue // a stale key, dropped from the queue
		}
		tries++
		taken, err := try(key, candidate)
		switch {
		case taken:
			continue
		case err != nil:
			c.queue.Add(bucket, key)
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// spreadCandidates is how many of the oldest candidates a spreading chooser picks among.
const spreadCandidates = 8

// next pops the next warm sandbox of bucket; ok is false when the bucket is empty, and
// candidate nil when the popped key no longer names an adoptable member of the bucket made for
// template.
func (c *Chooser) next(bucket Bucket, template string, accept func(string) bool) (key string, candidate *agentsv1beta1.Sandbox, ok bool) {
	if c.spread {
		skip := rand.IntN(spreadCandidates)
		key, ok = c.queue.Pop(bucket, func(k string) bool {
			if skip > 0 {
				skip--
				return false
			}
			return accept(k)
		})
	}
	if !ok {
		key, ok = c.queue.Pop(bucket, accept)
	}
	if !ok {
		return "", nil, false
	}
	_, name, _ := cache.SplitMetaNamespaceKey(key)
	sb, err := c.sandboxes.Sandboxes(bucket.Namespace).Get(name)
	if err != nil {
		return key, nil, true // gone since it was queued
	}
	if b, ok := adoptableBucket(sb); !ok || b != bucket {
		// Changed since it was queued (the cache is ahead of the queue's handler).
		return key, nil, true
	}
	if !c.madeByPool(sb, template) {
		return key, nil, true
	}
	return key, sb, true
}

// madeByPool says whether the pool that controls sb, by its controller reference, is the pool of
// that name in the cache (same UID) and made sb from template: a claim is handed only a member the
// pool controller made for that pool, never a Sandbox someone dressed up as one, and only one made
// from the claim's own template. The member's template label is a 32-bit hash of the template's
// name, which the name of a template someone else made may share.
func (c *Chooser) madeByPool(sb *agentsv1beta1.Sandbox, template string) bool {
	pool := c.poolOf(sb)
	return pool != nil && memberTemplate(sb, pool) == template
}

// ofAnotherTemplate says whether sb was made by a pool, the one in the cache, from another
// template than template.
func (c *Chooser) ofAnotherTemplate(sb *agentsv1beta1.Sandbox, template string) bool {
	pool := c.poolOf(sb)
	return pool != nil && memberTemplate(sb, pool) != template
}

// memberTemplate is the template a pool's member was made from: the name its pool recorded on it
// (a mark only the controllers write), else the pool's. Not the pool's alone: a member kept after
// its pool moved to another template (OnReplenish) still serves claims of its own.
func memberTemplate(sb *agentsv1beta1.Sandbox, pool *extensionsv1beta1.SandboxWarmPool) string {
	if t := sb.Annotations[agentsv1beta1.SandboxTemplateRefAnnotation]; t != "" {
		return t
	}
	return pool.Spec.TemplateRef.Name
}

// poolOf returns the cached pool that controls sb (its name and UID), nil when there is none.
func (c *Chooser) poolOf(sb *agentsv1beta1.Sandbox) *extensionsv1beta1.SandboxWarmPool {
	ref := adoption.PoolRef(sb)
	if ref == nil {
		return nil
	}
	pool, err := c.pools.SandboxWarmPools(sb.Namespace).Get(ref.Name)
	if err != nil || pool.UID != ref.UID {
		return nil
	}
	return pool
}

// RecordAdoption emits the claim's SandboxAdopted event and counts a warm creation, with whether
// the member's pod was Ready then.
func (c *Chooser) RecordAdoption(claim *extensionsv1beta1.SandboxClaim, candidate, adopted *agentsv1beta1.Sandbox) {
	pool := ""
	if ref := adoption.PoolRef(candidate); ref != nil {
		pool = ref.Name
	}
	ready := meta.IsStatusConditionTrue(candidate.Status.Conditions, sandboxReadyKey)
	switch {
	case c.events == nil:
	case ready:
		c.events.Eventf(claim, corev1.EventTypeNormal, "SandboxAdopted", "Adopted warm sandbox %s from pool %s", adopted.Name, pool)
	default:
		c.events.Eventf(claim, corev1.EventTypeNormal, "SandboxAdopted", "Adopted warm sandbox %s from pool %s while its pod is still starting", adopted.Name, pool)
	}
	metrics.ClaimCreations.WithLabelValues(claim.Namespace, claim.Spec.TemplateRef.Name, metrics.LaunchWarm, pool, metrics.PodCondition(ready)).Inc()
}
