// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1

// Well-known label and annotation keys shared by the API and the controllers.
const (
	// SandboxNameHashLabel carries the hash of the Sandbox name on every child. It is kept for
	// compatibility; a 32-bit hash is not unique, so nothing selects a Sandbox's Pod by it.
	SandboxNameHashLabel = "agents.x-k8s.io/sandbox-name-hash"
	// SandboxUIDLabel carries the UID of the Sandbox on its Pod, and selects that Pod (the headless
	// Service's selector, status.selector): no other Sandbox can share it.
	SandboxUIDLabel = "agents.x-k8s.io/sandbox-uid"
	// NamespaceUIDAnnotation records, on every object this server stores, the UID of the cluster
	// namespace it was created in. The server sets it at create time and keeps it on update; an
	// object whose namespace now has another UID was left behind by a deleted namespace of the same
	// name and is cleaned up, never served in the new one.
	NamespaceUIDAnnotation = "agents.x-k8s.io/namespace-uid"
	// SandboxPropagatedLabelsAnnotation lists the Pod labels that came from spec.podTemplate.metadata.
	SandboxPropagatedLabelsAnnotation = "agents.x-k8s.io/propagated-labels"
	// SandboxPropagatedAnnotationsAnnotation lists the Pod annotations that came from spec.podTemplate.metadata.
	SandboxPropagatedAnnotationsAnnotation = "agents.x-k8s.io/propagated-annotations"
	// SandboxPodTemplateHashLabel records the pod template revision a warm-pool member was built from.
	SandboxPodTemplateHashLabel = "agents.x-k8s.io/sandbox-pod-template-hash"
	// SandboxPodNameAnnotation names the Pod of a Sandbox when it is not named after the Sandbox.
	SandboxPodNameAnnotation = "agents.x-k8s.io/pod-name"
	// SandboxTemplateRefAnnotation records the SandboxTemplate a Sandbox was made from.
	SandboxTemplateRefAnnotation = "agents.x-k8s.io/sandbox-template-ref"

	// CreatedByLabel names the client that created an object (the peer's SDKs write go-client or
	// python-client). Informational: users set it, nothing trusts it.
	CreatedByLabel = "agents.x-k8s.io/created-by"
	// ClientRequestedAtAnnotation is when a client first asked for a claim (RFC 3339), stamped by
	// the SDKs; the client-seen claim startup is measured from it. Informational, like
	// CreatedByLabel.
	ClientRequestedAtAnnotation = "agents.x-k8s.io/client-first-requested-at"

	// SandboxLaunchTypeLabel says how a Sandbox and its Pod came to be: LaunchTypeWarm for a warm
	// pool's member (and so for a claim's sandbox adopted from a pool), LaunchTypeCold for any
	// other. The API server sets it when the Sandbox is created and keeps it after.
	SandboxLaunchTypeLabel = "agents.x-k8s.io/launch-type"
	// LaunchTypeCold marks a Sandbox created from scratch, for a claim or directly.
	LaunchTypeCold = "cold"
	// LaunchTypeWarm marks a Sandbox made by a warm pool, before and after a claim adopts it.
	LaunchTypeWarm = "warm"

	// SandboxChildrenFinalizer holds a deleted Sandbox until the controller has deleted its pod,
	// Service and PersistentVolumeClaims.
	SandboxChildrenFinalizer = "agents.x-k8s.io/sandbox-children"
)

// ConditionType is a type of condition reported in a Sandbox status.
type ConditionType string

// Condition types of a Sandbox.
const (
	SandboxConditionReady     ConditionType = "Ready"
	SandboxConditionSuspended ConditionType = "Suspended"
	SandboxConditionFinished  ConditionType = "Finished"
	// SandboxConditionPodScheduled mirrors the PodScheduled condition of the Sandbox's Pod.
	SandboxConditionPodScheduled ConditionType = "PodScheduled"
)

// Reasons of the Sandbox conditions.
const (
	SandboxReasonDependenciesReady    = "DependenciesReady"
	SandboxReasonDependenciesNotReady = "DependenciesNotReady"
	SandboxReasonSuspended            = "SandboxSuspended"
	SandboxReasonExpired              = "SandboxExpired"
	// SandboxReasonIdleSuspended: the controller suspended the Sandbox because spec.idleTimeout
	// passed without a request through the proxy. Ready keeps it until the Sandbox runs again.
	SandboxReasonIdleSuspended   = "IdleSuspended"
	SandboxReasonReconcilerError = "ReconcilerError"
	// SandboxReasonOwnershipConflict: an object of the name a child needs exists and the Sandbox
	// does not control it; it is left as it is.
	SandboxReasonOwnershipConflict = "OwnershipConflict"
	// SandboxReasonPodCreationForbidden: the cluster refused the pod (a ResourceQuota, a policy).
	SandboxReasonPodCreationForbidden = "PodCreationForbidden"

	SandboxReasonSuspendedPodTerminated    = "PodTerminated"
	SandboxReasonSuspendedPodNotTerminated = "PodNotTerminated"

	// SandboxReasonPodScheduled and SandboxReasonPodNotScheduled stand in for the reason of a Pod's
	// PodScheduled condition when it has none (a condition of a Sandbox needs one).
	SandboxReasonPodScheduled    = "PodScheduled"
	SandboxReasonPodNotScheduled = "PodNotScheduled"

	SandboxReasonPodSucceeded = "PodSucceeded"
	SandboxReasonPodFailed    = "PodFailed"
)
