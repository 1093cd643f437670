// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// sync brings the children of one Sandbox to what its spec asks and writes its status when it
// changed. It is idempotent: every decision is taken from the cached state of the moment.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.sandboxes.Sandboxes(namespace).Get(name)
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
		// Left by an earlier namespace of this name (namespacecleanup deletes it), or in a
		// namespace being deleted: nothing is made for it.
		return nil
	}
	if !slices.Contains(cached.Finalizers, Finalizer) {
		// Created while this controller was off: take the finalizer now, then come back.
		return c.addFinalizer(ctx, cached)
	}

	sb := cached.DeepCopy()
	now := c.now()
	if expiry := sb.Spec.ShutdownTime; expiry != nil && !now.Before(expiry.Time) {
		return c.expire(ctx, sb, cached)
	}

	idleAt, idle := idleDeadline(sb)
	if idle && sb.Status.LastActivityTime == nil {
		// The clock starts now for a Sandbox never used through the proxy: a warm-pool member
		// just adopted by a claim, or one whose idle timeout was just set, has been Ready for
		// longer than it has been subject to the timeout.
		sb.Status.LastActivityTime = &metav1.Time{Time: now}
		idleAt = now.Add(sb.Spec.IdleTimeout.Duration)
	}
	if idle && !now.Before(idleAt) {
		out, err := c.suspendIdle(ctx, sb)
		if isConflictOrGone(err) {
			return nil
		}
		if err != nil {
			return err
		}
		// Carry on with the suspended Sandbox: its pod is deleted and its status written now.
		cached, sb = out, out.DeepCopy()
		markIdleSuspended(sb)
		idle = false
	}

	state, childErr := c.reconcileChildren(ctx, sb)
	c.computeStatus(sb, state, childErr)
	var statusErr error
	if wait := c.firstStatusWait(key, sb, cached, childErr, now); wait > 0 {
		c.loop.Queue.AddAfter(key, wait)
	} else {
		statusErr = c.writeStatus(ctx, sb, cached)
	}

	if expiry := sb.Spec.ShutdownTime; expiry != nil {
		c.loop.Queue.AddAfter(key, max(expiry.Sub(now), minExpiryRequeue))
	}
	if idle {
		// Activity moves the deadline later; each status write of it brings the Sandbox back
		// here, and this wake-up finds it either still idle or not yet due.
		c.loop.Queue.AddAfter(key, idleAt.Sub(now))
	}
	return errors.Join(childErr, statusErr)
}

// firstStatusWait holds back the first status of a new Sandbox for a moment while the pod the
// controller just created starts: a pod that is Ready within firstStatusDelay then costs one status
// write instead of two (not ready, then ready). Errors, suspension, readiness and anything but a
// starting pod are written at once; a slow pod gets its not-ready status when the delay is over.
func (c *Controller) firstStatusWait(key string, sb, cached *agentsv1beta1.Sandbox, childErr error, now time.Time) time.Duration {
	due, starting := c.podStarting.Load(key)
	if !starting {
		return 0
	}
	if len(cached.Status.Conditions) > 0 || childErr != nil || replicasOf(sb) == 0 ||
		meta.IsStatusConditionTrue(sb.Status.Conditions, string(agentsv1beta1.SandboxConditionReady)) {
		c.podStarting.Delete(key)
		return 0
	}
	if wait := due.(time.Time).Sub(now); wait > 0 {
		return wait
	}
	c.podStarting.Delete(key)
	return 0
}

// children is what reconcileChildren saw and left in place.
type children struct {
	pod     *corev1.Pod
	service *corev1.Service
}

// computeStatus derives replicas, selector, pod IPs and the three conditions from the children.
func (c *Controller) computeStatus(sb *agentsv1beta1.Sandbox, state children, childErr error) {
	st := &sb.Status
	st.Replicas, st.LabelSelector, st.PodIPs, st.NodeName = 0, "", nil, ""
	if p := state.pod; p != nil && p.DeletionTimestamp == nil {
		st.Replicas = 1
		st.LabelSelector = agentsv1beta1.SandboxUIDLabel + "=" + string(sb.UID)
		for _, ip := range p.Status.PodIPs {
			st.PodIPs = append(st.PodIPs, ip.IP)
		}
		st.NodeName = p.Spec.NodeName
	}
	if scheduled := podScheduledCondition(state.pod, sb.Generation); scheduled != nil {
		meta.SetStatusCondition(&st.Conditions, *scheduled)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, string(agentsv1beta1.SandboxConditionPodScheduled))
	}
	st.Service, st.ServiceFQDN = "", ""
	if svc := state.service; svc != nil {
		st.Service = svc.Name
		st.ServiceFQDN = svc.Name + "." + svc.Namespace + ".svc." + c.domain
	}
	for _, cond := range conditions(sb, state, childErr) {
		meta.SetStatusCondition(&st.Conditions, cond)
	}
	if replicasOf(sb) != 0 {
		meta.RemoveStatusCondition(&st.Conditions, string(agentsv1beta1.SandboxConditionSuspended))
	}
	if finishedCondition(state.pod) == nil {
		meta.RemoveStatusCondition(&st.Conditions, string(agentsv1beta1.SandboxConditionFinished))
	}
}

// conditions computes Ready, and Suspended and Finished where they apply, as the seeds define them.
func conditions(sb *agentsv1beta1.Sandbox, state children, childErr error) []metav1.Condition {
	gen := sb.Generation
	var out []metav1.Condition
	pod := state.pod
	if replicasOf(sb) == 0 {
		ready, suspended := agentsv1beta1.SuspendedConditions(gen)
		if pod != nil {
			ready.Message = "Sandbox is suspending"
			suspended.Status, suspended.Reason, suspended.Message = metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspendedPodNotTerminated, "Pod is terminating"
		}
		if wasIdleSuspended(sb) {
			ready.Reason = agentsv1beta1.SandboxReasonIdleSuspended
			ready.Message += idleSuspendedMessage
		}
		out = append(out, ready, suspended)
	} else {
		out = append(out, readyCondition(sb, state, childErr))
	}
	if f := finishedCondition(pod); f != nil {
		f.ObservedGeneration = gen
		out = append(out, *f)
	}
	return out
}

func readyCondition(sb *agentsv1beta1.Sandbox, state children, childErr error) metav1.Condition {
	cond := metav1.Condition{Type: string(agentsv1beta1.SandboxConditionReady), ObservedGeneration: sb.Generation}
	var conflict *objectmeta.OwnershipConflictError
	var forbidden *podForbiddenError
	switch {
	case errors.As(childErr, &conflict):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, agentsv1beta1.SandboxReasonOwnershipConflict, conflict.Error()
		return cond
	case errors.As(childErr, &forbidden):
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, agentsv1beta1.SandboxReasonPodCreationForbidden, forbidden.Error()
		return cond
	case childErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, agentsv1beta1.SandboxReasonReconcilerError, "Error seen: "+childErr.Error()
		return cond
	}
	podReady, podMsg := podReadiness(state.pod)
	// A Service is part of readiness when asked for, or, with spec.service unset, when one exists.
	svcRequired := state.service != nil
	if sb.Spec.Service != nil {
		svcRequired = *sb.Spec.Service
	}
	svcMsg := "Service is not required"
	switch {
	case svcRequired && state.service == nil:
		svcMsg = "Service does not exist"
	case state.service != nil:
		svcMsg = "Service exists"
	}
	if podReady && (!svcRequired || state.service != nil) {
		cond.Status, cond.Reason = metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady
	} else {
		cond.Status, cond.Reason = metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady
	}
	cond.Message = podMsg + "; " + svcMsg
	return cond
}

// podReadiness says whether the pod is Running, Ready and has an IP, and describes it.
func podReadiness(pod *corev1.Pod) (bool, string) {
	if pod == nil {
		return false, "Pod does not exist"
	}
	if pod.DeletionTimestamp != nil {
		return false, "Pod is terminating"
	}
	if pod.Status.Phase != corev1.PodRunning {
		return false, fmt.Sprintf("Pod is %s", phaseOf(pod))
	}
	ready := false
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	switch {
	case !ready:
		return false, "Pod is Running but not Ready"
	case len(pod.Status.PodIPs) == 0 && pod.Status.PodIP == "":
		return false, "Pod is Ready but has no IP yet"
	}
	return true, "Pod is Ready"
}

func phaseOf(pod *corev1.Pod) string {
	if pod.Status.Phase == "" {
		return string(corev1.PodPending)
	}
	return string(pod.Status.Phase)
}

// conditionReason is what a condition's reason must look like (metav1.Condition).
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// podScheduledCondition mirrors the PodScheduled condition of a live pod: its status, reason and
// message, and when it last changed. A reason is stood in for when the pod's has none (the
// scheduler sets none on success) or one a Sandbox condition cannot carry. nil when there is no live pod or it has no such condition.
func podScheduledCondition(pod *corev1.Pod, gen int64) *metav1.Condition {
	if pod == nil || pod.DeletionTimestamp != nil {
		return nil
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodScheduled {
			continue
		}
		cond := &metav1.Condition{Type: string(agentsv1beta1.SandboxConditionPodScheduled), Status: metav1.ConditionStatus(c.Status),
			Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime, ObservedGeneration: gen}
		if !conditionReason.MatchString(cond.Reason) {
			cond.Reason = agentsv1beta1.SandboxReasonPodNotScheduled
			if cond.Status == metav1.ConditionTrue {
				cond.Reason = agentsv1beta1.SandboxReasonPodScheduled
			}
		}
		return cond
	}
	return nil
}

// finishedCondition is Finished=True when the pod ended, nil while it runs or does not exist.
func finishedCondition(pod *corev1.Pod) *metav1.Condition {
	if pod == nil {
		return nil
	}
	cond := &metav1.Condition{Type: string(agentsv1beta1.SandboxConditionFinished), Status: metav1.ConditionTrue}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		cond.Reason, cond.Message = agentsv1beta1.SandboxReasonPodSucceeded, "Pod succeeded"
	case corev1.PodFailed:
		cond.Reason, cond.Message = agentsv1beta1.SandboxReasonPodFailed, "Pod failed"
		if pod.Status.Message != "" {
			cond.Message += ": " + pod.Status.Message
		}
	default:
		return nil
	}
	return cond
}

// writeStatus writes the status subresource only when it changed since the cached copy, and not
// again while the cache has yet to show this controller's write of the same status.
func (c *Controller) writeStatus(ctx context.Context, sb, cached *agentsv1beta1.Sandbox) error {
	if apiequality.Semantic.DeepEqual(sb.Status, cached.Status) || c.writtenStatus.Written(sb.UID, cached.ResourceVersion, sb.Status) {
		return nil
	}
	out, err := c.client.AgentsV1beta1().Sandboxes(sb.Namespace).UpdateStatus(ctx, sb, metav1.UpdateOptions{FieldManager: FieldManager})
	if err == nil {
		c.writtenStatus.Wrote(sb.UID, out.ResourceVersion, out.Status)
	}
	if apierrors.IsConflict(err) {
		// The cache is behind; the newer object is on its way and will be reconciled.
		klog.FromContext(ctx).V(4).Info("Status write conflicted, waiting for the newer object", "sandbox", klog.KObj(sb))
		return nil
	}
	return err
}

// addFinalizer makes a Sandbox wait for its children to be deleted before it goes.
func (c *Controller) addFinalizer(ctx context.Context, sb *agentsv1beta1.Sandbox) error {
	sb = sb.DeepCopy()
	sb.Finalizers = append(sb.Finalizers, Finalizer)
	_, err := c.client.AgentsV1beta1().Sandboxes(sb.Namespace).Update(ctx, sb, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// finalize deletes the children of a deleted Sandbox and lets it go once its pod is gone, so a
// foreground deletion of whatever owns the Sandbox ends only when the pod has terminated.
func (c *Controller) finalize(ctx context.Context, sb *agentsv1beta1.Sandbox) error {
	if !slices.Contains(sb.Finalizers, Finalizer) {
		return nil
	}
	podGone, err := c.deleteChildren(ctx, sb, true)
	if err != nil || !podGone {
		return err
	}
	sb = sb.DeepCopy()
	sb.Finalizers = slices.DeleteFunc(sb.Finalizers, func(f string) bool { return f == Finalizer })
	_, err = c.client.AgentsV1beta1().Sandboxes(sb.Namespace).Update(ctx, sb, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// expire handles a Sandbox past its shutdownTime in two passes, as the seeds do: the first marks
// it Ready=False SandboxExpired while the pod (and so its Finished condition) is still there; the
// second, started by that status write, deletes the pod and Service and then either deletes the
// Sandbox (Delete) or keeps it with its conditions (Retain).
func (c *Controller) expire(ctx context.Context, sb, cached *agentsv1beta1.Sandbox) error {
	expired := metav1.Condition{Type: string(agentsv1beta1.SandboxConditionReady), Status: metav1.ConditionFalse,
		Reason: agentsv1beta1.SandboxReasonExpired, Message: "Sandbox passed its shutdownTime", ObservedGeneration: sb.Generation}
	ready := meta.FindStatusCondition(cached.Status.Conditions, string(agentsv1beta1.SandboxConditionReady))
	if ready == nil || ready.Reason != agentsv1beta1.SandboxReasonExpired {
		pod, _ := c.ownedPod(sb)
		if f := finishedCondition(pod); f != nil {
			f.ObservedGeneration = sb.Generation
			meta.SetStatusCondition(&sb.Status.Conditions, *f)
		}
		meta.SetStatusCondition(&sb.Status.Conditions, expired)
		c.events.Event(sb, corev1.EventTypeNormal, "Expired", "Sandbox passed its shutdownTime; deleting its pod and service")
		return c.writeStatus(ctx, sb, cached)
	}

	if _, err := c.deleteChildren(ctx, sb, false); err != nil {
		return err
	}
	if policy := sb.Spec.ShutdownPolicy; policy != nil && *policy == agentsv1beta1.ShutdownPolicyDelete {
		err := c.client.AgentsV1beta1().Sandboxes(sb.Namespace).Delete(ctx, sb.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &sb.UID},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	conds := sb.Status.Conditions
	sb.Status = agentsv1beta1.SandboxStatus{Conditions: conds}
	meta.SetStatusCondition(&sb.Status.Conditions, expired)
	return c.writeStatus(ctx, sb, cached)
}

func replicasOf(sb *agentsv1beta1.Sandbox) int32 {
	if sb.Spec.Replicas == nil {
		return 1
	}
	return *sb.Spec.Replicas
}
