// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/adoption"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/tracecontext"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/warm"
)

const finalizer = extensionsv1beta1.ClaimSandboxFinalizer

// sync serves one claim: its sandbox while it lives, its lifecycle when it expires, and the
// cleanup when it is deleted. Status is written only when it changed.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.claims.SandboxClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cached.DeletionTimestamp != nil {
		return c.finalize(ctx, cached)
	}
	if objectmeta.InInactiveNamespace(c.namespaces, cached) {
		return nil // an earlier namespace's leftover, or its namespace is being deleted
	}
	if !slices.Contains(cached.Finalizers, finalizer) {
		return c.setFinalizer(ctx, cached, true)
	}

	claim := cached.DeepCopy()
	now := c.now()
	expired, _ := adoption.TimeLeft(now, claim)
	if expired && shutdownPolicy(claim) != extensionsv1beta1.ShutdownPolicyRetain {
		c.events.Event(claim, corev1.EventTypeNormal, "ClaimExpired", "Claim expired; deleting it and its sandbox")
		err := c.client.ExtensionsV1beta1().SandboxClaims(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &claim.UID}})
		return ignoreGone(err)
	}

	var sb *agentsv1beta1.Sandbox
	var syncErr error
	if expired {
		sb, syncErr = c.reconcileExpired(ctx, claim)
	} else {
		sb, syncErr = c.reconcileActive(ctx, claim)
	}
	if errors.Is(syncErr, errSandboxCacheBehind) {
		c.loop.Queue.AddAfter(key, sandboxCacheRetry)
		return nil
	}
	if syncErr == nil && !expired && envDeliveryReady(claim, sb) {
		if err := c.deliverEnv(ctx, claim, sb); err != nil {
			return err
		}
	}
	if want, ok := adoption.SandboxNameLabel(claim, sb, syncErr, expired); ok {
		if err := c.setSandboxNameLabel(ctx, claim, want); err != nil {
			// A conflict: the newer claim is on its way and brings this sync back.
			return ignoreGone(err)
		}
	}
	adoption.ComputeStatus(claim, sb, syncErr, expired)
	written, statusErr := c.writeStatus(ctx, claim, cached)
	if written && !meta.IsStatusConditionTrue(cached.Status.Conditions, sandboxReadyKey) && meta.IsStatusConditionTrue(claim.Status.Conditions, sandboxReadyKey) {
		// Observed once per claim: only the write that first made it Ready counts, the one that
		// takes its firstSight mark. A claim Ready again later (its pod restarted) has no mark left:
		// that is not a startup, and its age would be taken for one.
		if observedAt, first := c.firstObservedAt.LoadAndDelete(claim.UID); first {
			warm.ObserveReady(claim, sb, observedAt.(time.Time))
		}
	}

	if !expired {
		// Look again at expiry, counted with the Finished condition as just mirrored: it may have
		// started the TTL, or even ended it already.
		if expiredNow, left := adoption.TimeLeft(now, claim); expiredNow {
			c.loop.Queue.Add(key)
		} else if left > 0 {
			c.loop.Queue.AddAfter(key, left)
		}
	}

	var ce *adoption.ClaimError
	if errors.As(syncErr, &ce) && !ce.Retry {
		// Reported in the Ready condition; only a change of the claim or template can fix it.
		syncErr = nil
	}
	return errors.Join(syncErr, statusErr)
}

// reconcileActive finds or makes the claim's sandbox and keeps its pod metadata in line.
func (c *Controller) reconcileActive(ctx context.Context, claim *extensionsv1beta1.SandboxClaim) (*agentsv1beta1.Sandbox, error) {
	sb, err := c.findSandbox(ctx, claim)
	if err != nil {
		return nil, err
	}
	template, err := c.templates.SandboxTemplates(claim.Namespace).Get(claim.Spec.TemplateRef.Name)
	if apierrors.IsNotFound(err) {
		template, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if sb != nil {
		if sb.DeletionTimestamp != nil {
			return sb, nil
		}
		return c.syncPodMetadata(ctx, claim, template, sb)
	}
	if template != nil {
		if _, err := adoption.DesiredPodMetadata(claim, template, nil); err != nil {
			return nil, err
		}
	}
	// The sandbox goes on with the trace its claim's creator recorded.
	ctx, traceContext, span := tracecontext.Start(ctx, c.tracer, claim.Annotations, "SandboxClaim.provision")
	defer span.End()
	if policy := adoption.WarmPoolPolicy(claim); policy != extensionsv1beta1.WarmPoolPolicyNone && servableWarm(claim, template) {
		sb, err := c.adopt(ctx, claim, template, policy, traceContext)
		if sb != nil {
			adoption.MarkEnvPendingFor(claim, template, sb)
		}
		if sb != nil || err != nil {
			return sb, err
		}
	}
	if template == nil {
		return nil, adoption.TemplateNotFound(claim.Namespace, claim.Spec.TemplateRef.Name)
	}
	sb, err = c.createSandbox(ctx, claim, template, traceContext)
	if sb != nil {
		adoption.MarkEnvPendingFor(claim, template, sb)
	}
	return sb, err
}

// servableWarm says whether a warm member may serve the claim at all. Volume claim templates of
// the claim's own need a sandbox made for it (a member's volumes exist), and so does env for an
// init container (a member's ran before the claim) or after a member's delivery failed.
func servableWarm(claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate) bool {
	switch {
	case len(claim.Spec.VolumeClaimTemplates) > 0, adoption.WarmEnvDeliveryFailed(claim):
		return false
	case template != nil && adoption.EnvTargetsInitContainer(claim, &template.Spec.PodTemplate.Spec):
		return false
	}
	return true
}

// findSandbox looks for the claim's sandbox by its status, by the assignment label, by the
// controller index, then by the claim's own name; a sandbox found must be controlled by the claim.
// The two watches have no order between them, so a status naming a sandbox the cache does not
// yet show as the claim's is settled before anything new is made: by the sandbox cache once it has
// caught up with the claim, or else by the API.
func (c *Controller) findSandbox(ctx context.Context, claim *extensionsv1beta1.SandboxClaim) (*agentsv1beta1.Sandbox, error) {
	lister := c.sandboxes.Sandboxes(claim.Namespace)
	for _, name := range []string{claim.Status.SandboxStatus.Name, claim.Labels[extensionsv1beta1.ClaimSandboxNameLabel]} {
		if name == "" {
			continue
		}
		if sb, err := lister.Get(name); err == nil && metav1.IsControlledBy(sb, claim) {
			c.cacheWaitSince.Delete(claim.UID)
			return sb, nil
		}
		switch c.waitForSandboxCache(claim) {
		case cacheBehind:
			return nil, errSandboxCacheBehind
		case cacheCaughtUp:
			// The cache holds every sandbox write up to the claim's own, and so whatever the
			// claim's status or label was written after: the API would say the same.
			continue
		}
		live, err := c.client.AgentsV1beta1().Sandboxes(claim.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err == nil && metav1.IsControlledBy(live, claim) {
			return live, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	if owned := c.ownedSandboxes(claim.UID); len(owned) > 0 {
		return owned[0], nil
	}
	sb, err := lister.Get(claim.Name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !objectmeta.IsControlledBy(sb, claimKind.GroupKind(), claim.UID) {
		if adoption.PoolRef(sb) == nil {
			return nil, adoption.Refused("a Sandbox named %s exists and is not controlled by this claim", sb.Name)
		}
		// A warm member that happens to carry the claim's name: not ours, make no cold one either.
		return nil, adoption.Refused("a Sandbox named %s exists and belongs to a warm pool", sb.Name)
	}
	return sb, nil
}

// setSandboxNameLabel writes the claim's sandbox-name label (removes it when name is empty) and
// takes the written metadata into claim, so that its status write follows without a conflict.
func (c *Controller) setSandboxNameLabel(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, name string) error {
	labelled := claim.DeepCopy()
	labelled.Labels = adoption.WithSandboxNameLabel(labelled.Labels, name)
	out, err := c.client.ExtensionsV1beta1().SandboxClaims(claim.Namespace).Update(ctx, labelled, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return err
	}
	claim.ObjectMeta = out.ObjectMeta
	return nil
}

// errSandboxCacheBehind says the claim names a sandbox the cache does not show as the claim's,
// and the cache has not caught up with the claim: the write that made the sandbox the claim's, at
// or before the claim's own, is still on its way, and its event brings the claim back.
var errSandboxCacheBehind = errors.New("the sandbox cache is behind the claim")

// sandboxCacheRetry is how long a claim waits for the sandbox cache before the API is asked: a
// status written from an older view may name a sandbox that no event will bring back, and a
// quiet cache moves on only with the next sandbox write or bookmark.
const sandboxCacheRetry = time.Second

type sandboxCacheState int

const (
	cacheUnknown  sandboxCacheState = iota // ask the API
	cacheBehind                            // wait for the sandbox's event
	cacheCaughtUp                          // the cache's answer stands
)

// waitForSandboxCache tells how far the sandbox cache got against the claim's resourceVersion.
// It is unknown when claims and sandboxes are kept in different etcd clusters, whose
// resourceVersions do not compare, when the cache does not say how far it got, or when the claim
// has waited sandboxCacheRetry already.
func (c *Controller) waitForSandboxCache(claim *extensionsv1beta1.SandboxClaim) sandboxCacheState {
	if !c.sharedRevisions {
		return cacheUnknown
	}
	cmp, err := resourceversion.CompareResourceVersion(c.sandboxIndex.LastStoreSyncResourceVersion(), claim.ResourceVersion)
	switch {
	case err != nil:
		return cacheUnknown
	case cmp >= 0:
		c.cacheWaitSince.Delete(claim.UID)
		return cacheCaughtUp
	}
	now := c.now()
	since, _ := c.cacheWaitSince.LoadOrStore(claim.UID, now)
	if now.Sub(since.(time.Time)) < sandboxCacheRetry {
		return cacheBehind
	}
	c.cacheWaitSince.Delete(claim.UID)
	return cacheUnknown
}

// syncPodMetadata pushes the claim's pod metadata to its sandbox when it drifted.
func (c *Controller) syncPodMetadata(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate, sb *agentsv1beta1.Sandbox) (*agentsv1beta1.Sandbox, error) {
	want, err := adoption.DesiredPodMetadata(claim, template, &sb.Spec.PodTemplate.ObjectMeta)
	if err != nil {
		return sb, err
	}
	if apiequality.Semantic.DeepEqual(want, sb.Spec.PodTemplate.ObjectMeta) {
		return sb, nil
	}
	updated := sb.DeepCopy()
	updated.Spec.PodTemplate.ObjectMeta = want
	out, err := c.client.AgentsV1beta1().Sandboxes(sb.Namespace).Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return sb, err
	}
	return out, nil
}

// reconcileExpired deletes the sandbox of an expired claim kept under Retain.
func (c *Controller) reconcileExpired(ctx context.Context, claim *extensionsv1beta1.SandboxClaim) (*agentsv1beta1.Sandbox, error) {
	ready := meta.FindStatusCondition(claim.Status.Conditions, string(agentsv1beta1.SandboxConditionReady))
	if ready == nil || ready.Reason != extensionsv1beta1.ClaimReasonClaimExpired {
		c.events.Event(claim, corev1.EventTypeNormal, "ClaimExpired", "Claim expired; deleting its sandbox and keeping the claim")
	}
	sb, err := c.findSandbox(ctx, claim)
	if errors.Is(err, errSandboxCacheBehind) {
		return nil, err
	}
	if sb == nil || err != nil {
		return nil, nil
	}
	if sb.DeletionTimestamp == nil {
		err := c.client.AgentsV1beta1().Sandboxes(sb.Namespace).Delete(ctx, sb.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sb.UID}})
		if err := ignoreGone(err); err != nil {
			return sb, err
		}
	}
	return sb, nil
}

// finalize deletes the sandbox of a deleted claim. Under DeleteForeground (or a foreground
// deletion) the claim stays until the sandbox, and so its pod, are gone.
func (c *Controller) finalize(ctx context.Context, claim *extensionsv1beta1.SandboxClaim) error {
	if !slices.Contains(claim.Finalizers, finalizer) {
		return nil
	}
	c.firstObservedAt.Delete(claim.UID)
	owned := c.ownedSandboxes(claim.UID)
	if len(owned) == 0 {
		// Nothing collects our API's garbage: before letting the claim go, ask the API about the
		// sandboxes it may have that the cache has not shown yet.
		var err error
		if owned, err = c.liveOwnedSandboxes(ctx, claim); err != nil {
			return err
		}
	}
	for _, sb := range owned {
		if sb.DeletionTimestamp != nil {
			continue
		}
		err := c.client.AgentsV1beta1().Sandboxes(sb.Namespace).Delete(ctx, sb.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sb.UID}})
		if err := ignoreGone(err); err != nil {
			return err
		}
	}
	foreground := shutdownPolicy(claim) == extensionsv1beta1.ShutdownPolicyDeleteForeground ||
		slices.Contains(claim.Finalizers, metav1.FinalizerDeleteDependents)
	if foreground && len(owned) > 0 {
		return nil // the sandbox's deletion event brings the claim back here
	}
	return c.setFinalizer(ctx, claim, false)
}

// liveOwnedSandboxes reads from the API the sandboxes the claim may control: the one its status or
// assignment label names, and the one named after it.
func (c *Controller) liveOwnedSandboxes(ctx context.Context, claim *extensionsv1beta1.SandboxClaim) ([]*agentsv1beta1.Sandbox, error) {
	var out []*agentsv1beta1.Sandbox
	seen := map[string]bool{"": true}
	for _, name := range []string{claim.Status.SandboxStatus.Name, claim.Labels[extensionsv1beta1.ClaimSandboxNameLabel], claim.Name} {
		if seen[name] {
			continue
		}
		seen[name] = true
		sb, err := c.client.AgentsV1beta1().Sandboxes(claim.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if metav1.IsControlledBy(sb, claim) {
			out = append(out, sb)
		}
	}
	return out, nil
}

func (c *Controller) setFinalizer(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, present bool) error {
	claim = claim.DeepCopy()
	if present {
		claim.Finalizers = append(claim.Finalizers, finalizer)
	} else {
		claim.Finalizers = slices.DeleteFunc(claim.Finalizers, func(f string) bool { return f == finalizer })
	}
	_, err := c.client.ExtensionsV1beta1().SandboxClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{FieldManager: FieldManager})
	return ignoreGone(err)
}

// writeStatus writes the status subresource only when it changed since the cached copy, and not
// again while the cache has yet to show this controller's write of the same status.
func (c *Controller) writeStatus(ctx context.Context, claim, cached *extensionsv1beta1.SandboxClaim) (bool, error) {
	if apiequality.Semantic.DeepEqual(claim.Status, cached.Status) || c.writtenStatus.Written(claim.UID, cached.ResourceVersion, claim.Status) {
		return false, nil
	}
	out, err := c.client.ExtensionsV1beta1().SandboxClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{FieldManager: FieldManager})
	if err == nil {
		c.writtenStatus.Wrote(claim.UID, out.ResourceVersion, out.Status)
		return true, nil
	}
	// A conflict means the cache is behind; the newer claim is on its way and will be reconciled.
	return false, ignoreGone(err)
}

func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

func shutdownPolicy(claim *extensionsv1beta1.SandboxClaim) extensionsv1beta1.ShutdownPolicy {
	if lc := claim.Spec.Lifecycle; lc != nil && lc.ShutdownPolicy != nil {
		return *lc.ShutdownPolicy
	}
	return extensionsv1beta1.ShutdownPolicyRetain
}
