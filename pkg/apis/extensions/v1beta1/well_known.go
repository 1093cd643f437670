// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1

// Well-known label keys of the extensions controllers.
const (
	// SandboxIDLabel carries the UID of the claim that owns a sandbox, on the sandbox's pod template.
	SandboxIDLabel = "agents.x-k8s.io/claim-uid"
	// SandboxTemplateRefHashLabel carries the hash of the template name; the template's
	// NetworkPolicy selects pods by it and claims find warm members by it.
	SandboxTemplateRefHashLabel = "agents.x-k8s.io/sandbox-template-ref-hash"
	// WarmPoolSandboxLabel carries the hash of the warm pool name on the pool's members.
	WarmPoolSandboxLabel = "agents.x-k8s.io/warm-pool-sandbox"
	// ClaimSandboxNameLabel records, on a claim, the name of the sandbox it adopted.
	ClaimSandboxNameLabel = "agents.x-k8s.io/sandbox-name"

	// ClaimSandboxFinalizer holds a deleted claim until the controller has deleted its Sandbox.
	ClaimSandboxFinalizer = "extensions.agents.x-k8s.io/claim-sandbox"
	// WarmPoolMembersFinalizer holds a deleted warm pool until the controller has deleted its members.
	WarmPoolMembersFinalizer = "extensions.agents.x-k8s.io/warmpool-members"
	// TemplateNetworkPolicyFinalizer holds a deleted template until the controller has deleted its
	// NetworkPolicy.
	TemplateNetworkPolicyFinalizer = "extensions.agents.x-k8s.io/template-network-policy"

	// TemplateRefField is the field selector and index of the template a claim or pool refers to.
	TemplateRefField = "spec.sandboxTemplateRef.name"
)

// Reasons of a SandboxClaim's Ready condition, besides those mirrored from its Sandbox.
const (
	ClaimReasonTemplateNotFound = "TemplateNotFound"
	ClaimReasonInvalidMetadata  = "InvalidMetadata"
	ClaimReasonSandboxMissing   = "SandboxMissing"
	ClaimReasonSandboxNotReady  = "SandboxNotReady"
	ClaimReasonSandboxExpired   = "SandboxExpired"
	ClaimReasonClaimExpired     = "ClaimExpired"
	ClaimReasonReconcilerError  = "ReconcilerError"
	// ClaimReasonEnvPending: the sandbox runs, and the claim's env is being delivered to it.
	ClaimReasonEnvPending = "EnvDeliveryPending"
	// ClaimReasonEnvFailed: delivering the claim's env to its sandbox failed.
	ClaimReasonEnvFailed = "EnvDeliveryFailed"
)

// ClaimConditionEnvDelivered is True once the claim's env reached its sandbox's running process as
// the template's envVarsDelivery says; claims of templates without it never carry the condition.
const ClaimConditionEnvDelivered = "EnvDelivered"

// Reasons of a claim's EnvDelivered condition.
const (
	// EnvReasonPending: the delivery has not run yet (the sandbox is not Ready, or it is running).
	EnvReasonPending = "Pending"
	// EnvReasonDelivered: the delivery succeeded.
	EnvReasonDelivered = "Delivered"
	// EnvReasonWarmFailed: the delivery to an adopted warm member failed; the member was discarded
	// and the claim gets a sandbox made with its env.
	EnvReasonWarmFailed = "WarmDeliveryFailed"
	// EnvReasonFailed: the delivery to a sandbox made for the claim failed; the claim stays not
	// Ready until its sandbox is replaced.
	EnvReasonFailed = "DeliveryFailed"
)
