// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "k8s.io/utils/ptr"

// DefaultEnvVarsDeliveryTimeoutSeconds bounds a delivery of a claim's env when the template says
// nothing: long enough for a process to reload, short enough that a stuck one is noticed.
const DefaultEnvVarsDeliveryTimeoutSeconds int32 = 10

// SetDefaults_SandboxClaimSpec makes a claim use the pool its warmPoolRef names, or else any warm
// pool of its template, unless told otherwise.
func SetDefaults_SandboxClaimSpec(obj *SandboxClaimSpec) {
	if obj.WarmPool == nil {
		if obj.WarmPoolRef != nil && obj.WarmPoolRef.Name != "" {
			obj.WarmPool = ptr.To(WarmPoolPolicy(obj.WarmPoolRef.Name))
		} else {
			obj.WarmPool = ptr.To(WarmPoolPolicyDefault)
		}
	}
}

// SetDefaults_Lifecycle keeps the claim after expiry unless a policy says otherwise.
func SetDefaults_Lifecycle(obj *Lifecycle) {
	if obj.ShutdownPolicy == nil {
		obj.ShutdownPolicy = ptr.To(ShutdownPolicyRetain)
	}
}

// SetDefaults_SandboxTemplateSpec gives a template the secure defaults: a managed NetworkPolicy, no
// environment injection and no volume claim templates from claims.
func SetDefaults_SandboxTemplateSpec(obj *SandboxTemplateSpec) {
	if obj.NetworkPolicyManagement == "" {
		obj.NetworkPolicyManagement = NetworkPolicyManagementManaged
	}
	if obj.EnvVarsInjectionPolicy == "" {
		obj.EnvVarsInjectionPolicy = EnvVarsInjectionPolicyDisallowed
	}
	if obj.VolumeClaimTemplatesPolicy == "" {
		obj.VolumeClaimTemplatesPolicy = VolumeClaimTemplatesPolicyDisallowed
	}
}

// SetDefaults_EnvVarsDelivery bounds a delivery to ten seconds unless told otherwise.
func SetDefaults_EnvVarsDelivery(obj *EnvVarsDelivery) {
	if obj.TimeoutSeconds == nil {
		obj.TimeoutSeconds = ptr.To(DefaultEnvVarsDeliveryTimeoutSeconds)
	}
}

// SetDefaults_SandboxWarmPoolSpec keeps one member unless told otherwise (agent-sandbox v1.0 made
// replicas optional with this default), and replaces stale members only when they are used up
// (OnReplenish).
func SetDefaults_SandboxWarmPoolSpec(obj *SandboxWarmPoolSpec) {
	if obj.Replicas == nil {
		obj.Replicas = ptr.To[int32](1)
	}
	if obj.UpdateStrategy == nil {
		obj.UpdateStrategy = &SandboxWarmPoolUpdateStrategy{}
	}
	if obj.UpdateStrategy.Type == "" {
		obj.UpdateStrategy.Type = OnReplenishSandboxWarmPoolUpdateStrategyType
	}
}
