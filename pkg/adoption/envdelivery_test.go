// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package adoption

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/claimtest"
)

// TestLateEnv: exec gets what the sandbox's pod template sets and its running pod lacks, and
// nothing the pod already has.
func TestLateEnv(t *testing.T) {
	template := &corev1.PodSpec{Containers: []corev1.Container{
		{Name: "agent", Env: []corev1.EnvVar{
			{Name: "LOG_LEVEL", Value: "info"},
			{Name: "TASK_ID", Value: "t-1"},
			{Name: "OVERRIDDEN", Value: "claim"},
			{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
		}},
		{Name: "sidecar"},
	}}
	running := &corev1.PodSpec{Containers: []corev1.Container{
		{Name: "agent", Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "OVERRIDDEN", Value: "template"}}},
		{Name: "sidecar"},
	}}
	if got, want := LateEnv(template, running, "agent"), []string{"TASK_ID=t-1", "OVERRIDDEN=claim"}; !slices.Equal(got, want) {
		t.Errorf("LateEnv(agent) = %q, want %q", got, want)
	}
	if got := LateEnv(template, running, "sidecar"); got != nil {
		t.Errorf("LateEnv(sidecar) = %q, want none", got)
	}
	if got := LateEnv(template, template, "agent"); got != nil {
		t.Errorf("LateEnv of a pod made from the template = %q, want none", got)
	}
}

// TestAdoptedSandboxEnv: adoption writes the claim's env into the member's pod template as the
// template's policy allows, and refuses what it does not.
func TestAdoptedSandboxEnv(t *testing.T) {
	member := claimtest.WarmMember("m1", claimtest.PoolName)
	allowed := newTemplate(claimtest.EnvPolicy(extensionsv1beta1.EnvVarsInjectionPolicyAllowed))
	claim := newClaim(claimtest.WithEnv(extensionsv1beta1.EnvVar{Name: "TASK_ID", Value: "t-1"}))

	adopted, err := AdoptedSandbox(claim, allowed, member, "")
	if err != nil {
		t.Fatalf("AdoptedSandbox: %v", err)
	}
	if got := adopted.Spec.PodTemplate.Spec.Containers[0].Env; !slices.Equal(got, []corev1.EnvVar{{Name: "TASK_ID", Value: "t-1"}}) {
		t.Errorf("env = %v, want TASK_ID=t-1", got)
	}
	if len(member.Spec.PodTemplate.Spec.Containers[0].Env) != 0 {
		t.Errorf("the cached member was changed: %v", member.Spec.PodTemplate.Spec.Containers[0].Env)
	}
	if _, err := AdoptedSandbox(claim, newTemplate(), member, ""); err == nil {
		t.Error("AdoptedSandbox under envVarsInjectionPolicy Disallowed: no error")
	}
	if _, err := AdoptedSandbox(claim, nil, member, ""); err == nil {
		t.Error("AdoptedSandbox with env and no template: no error")
	}
}

// TestServedClaimEnvDelivery: a claim served by a Ready member is Ready at once unless its
// template delivers env, in which case it waits for the delivery.
func TestServedClaimEnvDelivery(t *testing.T) {
	member := claimtest.WarmMember("m1", claimtest.PoolName)
	claim := newClaim(claimtest.WithEnv(extensionsv1beta1.EnvVar{Name: "TASK_ID", Value: "t-1"}))
	plain := newTemplate(claimtest.EnvPolicy(extensionsv1beta1.EnvVarsInjectionPolicyAllowed))
	delivering := newTemplate(claimtest.EnvPolicy(extensionsv1beta1.EnvVarsInjectionPolicyAllowed), func(t *extensionsv1beta1.SandboxTemplate) {
		t.Spec.EnvVarsDelivery = &extensionsv1beta1.EnvVarsDelivery{File: "/run/env"}
	})

	served := ServedClaim(claim, plain, member)
	claimtest.CheckReady(t, served, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "")

	served = ServedClaim(claim, delivering, member)
	claimtest.CheckReady(t, served, metav1.ConditionFalse, extensionsv1beta1.ClaimReasonEnvPending, "Waiting for sandbox m1 to be Ready")
	SetEnvDelivered(served, metav1.ConditionTrue, extensionsv1beta1.EnvReasonDelivered, "done")
	ComputeStatus(served, member, nil, false)
	claimtest.CheckReady(t, served, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "")

	SetEnvDelivered(served, metav1.ConditionFalse, extensionsv1beta1.EnvReasonFailed, "it failed")
	ComputeStatus(served, member, nil, false)
	claimtest.CheckReady(t, served, metav1.ConditionFalse, extensionsv1beta1.ClaimReasonEnvFailed, "it failed")
	if EnvDeliveryDue(served) {
		t.Error("a final failure is due again")
	}

	// Without env, nothing changes, whatever the template says.
	served = ServedClaim(newClaim(), delivering, member)
	claimtest.CheckReady(t, served, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "")
	if meta.FindStatusCondition(served.Status.Conditions, extensionsv1beta1.ClaimConditionEnvDelivered) != nil {
		t.Error("a claim without env carries EnvDelivered")
	}
}

// TestMarkEnvPendingKeepsWarmFailure: the mark of a warm failure survives the next sandbox, so the
// claim never goes back to a warm pool.
func TestMarkEnvPendingKeepsWarmFailure(t *testing.T) {
	claim := newClaim()
	SetEnvDelivered(claim, metav1.ConditionFalse, extensionsv1beta1.EnvReasonWarmFailed, "failed")
	MarkEnvPending(claim, "Waiting")
	if !WarmEnvDeliveryFailed(claim) || !EnvDeliveryDue(claim) {
		t.Errorf("conditions %+v: want the warm failure kept and the delivery still due", claim.Status.Conditions)
	}
}
