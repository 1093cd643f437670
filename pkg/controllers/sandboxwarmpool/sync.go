// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwarmpool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// Why a member is deleted, for the events.
const (
	whyStale   = "stale"
	whyStuck   = "not ready in time"
	whySurplus = "surplus"
	whyDeleted = "pool deleted"
)

// sync brings one pool to spec.replicas members and writes its status when it changed. It is
// idempotent; creates and deletes wait until the informer has seen the previous ones.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pool, err := c.pools.SandboxWarmPools(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	if pool.DeletionTimestamp != nil {
		return c.finalize(ctx, key, pool)
	}
	if objectmeta.InInactiveNamespace(c.namespaces, pool) {
		return nil // an earlier namespace's leftover, or its namespace is being deleted
	}
	if !slices.Contains(pool.Finalizers, Finalizer) {
		// Created while this controller was off: take the finalizer now, then come back.
		return c.addFinalizer(ctx, pool)
	}

	rev, err := c.revisionOf(pool)
	if err != nil {
		return err
	}
	c.noteTemplate(key, pool, rev != nil)
	members, err := c.members(pool)
	if err != nil {
		return err
	}

	p := classify(pool, members, rev)
	var errs []error
	if wait := p.sweepStuck(c.clock.Now(), readinessGracePeriod(pool)); wait > 0 {
		c.requeueAfter(key, wait)
	}
	if ok, wait := c.exp.satisfied(key); ok {
		errs = append(errs, c.manage(ctx, key, pool, rev, p))
	} else {
		// The events of the last writes bring the pool back; this is for the ones that never come.
		c.requeueAfter(key, wait)
	}
	errs = append(errs, c.writeStatus(ctx, pool, p.active))
	return errors.Join(errs...)
}

// revision is what the pool's template makes members from, worked out once per pass.
type revision struct {
	template *extensionsv1beta1.SandboxTemplate
	refHash  string
	podHash  string
}

// revisionOf returns the revision of the pool's template, nil when there is no such template.
func (c *Controller) revisionOf(pool *extensionsv1beta1.SandboxWarmPool) (*revision, error) {
	t, err := c.templates.SandboxTemplates(pool.Namespace).Get(pool.Spec.TemplateRef.Name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	podHash, err := controllers.PodTemplateHash(t)
	if err != nil {
		return nil, fmt.Errorf("hashing the pod template of SandboxTemplate %s/%s: %w", t.Namespace, t.Name, err)
	}
	return &revision{
		template: t,
		refHash:  objectmeta.NameHash(t.Name),
		podHash:  podHash,
	}, nil
}

// member is a new member of pool: the template's Sandbox, named by the server after the pool,
// labelled (and its pods labelled) with the pool, template and pod template revision, and
// controlled by the pool.
func (r *revision) member(pool *extensionsv1beta1.SandboxWarmPool) *agentsv1beta1.Sandbox {
	sb := controllers.NewSandboxFromTemplate(r.template)
	sb.GenerateName = pool.Name + "-"
	sb.Namespace = pool.Namespace
	sb.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pool, poolKind)}
	memberLabels := map[string]string{
		extensionsv1beta1.WarmPoolSandboxLabel:        objectmeta.NameHash(pool.Name),
		extensionsv1beta1.SandboxTemplateRefHashLabel: r.refHash,
		agentsv1beta1.SandboxPodTemplateHashLabel:     r.podHash,
	}
	maps.Copy(sb.Labels, memberLabels)
	maps.Copy(sb.Spec.PodTemplate.ObjectMeta.Labels, memberLabels)
	return sb
}

// stale says whether a member was made from another template or another revision of its pod
// template, as its labels record.
func (r *revision) stale(sb *agentsv1beta1.Sandbox) bool {
	return sb.Labels[extensionsv1beta1.SandboxTemplateRefHashLabel] != r.refHash ||
		sb.Labels[agentsv1beta1.SandboxPodTemplateHashLabel] != r.podHash
}

// members returns the sandboxes labelled as the pool's, whoever controls them.
func (c *Controller) members(pool *extensionsv1beta1.SandboxWarmPool) ([]*agentsv1beta1.Sandbox, error) {
	objs, err := c.memberIndex.ByIndex(sandboxesByPoolLabel, pool.Namespace+"/"+objectmeta.NameHash(pool.Name))
	if err != nil {
		return nil, err
	}
	out := make([]*agentsv1beta1.Sandbox, 0, len(objs))
	for _, o := range objs {
		if sb, ok := o.(*agentsv1beta1.Sandbox); ok {
			out = append(out, sb)
		}
	}
	return out, nil
}

// doomed is a member to delete and why.
type doomed struct {
	sb  *agentsv1beta1.Sandbox
	why string
}

// plan sorts a pool's labelled sandboxes.
type plan struct {
	// active members count toward spec.replicas and the status.
	active []*agentsv1beta1.Sandbox
	// condemned are deleted whatever the replica count.
	condemned []doomed
}

// classify sorts the labelled sandboxes of a pool:
//   - deleting ones, ones another object controls (a claim took them) and ones nobody controls
//     are left out: the pool counts, hands out and deletes only members it made itself, whatever
//     labels anybody else copied onto a Sandbox;
//   - members are active, except stale ones under the Recreate strategy, which are deleted. Under
//     OnReplenish (the default, and the fallback for unknown strategies) stale members stay active
//     until a claim adopts them or they are deleted, as the seeds' filterActiveSandboxes does:
//     the pool rolls forward only through replenishment.
func classify(pool *extensionsv1beta1.SandboxWarmPool, members []*agentsv1beta1.Sandbox, rev *revision) *plan {
	recreate := pool.Spec.UpdateStrategy != nil &&
		pool.Spec.UpdateStrategy.Type == extensionsv1beta1.RecreateSandboxWarmPoolUpdateStrategyType
	p := &plan{}
	for _, sb := range members {
		if sb.DeletionTimestamp != nil || objectmeta.OwnershipOf(sb, poolKind.GroupKind(), pool.UID) != objectmeta.Owned {
			continue
		}
		if recreate && rev != nil && rev.stale(sb) {
			p.condemned = append(p.condemned, doomed{sb, whyStale})
		} else {
			p.active = append(p.active, sb)
		}
	}
	return p
}

// readinessGracePeriod is how long a member of pool may stay not Ready after its creation: the
// pool's spec.readinessGracePeriodSeconds, five minutes when unset. It is read afresh on every
// pass and is no part of a member's revision, so changing it moves the deadlines of the members
// there are and makes none of them stale.
func readinessGracePeriod(pool *extensionsv1beta1.SandboxWarmPool) time.Duration {
	return time.Duration(ptr.Deref(pool.Spec.ReadinessGracePeriodSeconds, extensions.DefaultReadinessGracePeriodSeconds)) * time.Second
}

// sweepStuck condemns the active members that have not been Ready for grace since they were made,
// as the peer counts it (a member that was Ready once and is not any more is measured from its
// creation too), and returns how long until the next not-Ready member reaches its deadline (zero
// when none waits).
func (p *plan) sweepStuck(now time.Time, grace time.Duration) time.Duration {
	var next time.Duration
	active := make([]*agentsv1beta1.Sandbox, 0, len(p.active))
	for _, sb := range p.active {
		if ready(sb) {
			active = append(active, sb)
			continue
		}
		deadline := sb.CreationTimestamp.Add(grace)
		if !now.Before(deadline) {
			p.condemned = append(p.condemned, doomed{sb, whyStuck})
			continue
		}
		if d := deadline.Sub(now); next == 0 || d < next {
			next = d
		}
		active = append(active, sb)
	}
	p.active = active
	return next
}

func ready(sb *agentsv1beta1.Sandbox) bool {
	return meta.IsStatusConditionTrue(sb.Status.Conditions, string(agentsv1beta1.SandboxConditionReady))
}

// sortForDeletion orders surplus members: not Ready first, then the newest first, keeping the
// settled Ready members claims want most.
func sortForDeletion(list []*agentsv1beta1.Sandbox) {
	slices.SortStableFunc(list, func(a, b *agentsv1beta1.Sandbox) int {
		if ra, rb := ready(a), ready(b); ra != rb {
			if ra {
				return 1
			}
			return -1
		}
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// manage issues the creates and deletes that bring the pool to spec.replicas, at most
// maxBatchSize of each, after recording them as expected.
func (c *Controller) manage(ctx context.Context, key string, pool *extensionsv1beta1.SandboxWarmPool, rev *revision, p *plan) error {
	deletes := p.condemned
	diff := int(ptr.Deref(pool.Spec.Replicas, 1)) - len(p.active)
	if diff < 0 {
		surplus := slices.Clone(p.active)
		sortForDeletion(surplus)
		for _, sb := range surplus[:-diff] {
			deletes = append(deletes, doomed{sb, whySurplus})
		}
	}
	deletes = deletes[:min(len(deletes), c.maxBatchSize)]
	creates := 0
	if diff > 0 && rev != nil {
		creates = min(diff, c.maxBatchSize)
		if wait := c.refillWait(key, countReady(p.active)); wait > 0 {
			c.requeueAfter(key, wait)
			creates = 0
		}
	}
	if creates == 0 && len(deletes) == 0 {
		return nil
	}
	c.exp.expect(key, creates, uidsOf(deletes))
	return errors.Join(c.deleteMembers(ctx, key, pool, deletes), c.createMembers(ctx, key, pool, rev, creates))
}

// countReady is how many of members are Ready.
func countReady(members []*agentsv1beta1.Sandbox) int {
	n := 0
	for _, sb := range members {
		if ready(sb) {
			n++
		}
	}
	return n
}

func uidsOf(list []doomed) []types.UID {
	uids := make([]types.UID, len(list))
	for i, d := range list {
		uids[i] = d.sb.UID
	}
	return uids
}

// createMembers creates n members in slow-start batches.
func (c *Controller) createMembers(ctx context.Context, key string, pool *extensionsv1beta1.SandboxWarmPool, rev *revision, n int) error {
	if n == 0 {
		return nil
	}
	blueprint := rev.member(pool)
	sandboxes := c.client.AgentsV1beta1().Sandboxes(pool.Namespace)
	created, err := slowStart(n, func(int) error {
		_, err := sandboxes.Create(ctx, blueprint.DeepCopy(), metav1.CreateOptions{FieldManager: FieldManager})
		return err
	})
	// The informer will never show the creates that failed or were not tried.
	for range n - created {
		c.exp.created(key)
	}
	if created > 0 {
		c.events.Eventf(pool, corev1.EventTypeNormal, "MembersCreated", "Created %d of %d members", created, n)
	}
	if err != nil {
		c.events.Eventf(pool, corev1.EventTypeWarning, "FailedCreate", "Creating members: %v", err)
	}
	return err
}

// deleteMembers deletes members in slow-start batches. Each delete is conditional on the member's
// UID and resourceVersion: a member that changed since it was looked at (a claim adopted it) is
// not deleted; the change brings the pool back to look again.
func (c *Controller) deleteMembers(ctx context.Context, key string, pool *extensionsv1beta1.SandboxWarmPool, list []doomed) error {
	if len(list) == 0 {
		return nil
	}
	tried := make([]bool, len(list))
	deleted := make([]bool, len(list))
	var changed atomic.Bool
	sandboxes := c.client.AgentsV1beta1().Sandboxes(pool.Namespace)
	_, err := slowStart(len(list), func(i int) error {
		tried[i] = true
		sb := list[i].sb
		err := sandboxes.Delete(ctx, sb.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &sb.UID, ResourceVersion: &sb.ResourceVersion},
		})
		switch {
		case err == nil:
			deleted[i] = true
			return nil
		case apierrors.IsNotFound(err):
			// Already gone.
		case apierrors.IsConflict(err):
			changed.Store(true)
		default:
			c.exp.deleted(key, sb.UID)
			return err
		}
		c.exp.deleted(key, sb.UID)
		return nil
	})
	for i := range list {
		if !tried[i] {
			c.exp.deleted(key, list[i].sb.UID)
		}
	}
	if changed.Load() {
		klog.FromContext(ctx).V(2).Info("Members changed since they were listed; looking again", "pool", klog.KObj(pool))
		c.loop.Queue.Add(key)
	}
	if msg := deletionSummary(list, deleted); msg != "" {
		c.events.Event(pool, corev1.EventTypeNormal, "MembersDeleted", msg)
	}
	if err != nil {
		c.events.Eventf(pool, corev1.EventTypeWarning, "FailedDelete", "Deleting members: %v", err)
	}
	return err
}

// deletionSummary says how many members were deleted and why, e.g. "Deleted 3 members (2 surplus,
// 1 stale)"; empty when none was.
func deletionSummary(list []doomed, deleted []bool) string {
	counts := map[string]int{}
	var order []string
	total := 0
	for i, d := range list {
		if !deleted[i] {
			continue
		}
		if counts[d.why] == 0 {
			order = append(order, d.why)
		}
		counts[d.why]++
		total++
	}
	if total == 0 {
		return ""
	}
	parts := make([]string, len(order))
	for i, why := range order {
		parts[i] = fmt.Sprintf("%d %s", counts[why], why)
	}
	noun := "members"
	if total == 1 {
		noun = "member"
	}
	return fmt.Sprintf("Deleted %d %s (%s)", total, noun, strings.Join(parts, ", "))
}

// Selector is the label selector of a pool's members, as status.selector reports it.
func Selector(pool string) string {
	return extensionsv1beta1.WarmPoolSandboxLabel + "=" + objectmeta.NameHash(pool)
}

// writeStatus writes the status subresource only when it changed since the cached pool; the pool's
// generation is the one this pass acted on.
func (c *Controller) writeStatus(ctx context.Context, pool *extensionsv1beta1.SandboxWarmPool, active []*agentsv1beta1.Sandbox) error {
	st := extensionsv1beta1.SandboxWarmPoolStatus{ObservedGeneration: pool.Generation, Replicas: int32(len(active)),
		ReadyReplicas: int32(countReady(active)), Selector: Selector(pool.Name)}
	if apiequality.Semantic.DeepEqual(st, pool.Status) {
		return nil
	}
	pool = pool.DeepCopy()
	pool.Status = st
	_, err := c.client.ExtensionsV1beta1().SandboxWarmPools(pool.Namespace).UpdateStatus(ctx, pool, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// The cache is behind; the newer object is on its way and will be reconciled.
		return nil
	}
	return err
}

// noteTemplate records, once per pool and missing template, that the pool cannot make members.
func (c *Controller) noteTemplate(key string, pool *extensionsv1beta1.SandboxWarmPool, found bool) {
	name := pool.Spec.TemplateRef.Name
	c.missingMu.Lock()
	warned := c.missing[key] == name
	if found {
		delete(c.missing, key)
	} else {
		c.missing[key] = name
	}
	c.missingMu.Unlock()
	if !found && !warned {
		c.events.Eventf(pool, corev1.EventTypeWarning, "TemplateNotFound",
			"SandboxTemplate %q not found; no members are created until it exists", name)
	}
}

// addFinalizer makes a pool wait for its members to be deleted before it goes.
func (c *Controller) addFinalizer(ctx context.Context, pool *extensionsv1beta1.SandboxWarmPool) error {
	pool = pool.DeepCopy()
	pool.Finalizers = append(pool.Finalizers, Finalizer)
	_, err := c.client.ExtensionsV1beta1().SandboxWarmPools(pool.Namespace).Update(ctx, pool, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// finalize deletes the members of a deleted pool and lets the pool go once none is left in the
// cache, terminating ones included. It creates and adopts nothing. It waits for the expectations
// first: a member created a moment ago may not be cached yet.
func (c *Controller) finalize(ctx context.Context, key string, pool *extensionsv1beta1.SandboxWarmPool) error {
	if !slices.Contains(pool.Finalizers, Finalizer) {
		return nil
	}
	if ok, wait := c.exp.satisfied(key); !ok {
		c.requeueAfter(key, wait)
		return nil
	}
	objs, err := c.memberIndex.ByIndex(sandboxesByPoolOwner, key)
	if err != nil {
		return err
	}
	remaining := 0
	var live []doomed
	for _, o := range objs {
		sb, ok := o.(*agentsv1beta1.Sandbox)
		if !ok || objectmeta.OwnershipOf(sb, poolKind.GroupKind(), pool.UID) != objectmeta.Owned {
			continue
		}
		remaining++
		if sb.DeletionTimestamp == nil {
			live = append(live, doomed{sb, whyDeleted})
		}
	}
	if remaining == 0 {
		pool = pool.DeepCopy()
		pool.Finalizers = slices.DeleteFunc(pool.Finalizers, func(f string) bool { return f == Finalizer })
		_, err := c.client.ExtensionsV1beta1().SandboxWarmPools(pool.Namespace).Update(ctx, pool, metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	// Members still terminating bring the pool back with their delete events.
	live = live[:min(len(live), c.maxBatchSize)]
	if len(live) == 0 {
		return nil
	}
	c.exp.expect(key, 0, uidsOf(live))
	return c.deleteMembers(ctx, key, pool, live)
}
