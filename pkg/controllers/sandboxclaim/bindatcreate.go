// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/warmqueue"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/tracecontext"
)

// maxBindAttempts bounds the commits one create request tries in each bucket (Ready, then starting);
// after that the claim is stored unserved and this controller's sync goes on from there.
const maxBindAttempts = 4

// BindAtCreate serves a claim being created from a warm pool, so that it is stored already
// adopting its sandbox and Ready: one write and no round trip through this controller's queue.
// It picks candidates as adopt does and hands commit the claim with its status, the candidate as
// cached and the candidate rewritten as the claim's. commit stores the claim and the sandbox
// atomically, or answers a Conflict when the candidate is no longer the version cached, and then
// the next candidate is tried.
//
// It reports false, storing nothing, when the claim is not a plain warm claim (no pool allowed,
// env to inject, volume claim templates of its own, expired already, metadata the controller will refuse) or no candidate is left:
// the claim is then created as it is and reconciled as any other.
func (c *Controller) BindAtCreate(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, commit func(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, candidate, adopted *agentsv1beta1.Sandbox) error) (bool, error) {
	return c.chooser().BindAtCreate(ctx, claim, commit)
}

// cacheSyncWait bounds how long a claim's create waits for the chooser's caches to fill. They
// start with the process (a Standby's) or with the controllers, and the first list of a watch
// cache still initializing is answered "come back in a second": without the wait, the claims of
// that second, which a server already answering /readyz takes, are stored unserved and wait for
// the leader's controller instead of being Ready in their create response.
const cacheSyncWait = 5 * time.Second

// waitSynced reports whether w's caches are synced, waiting for them up to cacheSyncWait or
// until ctx is done.
func (w warmChooser) waitSynced(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, cacheSyncWait)
	defer cancel()
	return cache.WaitForCacheSync(ctx.Done(), w.synced...)
}

// BindAtCreate does what Controller.BindAtCreate says, from w's queue and caches: the claim
// controller's, or a Standby's.
func (w warmChooser) BindAtCreate(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, commit func(ctx context.Context, claim *extensionsv1beta1.SandboxClaim, candidate, adopted *agentsv1beta1.Sandbox) error) (bool, error) {
	start := w.now()
	if !w.waitSynced(ctx) {
		return false, nil
	}
	policy := warmPoolPolicy(claim)
	if policy == extensionsv1beta1.WarmPoolPolicyNone || len(claim.Spec.Env) > 0 || len(claim.Spec.VolumeClaimTemplates) > 0 {
		return false, nil
	}
	if expired, _ := timeLeft(start, claim); expired {
		return false, nil
	}
	template, err := w.templates.SandboxTemplates(claim.Namespace).Get(claim.Spec.TemplateRef.Name)
	switch {
	case apierrors.IsNotFound(err):
		template = nil
	case err != nil:
		return false, nil
	}
	if template != nil {
		if _, err := desiredPodMetadata(claim, template, nil); err != nil {
			return false, nil
		}
	}

	// A Ready member first: the claim is stored Ready with its sandbox, and its creator has a
	// running pod when the create returns. When none is left, the oldest member still starting,
	// as the controller's adopt would give it: the claim is stored bound to it, Ready=False, and
	// the controller marks it Ready with the pod. That spares such a claim the controller's
	// adoption, label and status writes (three writes more, in a row), which a drained pool under
	// a steady stream of claims paid for every claim.
	bucket, accept := w.bucket(claim, policy)
	logger := klog.FromContext(ctx)
	ctx, traceContext, span := tracecontext.Start(ctx, w.tracer, claim.Annotations, "SandboxClaim.bind")
	defer span.End()
	unmergeable := false
	try := func(key string, candidate *agentsv1beta1.Sandbox) (bool, error) {
		adopted, err := adoptedSandbox(claim, template, candidate, traceContext)
		if err != nil {
			unmergeable = true
			return false, err
		}
		served := claim.DeepCopy()
		computeStatus(served, adopted, nil, false)
		if name, ok := sandboxNameLabel(served, adopted, nil, false); ok {
			served.Labels = withSandboxNameLabel(served.Labels, name)
		}
		err = commit(ctx, served, candidate, adopted)
		if apierrors.IsConflict(err) {
			logger.V(4).Info("Warm candidate changed since cached", "claim", klog.KObj(claim), "sandbox", key)
			return true, nil
		}
		if err != nil {
			return false, err
		}
		w.recordAdoption(served, candidate, adopted)
		if meta.IsStatusConditionTrue(served.Status.Conditions, sandboxReadyKey) {
			observeReady(served, adopted, start)
		}
		return false, nil
	}
	for _, b := range []warmqueue.Bucket{bucket, bucket.StartingBucket()} {
		bound, err := w.offer(b, accept, maxBindAttempts, try)
		if unmergeable {
			// The claim's pod metadata does not merge with the member's: stored unbound, for the
			// controller to report.
			return false, nil
		}
		if bound || err != nil {
			return bound, err
		}
	}
	return false, nil
}
