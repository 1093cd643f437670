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
)
