// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package extensions

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

// WarmPoolPolicy says which warm pools a claim may adopt a sandbox from: "none", "default" (any
// pool for the claim's template) or the name of one pool.
type WarmPoolPolicy string

const (
	WarmPoolPolicyNone    WarmPoolPolicy = "none"
	WarmPoolPolicyDefault WarmPoolPolicy = "default"
)

// ShutdownPolicy says what happens when a claim expires.
type ShutdownPolicy string

const (
	ShutdownPolicyDelete           ShutdownPolicy = "Delete"
	ShutdownPolicyDeleteForeground ShutdownPolicy = "DeleteForeground"
	ShutdownPolicyRetain           ShutdownPolicy = "Retain"
)

// NetworkPolicyManagement says whether the template controller owns the template's NetworkPolicy.
type NetworkPolicyManagement string

const (
	NetworkPolicyManagementManaged   NetworkPolicyManagement = "Managed"
	NetworkPolicyManagementUnmanaged NetworkPolicyManagement = "Unmanaged"
)

// EnvVarsInjectionPolicy says whether claims may inject environment variables.
type EnvVarsInjectionPolicy string

const (
	EnvVarsInjectionPolicyAllowed    EnvVarsInjectionPolicy = "Allowed"
	EnvVarsInjectionPolicyOverrides  EnvVarsInjectionPolicy = "Overrides"
	EnvVarsInjectionPolicyDisallowed EnvVarsInjectionPolicy = "Disallowed"
)

// VolumeClaimTemplatesPolicy says whether claims may add volume claim templates to the template's.
type VolumeClaimTemplatesPolicy string

const (
	VolumeClaimTemplatesPolicyDisallowed VolumeClaimTemplatesPolicy = "Disallowed"
	VolumeClaimTemplatesPolicyAllowed    VolumeClaimTemplatesPolicy = "Allowed"
	VolumeClaimTemplatesPolicyOverrides  VolumeClaimTemplatesPolicy = "Overrides"
)

// SandboxWarmPoolUpdateStrategyType says how stale warm-pool members are replaced.
type SandboxWarmPoolUpdateStrategyType string

const (
	RecreateSandboxWarmPoolUpdateStrategyType    SandboxWarmPoolUpdateStrategyType = "Recreate"
	OnReplenishSandboxWarmPoolUpdateStrategyType SandboxWarmPoolUpdateStrategyType = "OnReplenish"
)

// SandboxTemplateRef names a SandboxTemplate in the same namespace.
type SandboxTemplateRef struct {
	Name string
}

// SandboxWarmPoolRef names a SandboxWarmPool in the same namespace.
type SandboxWarmPoolRef struct {
	Name string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxClaim is a tenant's request for a Sandbox made from a SandboxTemplate.
type SandboxClaim struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec   SandboxClaimSpec
	Status SandboxClaimStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxClaimList is a list of SandboxClaims.
type SandboxClaimList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []SandboxClaim
}

// EnvVar is an environment variable a claim injects into the sandbox's containers.
type EnvVar struct {
	Name          string
	Value         string
	ContainerName string
}

// Lifecycle holds the expiry settings of a claim.
type Lifecycle struct {
	ShutdownTime            *metav1.Time
	TTLSecondsAfterFinished *int32
	ShutdownPolicy          *ShutdownPolicy
	// IdleTimeout, when set, replaces the template's for the claim's sandbox.
	IdleTimeout *metav1.Duration
}

// SandboxClaimSpec is the desired state of a SandboxClaim.
type SandboxClaimSpec struct {
	TemplateRef           SandboxTemplateRef
	WarmPoolRef           *SandboxWarmPoolRef
	WarmPool              *WarmPoolPolicy
	AdditionalPodMetadata agents.PodMetadata
	Env                   []EnvVar
	VolumeClaimTemplates  []agents.PersistentVolumeClaimTemplate
	Lifecycle             *Lifecycle
}

// SandboxStatus is the claim's view of its Sandbox.
type SandboxStatus struct {
	Name   string
	PodIPs []string
}

// SandboxClaimStatus is the observed state of a SandboxClaim.
type SandboxClaimStatus struct {
	Conditions    []metav1.Condition
	SandboxStatus SandboxStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxTemplate is a reusable blueprint of a Sandbox, with its NetworkPolicy and policies.
type SandboxTemplate struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec SandboxTemplateSpec
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxTemplateList is a list of SandboxTemplates.
type SandboxTemplateList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []SandboxTemplate
}

// NetworkPolicySpec is the part of a NetworkPolicy a template sets: its ingress and egress rules.
type NetworkPolicySpec struct {
	Ingress []networkingv1.NetworkPolicyIngressRule
	Egress  []networkingv1.NetworkPolicyEgressRule
}

// SandboxTemplateSpec is the desired state of a SandboxTemplate.
type SandboxTemplateSpec struct {
	PodTemplate                agents.PodTemplate
	VolumeClaimTemplates       []agents.PersistentVolumeClaimTemplate
	NetworkPolicy              *NetworkPolicySpec
	NetworkPolicyManagement    NetworkPolicyManagement
	EnvVarsInjectionPolicy     EnvVarsInjectionPolicy
	VolumeClaimTemplatesPolicy VolumeClaimTemplatesPolicy
	// EnvVarsInjectionContainers name the containers besides the first regular one claims' env
	// may reach.
	EnvVarsInjectionContainers []string
	// AllowedClaimPodMetadata, when set, lists the only pod metadata keys claims may set.
	AllowedClaimPodMetadata *ClaimPodMetadataKeys
	Service                 *bool
	IdleTimeout             *metav1.Duration
	// ClaimVolumeClaimTemplates, when set, opens more to claims' volumes than the default.
	ClaimVolumeClaimTemplates *ClaimVolumeClaimTemplates
	// EnvVarsDelivery, when set, says how claims' env reaches a warm sandbox's running process.
	EnvVarsDelivery *EnvVarsDelivery
}

// EnvVarsDelivery says how a claim's environment variables reach a sandbox's running process:
// a file written at File, or Command run with them on its stdin, within TimeoutSeconds.
type EnvVarsDelivery struct {
	File           string
	Command        []string
	TimeoutSeconds *int32
}

// ClaimVolumeClaimTemplates is what a template opens to its claims' volume claim templates beyond
// the default.
type ClaimVolumeClaimTemplates struct {
	AllowedFields     []string
	StorageClassNames []string
	MaxCount          *int32
	MaxStorage        *resource.Quantity
}

// ClaimPodMetadataKeys lists the pod label and annotation keys claims of a template may set.
type ClaimPodMetadataKeys struct {
	Labels      []string
	Annotations []string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxWarmPool keeps a number of pre-started Sandboxes from a template ready for claims.
type SandboxWarmPool struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec   SandboxWarmPoolSpec
	Status SandboxWarmPoolStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxWarmPoolList is a list of SandboxWarmPools.
type SandboxWarmPoolList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []SandboxWarmPool
}

// SandboxWarmPoolUpdateStrategy says how members are replaced after their template changed.
type SandboxWarmPoolUpdateStrategy struct {
	Type SandboxWarmPoolUpdateStrategyType
}

// SandboxWarmPoolSpec is the desired state of a SandboxWarmPool.
type SandboxWarmPoolSpec struct {
	Replicas       int32
	TemplateRef    SandboxTemplateRef
	UpdateStrategy *SandboxWarmPoolUpdateStrategy
	// ReadinessGracePeriodSeconds is how long a member may stay not Ready after its creation
	// before it is replaced; nil means DefaultReadinessGracePeriodSeconds.
	ReadinessGracePeriodSeconds *int32
}

// DefaultReadinessGracePeriodSeconds is a pool's readiness grace period when its spec leaves it
// unset, as the peer's controller defaults it (five minutes).
const DefaultReadinessGracePeriodSeconds = 300

// MinReadinessGracePeriodSeconds is the shortest readiness grace period a pool may ask for, the
// peer's minimum: a shorter one would replace members that are merely slow to start.
const MinReadinessGracePeriodSeconds = 30

// SandboxWarmPoolStatus is the observed state of a SandboxWarmPool.
type SandboxWarmPoolStatus struct {
	ObservedGeneration int64
	Replicas           int32
	ReadyReplicas      int32
	Selector           string
}

// TemplateRefField is the field selector of claims and warm pools by the template they use.
const TemplateRefField = "spec.sandboxTemplateRef.name"
