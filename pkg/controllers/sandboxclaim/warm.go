// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/warmqueue"
	agentsinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/agents/v1beta1"
	extinformers "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions/extensions/v1beta1"
	agentslisters "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/listers/agents/v1beta1"
	extlisters "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/listers/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// warmChooser picks the warm members claims adopt, from a warm queue and the caches that feed
// it: the claim controller's, or a Standby's in a replica that does not run the controller.
type warmChooser struct {
	warm      *warmqueue.Queue
	templates extlisters.SandboxTemplateLister
	pools     extlisters.SandboxWarmPoolLister
	sandboxes agentslisters.SandboxLister
	synced    []cache.InformerSynced
	events    record.EventRecorder
	now       func() time.Time
	// spread makes next start at a random one of the first few candidates, so that replicas
	// choosing from the same members at once seldom try the same one.
	spread bool
	// tracer records the spans of adoptions, children of the traces claims record.
	tracer trace.TracerProvider
}

// chooser is the controller's warmChooser, on its current caches and clock.
func (c *Controller) chooser() warmChooser {
	return warmChooser{warm: c.warm, templates: c.templates, pools: c.pools, sandboxes: c.sandboxes, synced: c.synced, events: c.events, now: c.now, tracer: c.tracer}
}

// track keeps sb in the warm queue while a claim may adopt it.
func (w warmChooser) track(sb *agentsv1beta1.Sandbox) {
	key := sb.Namespace + "/" + sb.Name
	if b, ok := adoptableBucket(sb); ok {
		w.warm.Add(b, key)
	} else {
		w.warm.Remove(key)
	}
}

// untrack takes a deleted sandbox, or the tombstone of one, out of the warm queue and returns it
// (nil for anything else).
func (w warmChooser) untrack(obj any) *agentsv1beta1.Sandbox {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	sb, ok := obj.(*agentsv1beta1.Sandbox)
	if !ok {
		return nil
	}
	w.warm.Remove(sb.Namespace + "/" + sb.Name)
	return sb
}

// spreadCandidates is how many of the oldest candidates a spreading chooser picks among.
const spreadCandidates = 8

// bucket is where the claim's Ready candidates wait (its StartingBucket holds those still
// starting), and accept picks those made in the claim's namespace (not an earlier one of the same
// name, by the namespace UIDs they record) and, under a named pool policy, those of that pool.
func (w warmChooser) bucket(claim *extensionsv1beta1.SandboxClaim, policy extensionsv1beta1.WarmPoolPolicy) (warmqueue.Bucket, func(string) bool) {
	bucket := warmqueue.Bucket{Namespace: claim.Namespace, TemplateRefHash: objectmeta.NameHash(claim.Spec.TemplateRef.Name)}
	poolHash := objectmeta.NameHash(string(policy))
	return bucket, func(key string) bool {
		_, name, _ := splitKey(key)
		sb, err := w.sandboxes.Sandboxes(claim.Namespace).Get(name)
		if err != nil {
			return true // gone since it was queued: next drops the key
		}
		return objectmeta.SameNamespace(sb, claim) &&
			(policy == extensionsv1beta1.WarmPoolPolicyDefault || sb.Labels[extensionsv1beta1.WarmPoolSandboxLabel] == poolHash)
	}
}

// next pops the next warm sandbox of bucket; ok is false when the bucket is empty, and
// candidate nil when the popped key no longer names an adoptable member of the bucket.
func (w warmChooser) next(bucket warmqueue.Bucket, accept func(string) bool) (key string, candidate *agentsv1beta1.Sandbox, ok bool) {
	if w.spread {
		skip := rand.IntN(spreadCandidates)
		key, ok = w.warm.Pop(bucket, func(k string) bool {
			if skip > 0 {
				skip--
				return false
			}
			return accept == nil || accept(k)
		})
	}
	if !ok {
		key, ok = w.warm.Pop(bucket, accept)
	}
	if !ok {
		return "", nil, false
	}
	_, name, _ := splitKey(key)
	sb, err := w.sandboxes.Sandboxes(bucket.Namespace).Get(name)
	if err != nil {
		return key, nil, true // gone since it was queued
	}
	if b, ok := adoptableBucket(sb); !ok || b != bucket {
		// Changed since it was queued (the cache is ahead of the queue's handler).
		return key, nil, true
	}
	if !w.madeByPool(sb) {
		return key, nil, true
	}
	return key, sb, true
}

// madeByPool says whether the pool that controls sb, by its controller reference, is the pool of
// that name in the cache (same UID): a claim is handed only a member the pool controller made for
// that pool, never a Sandbox someone dressed up as one.
func (w warmChooser) madeByPool(sb *agentsv1beta1.Sandbox) bool {
	ref := poolRef(sb)
	if ref == nil {
		return false
	}
	pool, err := w.pools.SandboxWarmPools(sb.Namespace).Get(ref.Name)
	return err == nil && pool.UID == ref.UID
}

// offer hands the claim's candidates in bucket to try, one at a time, until try takes one: at most
// maxTries of them, counting only those try was called for (a stale key costs no write). try
// reports taken when someone else had the candidate first, and the next one is offered; when it
// fails otherwise, the candidate was not at fault and goes back to the queue for the next claim.
// offer reports whether try took a candidate.
func (w warmChooser) offer(bucket warmqueue.Bucket, accept func(string) bool, maxTries int, try func(key string, candidate *agentsv1beta1.Sandbox) (taken bool, err error)) (bool, error) {
	for tries := 0; tries < maxTries; {
		key, candidate, ok := w.next(bucket, accept)
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
			w.warm.Add(bucket, key)
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// recordAdoption emits the claim's SandboxAdopted event and counts a warm creation, with whether
// the member's pod was Ready then.
func (w warmChooser) recordAdoption(claim *extensionsv1beta1.SandboxClaim, candidate, adopted *agentsv1beta1.Sandbox) {
	pool := ""
	if ref := poolRef(candidate); ref != nil {
		pool = ref.Name
	}
	ready := meta.IsStatusConditionTrue(candidate.Status.Conditions, sandboxReadyKey)
	if ready {
		w.events.Eventf(claim, corev1.EventTypeNormal, "SandboxAdopted", "Adopted warm sandbox %s from pool %s", adopted.Name, pool)
	} else {
		w.events.Eventf(claim, corev1.EventTypeNormal, "SandboxAdopted", "Adopted warm sandbox %s from pool %s while its pod is still starting", adopted.Name, pool)
	}
	metrics.ClaimCreations.WithLabelValues(claim.Namespace, claim.Spec.TemplateRef.Name, metrics.LaunchWarm, pool, metrics.PodCondition(ready)).Inc()
}

// Standby binds claims at create time in a replica that does not run the claim controller (it
// is not the leader), from its own caches of warm-pool members and templates. Serving claims there
// too keeps them fast whichever replica their create reaches; the transaction the binding
// commits keeps a member to one claim across replicas.
type Standby struct {
	warmChooser
}

// StandbyConfig is what a Standby needs from the process.
type StandbyConfig struct {
	Sandboxes agentsinformers.SandboxInformer
	Templates extinformers.SandboxTemplateInformer
	WarmPools extinformers.SandboxWarmPoolInformer
	Events    record.EventRecorder
}

// NewStandby wires a Standby to its informers; call it before they start.
func NewStandby(c StandbyConfig) (*Standby, error) {
	s := &Standby{warmChooser{
		warm:      warmqueue.New(),
		templates: c.Templates.Lister(),
		pools:     c.WarmPools.Lister(),
		sandboxes: c.Sandboxes.Lister(),
		synced:    []cache.InformerSynced{c.Templates.Informer().HasSynced, c.WarmPools.Informer().HasSynced, c.Sandboxes.Informer().HasSynced},
		events:    c.Events,
		now:       time.Now,
		spread:    true,
		tracer:    noop.NewTracerProvider(),
	}}
	_, err := c.Sandboxes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if sb, ok := obj.(*agentsv1beta1.Sandbox); ok {
				s.track(sb)
			}
		},
		UpdateFunc: func(_, obj any) {
			if sb, ok := obj.(*agentsv1beta1.Sandbox); ok {
				s.track(sb)
			}
		},
		DeleteFunc: func(obj any) { s.untrack(obj) },
	})
	return s, err
}
