// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package adoption

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// NeedsEnvDelivery says whether the claim's sandbox is the claim's only once its env reached the
// sandbox's process: the claim has env and its template says how to deliver it.
func NeedsEnvDelivery(claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate) bool {
	return len(claim.Spec.Env) > 0 && template != nil && template.Spec.EnvVarsDelivery != nil
}

// MarkEnvPending records on the claim that its env is yet to be delivered, keeping the reason of
// an earlier warm failure (which keeps the claim away from warm pools).
func MarkEnvPending(claim *extensionsv1beta1.SandboxClaim, message string) {
	if WarmEnvDeliveryFailed(claim) {
		return
	}
	SetEnvDelivered(claim, metav1.ConditionFalse, extensionsv1beta1.EnvReasonPending, message)
}

// MarkEnvPendingFor marks the claim's env as yet to be delivered to sb, just made or adopted for
// it, when the template says how to deliver it.
func MarkEnvPendingFor(claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate, sb *agentsv1beta1.Sandbox) {
	if NeedsEnvDelivery(claim, template) {
		MarkEnvPending(claim, "Waiting for sandbox "+sb.Name+" to be Ready")
	}
}

// SetEnvDelivered sets the claim's EnvDelivered condition.
func SetEnvDelivered(claim *extensionsv1beta1.SandboxClaim, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{
		Type: extensionsv1beta1.ClaimConditionEnvDelivered, Status: status, Reason: reason, Message: message,
		ObservedGeneration: claim.Generation,
	})
}

// envUndelivered is the claim's EnvDelivered condition while it is not True, nil otherwise.
func envUndelivered(claim *extensionsv1beta1.SandboxClaim) *metav1.Condition {
	c := meta.FindStatusCondition(claim.Status.Conditions, extensionsv1beta1.ClaimConditionEnvDelivered)
	if c == nil || c.Status == metav1.ConditionTrue {
		return nil
	}
	return c
}

// EnvDeliveryDue says whether the claim's env is still to be delivered to its sandbox.
func EnvDeliveryDue(claim *extensionsv1beta1.SandboxClaim) bool {
	c := envUndelivered(claim)
	return c != nil && c.Reason != extensionsv1beta1.EnvReasonFailed
}

// WarmEnvDeliveryFailed says whether a warm member's delivery failed for this claim: the claim is
// then served only by a sandbox made for it, never by another member.
func WarmEnvDeliveryFailed(claim *extensionsv1beta1.SandboxClaim) bool {
	c := envUndelivered(claim)
	return c != nil && c.Reason == extensionsv1beta1.EnvReasonWarmFailed
}

// EnvTargetsInitContainer says whether some of the claim's env goes to an init container of
// spec: a warm member's init containers ran before the claim existed, so only a sandbox made for
// the claim can give them the values.
func EnvTargetsInitContainer(claim *extensionsv1beta1.SandboxClaim, spec *corev1.PodSpec) bool {
	for _, e := range claim.Spec.Env {
		for _, c := range spec.InitContainers {
			if e.ContainerName == c.Name {
				return true
			}
		}
	}
	return false
}

// ClaimEnvByContainer is the claim's env grouped by the container of spec it goes to (the first
// regular container for an entry that names none); the later of two entries of one name wins,
// as in the pod spec InjectEnv writes.
func ClaimEnvByContainer(claim *extensionsv1beta1.SandboxClaim, spec *corev1.PodSpec) map[string]map[string]string {
	first := ""
	if len(spec.Containers) > 0 {
		first = spec.Containers[0].Name
	}
	out := map[string]map[string]string{}
	for _, e := range claim.Spec.Env {
		name := e.ContainerName
		if name == "" {
			name = first
		}
		if out[name] == nil {
			out[name] = map[string]string{}
		}
		out[name][e.Name] = e.Value
	}
	return out
}

// LateEnv is what the pod template of a sandbox sets in container that the running pod's container
// lacks: the env a claim gave a warm member after its pod started, as NAME=value. Only literal
// values count; the order is the template's.
func LateEnv(template, running *corev1.PodSpec, container string) []string {
	want := containerEnv(template, container)
	if len(want) == 0 {
		return nil
	}
	has := map[string]string{}
	for _, e := range containerEnv(running, container) {
		if e.ValueFrom == nil {
			has[e.Name] = e.Value
		}
	}
	var late []string
	for _, e := range want {
		if v, ok := has[e.Name]; e.ValueFrom == nil && (!ok || v != e.Value) {
			late = append(late, e.Name+"="+e.Value)
		}
	}
	return late
}

func containerEnv(spec *corev1.PodSpec, name string) []corev1.EnvVar {
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return list[i].Env
			}
		}
	}
	return nil
}
