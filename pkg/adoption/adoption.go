// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package adoption derives what a SandboxClaim makes of its Sandbox: a warm member rewritten as
// the claim's, the pod metadata, environment and volumes a cold sandbox gets from the claim and
// its template, and the claim's status and sandbox-name label as its sandbox gives them. It is
// pure: it reads and writes no API and no cache, so the claim controller and the create-time
// binding in the registry derive a claim's adoption alike.
package adoption

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/tracecontext"
)

var (
	claimKind       = extensionsv1beta1.SchemeGroupVersion.WithKind("SandboxClaim")
	warmPoolKind    = extensionsv1beta1.SchemeGroupVersion.WithKind("SandboxWarmPool")
	sandboxReadyKey = string(agentsv1beta1.SandboxConditionReady)
)

// AdoptedSandbox is the warm member rewritten as the claim's sandbox: warm-pool labels off, the
// claim as its controller, its pod's name recorded, the claim's identity labels and merged pod
// metadata on, the claim's idle timeout, and the claim's trace context (when not empty).
func AdoptedSandbox(claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate, candidate *agentsv1beta1.Sandbox, traceContext string) (*agentsv1beta1.Sandbox, error) {
	sb := candidate.DeepCopy()
	meta, err := DesiredPodMetadata(claim, template, &sb.Spec.PodTemplate.ObjectMeta)
	if err != nil {
		return nil, err
	}
	sb.Spec.PodTemplate.ObjectMeta = meta
	if len(claim.Spec.Env) > 0 {
		// The values go into the sandbox's pod template: exec gets those its running pod lacks,
		// the template's envVarsDelivery hands them to its process, and a pod made again (after
		// a suspension) starts with them.
		if template == nil {
			return nil, Refused("the claim's spec.env needs its template %s, which does not exist", claim.Spec.TemplateRef.Name)
		}
		if err := InjectEnv(&sb.Spec.PodTemplate.Spec, claim.Spec.Env, template); err != nil {
			return nil, err
		}
	}
	sb.Labels = maps.Clone(sb.Labels)
	for _, k := range warmPoolOnlyLabels {
		delete(sb.Labels, k)
	}
	sb.Labels[extensionsv1beta1.SandboxIDLabel] = string(claim.UID)
	sb.Labels[extensionsv1beta1.SandboxTemplateRefHashLabel] = objectmeta.NameHash(claim.Spec.TemplateRef.Name)
	sb.OwnerReferences = []metav1.OwnerReference{ClaimRef(claim)}
	sb.Spec.IdleTimeout = IdleTimeout(claim, template, sb.Spec.IdleTimeout)
	if sb.Annotations == nil {
		sb.Annotations = map[string]string{}
	}
	if sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation] == "" {
		// The pod keeps the name it has; recording it also marks the sandbox as a warm launch.
		sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation] = sb.Name
	}
	SetTraceContext(sb, traceContext)
	return sb, nil
}

// ServedClaim is the claim as it is stored bound to the sandbox it adopted: its status mirrors
// the sandbox and its sandbox-name label names it. When its env is yet to be delivered (see
// NeedsEnvDelivery), it says so and is not Ready.
func ServedClaim(claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate, adopted *agentsv1beta1.Sandbox) *extensionsv1beta1.SandboxClaim {
	served := claim.DeepCopy()
	MarkEnvPendingFor(served, template, adopted)
	ComputeStatus(served, adopted, nil, false)
	if name, ok := SandboxNameLabel(served, adopted, nil, false); ok {
		served.Labels = WithSandboxNameLabel(served.Labels, name)
	}
	return served
}

// IdleTimeout is the claim's sandbox's: the claim's lifecycle.idleTimeout, else the template's,
// else (no template at hand) the one the sandbox has.
func IdleTimeout(claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate, has *metav1.Duration) *metav1.Duration {
	switch {
	case claim.Spec.Lifecycle != nil && claim.Spec.Lifecycle.IdleTimeout != nil:
		return &metav1.Duration{Duration: claim.Spec.Lifecycle.IdleTimeout.Duration}
	case template != nil:
		return template.Spec.IdleTimeout.DeepCopy()
	}
	return has
}

// SetTraceContext records the trace the sandbox was provisioned in, when there is one.
func SetTraceContext(sb *agentsv1beta1.Sandbox, traceContext string) {
	if traceContext == "" {
		return
	}
	if sb.Annotations == nil {
		sb.Annotations = map[string]string{}
	}
	sb.Annotations[tracecontext.Annotation] = traceContext
}

// ClaimRef is the controller reference a claim's sandbox carries.
func ClaimRef(claim *extensionsv1beta1.SandboxClaim) metav1.OwnerReference {
	return *metav1.NewControllerRef(claim, claimKind)
}

// PoolRef returns the controller reference of sb when it is a SandboxWarmPool, nil otherwise.
func PoolRef(sb *agentsv1beta1.Sandbox) *metav1.OwnerReference {
	return objectmeta.ControllerOf(sb, warmPoolKind.GroupKind())
}

// ComputeStatus sets the claim's sandbox reference, Ready and Finished from the sandbox, or from
// err (a ClaimError gives its reason) when the claim could not be served.
func ComputeStatus(claim *extensionsv1beta1.SandboxClaim, sb *agentsv1beta1.Sandbox, err error, expired bool) {
	st := &claim.Status
	st.SandboxStatus = extensionsv1beta1.SandboxStatus{}
	if sb != nil && !expired {
		st.SandboxStatus.Name = sb.Name
		st.SandboxStatus.PodIPs = slices.Clone(sb.Status.PodIPs)
	}
	ready := metav1.Condition{Type: string(agentsv1beta1.SandboxConditionReady), Status: metav1.ConditionFalse, ObservedGeneration: claim.Generation}
	var ce *ClaimError
	var sbReady *metav1.Condition
	if sb != nil {
		sbReady = meta.FindStatusCondition(sb.Status.Conditions, sandboxReadyKey)
	}
	env := envUndelivered(claim)
	switch {
	case errors.As(err, &ce):
		ready.Reason, ready.Message = ce.Reason, ce.Message
	case err != nil:
		ready.Reason, ready.Message = extensionsv1beta1.ClaimReasonReconcilerError, "Error seen: "+err.Error()
	case expired:
		ready.Reason, ready.Message = extensionsv1beta1.ClaimReasonClaimExpired, "Claim expired; sandbox cleanup initiated"
	case sb == nil:
		ready.Reason, ready.Message = extensionsv1beta1.ClaimReasonSandboxMissing, "The claim has no sandbox"
	case sbReady == nil:
		ready.Reason, ready.Message = extensionsv1beta1.ClaimReasonSandboxNotReady, "Sandbox "+sb.Name+" reports no readiness yet"
	case sbReady.Reason == agentsv1beta1.SandboxReasonExpired:
		ready.Reason, ready.Message = extensionsv1beta1.ClaimReasonSandboxExpired, sbReady.Message
	case sbReady.Status == metav1.ConditionTrue && env != nil:
		// Ready means delivered: a sandbox whose process lacks the claim's env is not yet the
		// claim's to use.
		ready.Reason, ready.Message = extensionsv1beta1.ClaimReasonEnvPending, env.Message
		if env.Reason == extensionsv1beta1.EnvReasonFailed {
			ready.Reason = extensionsv1beta1.ClaimReasonEnvFailed
		}
	default:
		ready.Status, ready.Reason, ready.Message = sbReady.Status, sbReady.Reason, sbReady.Message
	}
	meta.SetStatusCondition(&st.Conditions, ready)

	finishedType := string(agentsv1beta1.SandboxConditionFinished)
	switch {
	case sb != nil:
		if f := meta.FindStatusCondition(sb.Status.Conditions, finishedType); f != nil {
			mirrored := *f
			mirrored.ObservedGeneration = claim.Generation
			meta.SetStatusCondition(&st.Conditions, mirrored)
		} else {
			meta.RemoveStatusCondition(&st.Conditions, finishedType)
		}
	case !expired:
		meta.RemoveStatusCondition(&st.Conditions, finishedType)
	}
}

// SandboxNameLabel is the value the claim's sandbox-name label should have ("" for none) and
// whether it differs from the one it has: the name of the sandbox the claim controls while it is
// active, so that users can select a claim by its sandbox. A name longer than a label value may be
// is not recorded. After a failed sync the label is left as it is.
func SandboxNameLabel(claim *extensionsv1beta1.SandboxClaim, sb *agentsv1beta1.Sandbox, syncErr error, expired bool) (string, bool) {
	want := ""
	switch {
	case sb != nil && !expired && metav1.IsControlledBy(sb, claim):
		if len(validation.IsValidLabelValue(sb.Name)) == 0 {
			want = sb.Name
		}
	case syncErr != nil:
		return "", false
	}
	return want, claim.Labels[extensionsv1beta1.ClaimSandboxNameLabel] != want
}

// WithSandboxNameLabel returns a copy of labels with the sandbox-name label set to name, or
// removed when name is empty.
func WithSandboxNameLabel(labels map[string]string, name string) map[string]string {
	labels = maps.Clone(labels)
	if name == "" {
		delete(labels, extensionsv1beta1.ClaimSandboxNameLabel)
		return labels
	}
	if labels == nil {
		labels = map[string]string{}
	}
	labels[extensionsv1beta1.ClaimSandboxNameLabel] = name
	return labels
}

// WarmPoolPolicy is the claim's spec.warmpool, defaulted.
func WarmPoolPolicy(claim *extensionsv1beta1.SandboxClaim) extensionsv1beta1.WarmPoolPolicy {
	if claim.Spec.WarmPool == nil {
		return extensionsv1beta1.WarmPoolPolicyDefault
	}
	return *claim.Spec.WarmPool
}

// TimeLeft says whether the claim has expired and otherwise how long it has left (0: no expiry).
// It expires at shutdownTime or ttlSecondsAfterFinished after its mirrored Finished condition,
// whichever comes first.
func TimeLeft(now time.Time, claim *extensionsv1beta1.SandboxClaim) (bool, time.Duration) {
	lc := claim.Spec.Lifecycle
	if lc == nil {
		return false, 0
	}
	var at *time.Time
	if lc.ShutdownTime != nil {
		t := lc.ShutdownTime.Time
		at = &t
	}
	if lc.TTLSecondsAfterFinished != nil {
		if f := meta.FindStatusCondition(claim.Status.Conditions, string(agentsv1beta1.SandboxConditionFinished)); f != nil && f.Status == metav1.ConditionTrue {
			t := f.LastTransitionTime.Add(time.Duration(*lc.TTLSecondsAfterFinished) * time.Second)
			if at == nil || t.Before(*at) {
				at = &t
			}
		}
	}
	if at == nil {
		return false, 0
	}
	if !now.Before(*at) {
		return true, 0
	}
	return false, at.Sub(now)
}

// ClaimError is a failure to serve a claim, with the Ready reason it is reported under.
type ClaimError struct {
	Reason  string
	Message string
	// Retry says whether the controller should retry with backoff; false when only a change of
	// the claim or its template (which requeues the claim anyway) can fix it.
	Retry bool
}

func (e *ClaimError) Error() string { return e.Message }

// TemplateNotFound says the claim's template does not exist.
func TemplateNotFound(ns, name string) error {
	return &ClaimError{Reason: extensionsv1beta1.ClaimReasonTemplateNotFound, Message: fmt.Sprintf("SandboxTemplate %s/%s not found", ns, name)}
}

// InvalidMetadata says the claim's pod metadata cannot be merged with its template's.
func InvalidMetadata(format string, args ...any) error {
	return &ClaimError{Reason: extensionsv1beta1.ClaimReasonInvalidMetadata, Message: fmt.Sprintf(format, args...)}
}

// Refused says the claim asks for what its template or the cluster does not allow.
func Refused(format string, args ...any) error {
	return &ClaimError{Reason: extensionsv1beta1.ClaimReasonReconcilerError, Message: fmt.Sprintf(format, args...)}
}
