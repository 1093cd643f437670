// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// idleDeadline is when a running Sandbox with an idle timeout is to be suspended: its idle timeout
// after the later of its last activity (status.lastActivityTime) and the moment it last became
// Ready. ok is false for
// a Sandbox that is not subject to it: no idle timeout, suspended, not Ready (the timeout counts
// from readiness, so a pod that never starts is not suspended for idleness), being deleted, or an
// unclaimed warm-pool member, which waits for a claim and has had no chance to be used.
func idleDeadline(sb *agentsv1beta1.Sandbox) (deadline time.Time, ok bool) {
	if sb.Spec.IdleTimeout == nil || replicasOf(sb) == 0 || sb.DeletionTimestamp != nil ||
		sb.Labels[extensionsv1beta1.WarmPoolSandboxLabel] != "" {
		return time.Time{}, false
	}
	ready := meta.FindStatusCondition(sb.Status.Conditions, string(agentsv1beta1.SandboxConditionReady))
	if ready == nil || ready.Status != metav1.ConditionTrue {
		return time.Time{}, false
	}
	since := ready.LastTransitionTime.Time
	if last := sb.Status.LastActivityTime; last != nil && last.After(since) {
		since = last.Time
	}
	return since.Add(sb.Spec.IdleTimeout.Duration), true
}

// suspendIdle suspends a Sandbox whose idle timeout has passed, as a user's suspend does (replicas
// 0, operatingMode Suspended; the PersistentVolumeClaims stay), and returns it as stored. The
// update carries the cached resourceVersion, so a wake or any other write since then makes it fail
// with a conflict and the newer object is looked at again instead.
func (c *Controller) suspendIdle(ctx context.Context, sb *agentsv1beta1.Sandbox) (*agentsv1beta1.Sandbox, error) {
	sb = sb.DeepCopy()
	sb.Spec.Replicas = ptr.To[int32](0)
	sb.Spec.OperatingMode = agentsv1beta1.OperatingModeSuspended
	out, err := c.client.AgentsV1beta1().Sandboxes(sb.Namespace).Update(ctx, sb, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, err
	}
	c.events.Eventf(out, corev1.EventTypeNormal, agentsv1beta1.SandboxReasonIdleSuspended,
		"No request through the proxy for %s (spec.idleTimeout); suspended, volumes kept", sb.Spec.IdleTimeout.Duration)
	return out, nil
}

// idleSuspendedMessage ends the Ready message of an idle-suspended Sandbox.
const idleSuspendedMessage = " after spec.idleTimeout without a request; the next request through the proxy resumes it"

// markIdleSuspended gives the Ready condition the reason that says why the Sandbox was suspended;
// conditions keeps that reason while the Sandbox stays suspended.
func markIdleSuspended(sb *agentsv1beta1.Sandbox) {
	meta.SetStatusCondition(&sb.Status.Conditions, metav1.Condition{Type: string(agentsv1beta1.SandboxConditionReady),
		Status: metav1.ConditionFalse, Reason: agentsv1beta1.SandboxReasonIdleSuspended, ObservedGeneration: sb.Generation,
		Message: "Sandbox is suspended" + idleSuspendedMessage})
}

// wasIdleSuspended reports whether the Sandbox's Ready condition says the idle timeout suspended it.
func wasIdleSuspended(sb *agentsv1beta1.Sandbox) bool {
	ready := meta.FindStatusCondition(sb.Status.Conditions, string(agentsv1beta1.SandboxConditionReady))
	return ready != nil && ready.Reason == agentsv1beta1.SandboxReasonIdleSuspended
}

// isConflictOrGone is the outcome of a write on a cached object that a newer one will settle.
func isConflictOrGone(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsNotFound(err)
}
