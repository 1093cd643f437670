// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// WarmPoolPolicy says which warm pools a claim may adopt a sandbox from: "none" never, "default"
// any pool of the claim's template in its namespace, and any other value only the pool of that name.
type WarmPoolPolicy string

const (
	// WarmPoolPolicyNone never adopts: the sandbox is always created from the template.
	WarmPoolPolicyNone WarmPoolPolicy = "none"
	// WarmPoolPolicyDefault adopts from any warm pool of the claim's template.
	WarmPoolPolicyDefault WarmPoolPolicy = "default"
)

// ShutdownPolicy says what happens when a claim expires.
// +enum
type ShutdownPolicy string

const (
	// ShutdownPolicyDelete deletes the claim, and with it its sandbox.
	ShutdownPolicyDelete ShutdownPolicy = "Delete"
	// ShutdownPolicyDeleteForeground deletes the claim in the foreground: the claim stays, being
	// deleted, until its sandbox and pod are gone.
	ShutdownPolicyDeleteForeground ShutdownPolicy = "DeleteForeground"
	// ShutdownPolicyRetain deletes the sandbox and keeps the claim with Ready=False ClaimExpired.
	ShutdownPolicyRetain ShutdownPolicy = "Retain"
)

// NetworkPolicyManagement says whether the template controller owns the template's NetworkPolicy.
// +enum
type NetworkPolicyManagement string

const (
	// NetworkPolicyManagementManaged makes the controller create and repair the NetworkPolicy.
	NetworkPolicyManagementManaged NetworkPolicyManagement = "Managed"
	// NetworkPolicyManagementUnmanaged leaves networking to something else; the controller removes its policy.
	NetworkPolicyManagementUnmanaged NetworkPolicyManagement = "Unmanaged"
)

// EnvVarsInjectionPolicy says whether claims may inject environment variables.
// +enum
type EnvVarsInjectionPolicy string

const (
	// EnvVarsInjectionPolicyAllowed lets claims add variables, not change the template's.
	EnvVarsInjectionPolicyAllowed EnvVarsInjectionPolicy = "Allowed"
	// EnvVarsInjectionPolicyOverrides lets claims add variables and override the template's.
	EnvVarsInjectionPolicyOverrides EnvVarsInjectionPolicy = "Overrides"
	// EnvVarsInjectionPolicyDisallowed refuses claims that set env.
	EnvVarsInjectionPolicyDisallowed EnvVarsInjectionPolicy = "Disallowed"
)

// VolumeClaimTemplatesPolicy says whether claims may add volume claim templates to the template's.
// +enum
type VolumeClaimTemplatesPolicy string

const (
	// VolumeClaimTemplatesPolicyDisallowed refuses claims that set volumeClaimTemplates.
	VolumeClaimTemplatesPolicyDisallowed VolumeClaimTemplatesPolicy = "Disallowed"
	// VolumeClaimTemplatesPolicyAllowed lets claims add volume claim templates of new names.
	VolumeClaimTemplatesPolicyAllowed VolumeClaimTemplatesPolicy = "Allowed"
	// VolumeClaimTemplatesPolicyOverrides lets claims add volume claim templates and replace the
	// template's own of the same name.
	VolumeClaimTemplatesPolicyOverrides VolumeClaimTemplatesPolicy = "Overrides"
)

// SandboxWarmPoolUpdateStrategyType says how stale warm-pool members are replaced.
// +enum
type SandboxWarmPoolUpdateStrategyType string

const (
	// RecreateSandboxWarmPoolUpdateStrategyType deletes members at once when the template's pod
	// template changes; the pool then refills. Label or annotation changes alone do not count.
	RecreateSandboxWarmPoolUpdateStrategyType SandboxWarmPoolUpdateStrategyType = "Recreate"
	// OnReplenishSandboxWarmPoolUpdateStrategyType keeps stale members until they are adopted or
	// deleted; replacements are built from the new template.
	OnReplenishSandboxWarmPoolUpdateStrategyType SandboxWarmPoolUpdateStrategyType = "OnReplenish"
)

// SandboxTemplateRef names a SandboxTemplate in the same namespace.
type SandboxTemplateRef struct {
	// name of the SandboxTemplate, in the same namespace.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
}

// SandboxWarmPoolRef names a SandboxWarmPool in the same namespace.
type SandboxWarmPoolRef struct {
	// name of the SandboxWarmPool, in the same namespace.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxClaim is a tenant's request for a Sandbox made from a SandboxTemplate. It is served from a
// warm pool when one fits, and otherwise by a Sandbox created from the template.
type SandboxClaim struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// spec is the desired state of the claim.
	Spec SandboxClaimSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`

	// status is the observed state of the claim, written by the controller.
	// +optional
	Status SandboxClaimStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxClaimList is a list of SandboxClaims.
type SandboxClaimList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// items is the list of SandboxClaims.
	Items []SandboxClaim `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// EnvVar is an environment variable a claim injects into the sandbox's containers.
type EnvVar struct {
	// name of the variable.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`

	// value of the variable.
	Value string `json:"value" protobuf:"bytes,2,opt,name=value"`

	// containerName is the init or regular container that gets the variable. When empty, the first
	// regular container gets it.
	// +optional
	ContainerName string `json:"containerName,omitempty" protobuf:"bytes,3,opt,name=containerName"`
}

// Lifecycle holds the expiry settings of a claim.
type Lifecycle struct {
	// shutdownTime is the absolute time (RFC 3339) at which the claim expires.
	// +optional
	ShutdownTime *metav1.Time `json:"shutdownTime,omitempty" protobuf:"bytes,1,opt,name=shutdownTime"`

	// ttlSecondsAfterFinished is how long the claim lives after its sandbox finished (the Finished
	// condition mirrored from the sandbox), in seconds.
	// +optional
	// +k8s:validation:minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty" protobuf:"varint,2,opt,name=ttlSecondsAfterFinished"`

	// shutdownPolicy says what happens when the claim expires: Delete removes the claim and its
	// sandbox, DeleteForeground does the same but keeps the claim until the sandbox and pod are gone,
	// and Retain (the default) removes the sandbox and keeps the claim with Ready=False ClaimExpired.
	// +optional
	// +default="Retain"
	ShutdownPolicy *ShutdownPolicy `json:"shutdownPolicy,omitempty" protobuf:"bytes,3,opt,name=shutdownPolicy,casttype=ShutdownPolicy"`

	// idleTimeout is the spec.idleTimeout of the claim's sandbox, in place of the template's: the
	// sandbox is suspended after this long without a request through the proxy and resumed by the
	// next one. Also applies to a warm sandbox the claim adopts. At least 10s.
	// +optional
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty" protobuf:"bytes,4,opt,name=idleTimeout"`
}

// SandboxClaimSpec is the desired state of a SandboxClaim.
type SandboxClaimSpec struct {
	// sandboxTemplateRef names the SandboxTemplate, in the claim's namespace, the sandbox is made
	// from. It may be left out when warmPoolRef is set: the pool's template is filled in.
	// +optional
	TemplateRef SandboxTemplateRef `json:"sandboxTemplateRef,omitempty" protobuf:"bytes,1,opt,name=sandboxTemplateRef"`

	// warmPoolRef names the SandboxWarmPool, in the claim's namespace, the claim is served from (the
	// agent-sandbox v1.0 way to claim). The pool decides the template: the pool must exist when the
	// claim is created, and sandboxTemplateRef, when given, must name the pool's template. The claim
	// then adopts only members of this pool, and gets a sandbox made from the template when the pool
	// has none. Without warmPoolRef, a claim may adopt from any pool of its template, as warmpool
	// says.
	// +optional
	WarmPoolRef *SandboxWarmPoolRef `json:"warmPoolRef,omitempty" protobuf:"bytes,2,opt,name=warmPoolRef"`

	// warmpool says which warm pools the claim may adopt a sandbox from: "none" never, "default"
	// (the default) any pool of the template, or the name of one pool. With warmPoolRef it defaults
	// to that pool's name and may only be that or "none".
	// +optional
	// +default="default"
	WarmPool *WarmPoolPolicy `json:"warmpool,omitempty" protobuf:"bytes,3,opt,name=warmpool,casttype=WarmPoolPolicy"`

	// additionalPodMetadata holds labels and annotations merged onto the sandbox's pod. Keys in the
	// kubernetes.io, k8s.io and agents.x-k8s.io domains are refused, and so is a key the template
	// already sets to another value.
	// +optional
	AdditionalPodMetadata agentsv1beta1.PodMetadata `json:"additionalPodMetadata,omitempty" protobuf:"bytes,4,opt,name=additionalPodMetadata"`

	// env lists environment variables injected into the sandbox's containers, as the template's
	// envVarsInjectionPolicy allows. A warm pool's member still serves such a claim: commands
	// started through exec get the values, and the template's envVarsDelivery hands them to the
	// member's running process before the claim is Ready. Whoever may read the claim reads the
	// values: keep secrets in Secrets.
	// +optional
	// +listType=atomic
	Env []EnvVar `json:"env,omitempty" protobuf:"bytes,5,rep,name=env"`

	// volumeClaimTemplates adds PersistentVolumeClaims to those of the template, as the template's
	// volumeClaimTemplatesPolicy allows: Allowed for new names only, Overrides to replace the
	// template's of the same name too. A claim with volumeClaimTemplates always gets a sandbox made
	// for it (a cold start), never a warm pool's member, whose volumes exist already.
	// +optional
	// +listType=atomic
	VolumeClaimTemplates []agentsv1beta1.PersistentVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty" protobuf:"bytes,6,rep,name=volumeClaimTemplates"`

	// lifecycle says when the claim expires and what happens then.
	// +optional
	Lifecycle *Lifecycle `json:"lifecycle,omitempty" protobuf:"bytes,7,opt,name=lifecycle"`
}

// SandboxStatus is the claim's view of its Sandbox.
type SandboxStatus struct {
	// name of the Sandbox serving this claim.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`

	// podIPs of the sandbox's pod.
	// +optional
	// +listType=atomic
	PodIPs []string `json:"podIPs,omitempty" protobuf:"bytes,2,rep,name=podIPs"`
}

// SandboxClaimStatus is the observed state of a SandboxClaim.
type SandboxClaimStatus struct {
	// conditions are Ready and Finished, mirrored from the sandbox or set by the claim controller.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,1,rep,name=conditions"`

	// sandbox is the Sandbox serving this claim.
	// +optional
	SandboxStatus SandboxStatus `json:"sandbox,omitempty" protobuf:"bytes,2,opt,name=sandbox"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxTemplate is a reusable blueprint of a Sandbox for claims and warm pools: its pod, volumes
// and Service, the NetworkPolicy shared by all its sandboxes, and what claims may change.
type SandboxTemplate struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// spec is the template.
	Spec SandboxTemplateSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxTemplateList is a list of SandboxTemplates.
type SandboxTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// items is the list of SandboxTemplates.
	Items []SandboxTemplate `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// NetworkPolicySpec holds the ingress and egress rules of the template's NetworkPolicy. The pod
// selector and policy types are set by the controller.
type NetworkPolicySpec struct {
	// ingress rules. Traffic not allowed here is denied, sidecars included: add their ports too.
	// +optional
	// +listType=atomic
	Ingress []networkingv1.NetworkPolicyIngressRule `json:"ingress,omitempty" protobuf:"bytes,1,rep,name=ingress"`

	// egress rules. Traffic not allowed here is denied.
	// +optional
	// +listType=atomic
	Egress []networkingv1.NetworkPolicyEgressRule `json:"egress,omitempty" protobuf:"bytes,2,rep,name=egress"`
}

// ClaimPodMetadataKeys lists the pod label and annotation keys claims of a template may set.
type ClaimPodMetadataKeys struct {
	// labels are the label keys claims may set.
	// +optional
	// +listType=set
	Labels []string `json:"labels,omitempty" protobuf:"bytes,1,rep,name=labels"`

	// annotations are the annotation keys claims may set.
	// +optional
	// +listType=set
	Annotations []string `json:"annotations,omitempty" protobuf:"bytes,2,rep,name=annotations"`
}

// SandboxTemplateSpec is the desired state of a SandboxTemplate.
type SandboxTemplateSpec struct {
	// podTemplate describes the pod of every sandbox made from this template.
	PodTemplate agentsv1beta1.PodTemplate `json:"podTemplate" protobuf:"bytes,1,opt,name=podTemplate"`

	// volumeClaimTemplates lists the PersistentVolumeClaims made for every sandbox. The list is
	// replaced as a whole on update.
	// +optional
	// +listType=atomic
	VolumeClaimTemplates []agentsv1beta1.PersistentVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty" protobuf:"bytes,2,rep,name=volumeClaimTemplates"`

	// networkPolicy holds the rules of the NetworkPolicy shared by the template's sandboxes. Unset,
	// under Managed, gives the secure default: ingress only from pods labelled app=sandbox-router,
	// egress to the internet but not to private, link-local or metadata addresses.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty" protobuf:"bytes,3,opt,name=networkPolicy"`

	// networkPolicyManagement is Managed (the default) for a NetworkPolicy kept by the controller, or
	// Unmanaged to leave networking to something else.
	// +optional
	// +default="Managed"
	NetworkPolicyManagement NetworkPolicyManagement `json:"networkPolicyManagement,omitempty" protobuf:"bytes,4,opt,name=networkPolicyManagement,casttype=NetworkPolicyManagement"`

	// envVarsInjectionPolicy says whether claims may inject environment variables: Disallowed (the
	// default), Allowed (new variables only) or Overrides (new ones and overrides of the template's).
	// +optional
	// +default="Disallowed"
	EnvVarsInjectionPolicy EnvVarsInjectionPolicy `json:"envVarsInjectionPolicy,omitempty" protobuf:"bytes,5,opt,name=envVarsInjectionPolicy,casttype=EnvVarsInjectionPolicy"`

	// volumeClaimTemplatesPolicy says whether claims may add volume claim templates: Disallowed (the
	// default), Allowed (new names only) or Overrides (new ones and replacements of the template's
	// of the same name). A claim the policy does not allow is refused when it is created.
	// +optional
	VolumeClaimTemplatesPolicy VolumeClaimTemplatesPolicy `json:"volumeClaimTemplatesPolicy,omitempty" protobuf:"bytes,6,opt,name=volumeClaimTemplatesPolicy,casttype=VolumeClaimTemplatesPolicy"`
	// envVarsInjectionContainers names the containers, besides the first regular one, whose
	// environment a claim's spec.env may reach (with containerName): init containers and sidecars
	// run with the sandbox's secrets and network too, so they are closed unless named here. Each
	// must be a container or init container of podTemplate. Unset or empty: the first regular
	// container only.
	// +optional
	// +listType=set
	EnvVarsInjectionContainers []string `json:"envVarsInjectionContainers,omitempty" protobuf:"bytes,7,rep,name=envVarsInjectionContainers"`

	// allowedClaimPodMetadata lists exactly which pod label and annotation keys a claim's
	// spec.additionalPodMetadata may set. Unset: any key except the reserved domains
	// (kubernetes.io, k8s.io, agents.x-k8s.io) and the keys that make a pod look trusted: label
	// keys this template's NetworkPolicy admits peers by (app, of the secure default), sidecar
	// injection and mesh keys (istio.io, linkerd.io, ...), and container runtime keys
	// (io.kubernetes.cri-o., io.katacontainers., dev.gvisor., ...). Set: only the keys listed, which
	// may include those trusted keys (never a reserved domain).
	// +optional
	AllowedClaimPodMetadata *ClaimPodMetadataKeys `json:"allowedClaimPodMetadata,omitempty" protobuf:"bytes,8,opt,name=allowedClaimPodMetadata"`

	// service is copied to the spec.service of every sandbox: true gives each a headless Service.
	// +optional
	Service *bool `json:"service,omitempty" protobuf:"varint,9,opt,name=service"`

	// idleTimeout is copied to the spec.idleTimeout of every sandbox made from this template (a
	// claim's lifecycle.idleTimeout replaces it for the claim's sandbox): the sandbox is suspended
	// after this long without a request through the proxy and resumed by the next one. Warm-pool
	// members are never suspended for idleness until a claim adopts them. At least 10s.
	// +optional
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty" protobuf:"bytes,10,opt,name=idleTimeout"`

	// claimVolumeClaimTemplates opens more to the volume claim templates claims add (under
	// volumeClaimTemplatesPolicy Allowed or Overrides) than the default: PVC spec fields besides
	// accessModes, resources, volumeMode and storageClassName, storage classes besides those of
	// this template's volume claim templates, and other bounds on their count and total size. The
	// server creates those PVCs with its own rights, so each opening lets the template's users
	// reach storage on the server's behalf; see SECURITY.md.
	// +optional
	ClaimVolumeClaimTemplates *ClaimVolumeClaimTemplates `json:"claimVolumeClaimTemplates,omitempty" protobuf:"bytes,11,opt,name=claimVolumeClaimTemplates"`

	// envVarsDelivery says how a claim's spec.env reaches the already running process of a warm
	// sandbox this template made (a warm pool's member adopted by the claim): a file the process
	// reads, or a command of the template's run with the values on its stdin. Commands started
	// through the API (exec) get the values either way. When set, a claim with env is Ready only
	// once the delivery succeeded; a member whose delivery fails is discarded, never handed over
	// half-configured, and the claim gets a new sandbox made with the values. Unset: only exec
	// gets the values of a warm sandbox. See docs/warm-pools.md.
	// +optional
	EnvVarsDelivery *EnvVarsDelivery `json:"envVarsDelivery,omitempty" protobuf:"bytes,12,opt,name=envVarsDelivery"`
}

// EnvVarsDelivery says how a claim's environment variables reach a sandbox's running process.
// Exactly one of file and command is set. Each runs in every container that gets variables from
// the claim, through the pod's exec, before the claim is Ready.
type EnvVarsDelivery struct {
	// file is the absolute path, in the container, of a file written with the claim's variables
	// for that container as shell assignments (export NAME='value', one per line), which a shell
	// loads with ". file". It is written owner-only and moved into place whole, so the process
	// never reads half of it. Writing it needs sh, mkdir, cat, chmod and mv in the image.
	// +optional
	File string `json:"file,omitempty" protobuf:"bytes,1,opt,name=file"`

	// command runs in the container with the claim's variables for that container on its stdin,
	// as one JSON object of names to values; it exits 0 once the process has them. It runs as the
	// container's user, without a terminal, and its output is only kept when it fails.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty" protobuf:"bytes,2,rep,name=command"`

	// timeoutSeconds bounds one delivery: past it, the delivery has failed. 1 to 300; 10 when
	// unset.
	// +optional
	// +default=10
	// +k8s:validation:minimum=1
	// +k8s:validation:maximum=300
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty" protobuf:"varint,3,opt,name=timeoutSeconds"`
}

// ClaimVolumeClaimTemplates is what a template opens to its claims' volume claim templates beyond
// the default: new, empty storage of the template's own classes, at most 8 volumes and 100Gi.
type ClaimVolumeClaimTemplates struct {
	// allowedFields names the PVC spec fields claim volumes may set besides accessModes, resources,
	// volumeMode and storageClassName: dataSource, dataSourceRef (clone or restore data the
	// template's users name), volumeName, selector (bind an existing PersistentVolume) and
	// volumeAttributesClassName.
	// +optional
	// +listType=set
	AllowedFields []string `json:"allowedFields,omitempty" protobuf:"bytes,1,rep,name=allowedFields"`

	// storageClassNames are storage classes claim volumes may name besides those of the template's
	// own volume claim templates ("" is the class of unclassed PersistentVolumes).
	// +optional
	// +listType=set
	StorageClassNames []string `json:"storageClassNames,omitempty" protobuf:"bytes,2,rep,name=storageClassNames"`

	// maxCount is how many volume claim templates one claim may add: 1 to 64, 8 when unset.
	// +optional
	MaxCount *int32 `json:"maxCount,omitempty" protobuf:"varint,3,opt,name=maxCount"`

	// maxStorage is the storage all of one claim's volumes may request together: positive, 100Gi
	// when unset.
	// +optional
	MaxStorage *resource.Quantity `json:"maxStorage,omitempty" protobuf:"bytes,4,opt,name=maxStorage"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale

// SandboxWarmPool keeps a number of pre-started Sandboxes from a template ready to be claimed.
type SandboxWarmPool struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// spec is the desired state of the pool.
	Spec SandboxWarmPoolSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`

	// status is the observed state of the pool, written by the controller.
	// +optional
	Status SandboxWarmPoolStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxWarmPoolList is a list of SandboxWarmPools.
type SandboxWarmPoolList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// items is the list of SandboxWarmPools.
	Items []SandboxWarmPool `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// SandboxWarmPoolUpdateStrategy says how members are replaced after their template changed.
type SandboxWarmPoolUpdateStrategy struct {
	// type is OnReplenish (the default) or Recreate.
	// +optional
	// +default="OnReplenish"
	Type SandboxWarmPoolUpdateStrategyType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=SandboxWarmPoolUpdateStrategyType"`
}

// SandboxWarmPoolSpec is the desired state of a SandboxWarmPool.
type SandboxWarmPoolSpec struct {
	// replicas is the number of ready sandboxes the pool keeps, 1 when unset and at most 5000. It is
	// the spec path of the scale subresource, so kubectl scale and a HorizontalPodAutoscaler can
	// drive it.
	// +optional
	// +default=1
	// +k8s:validation:minimum=0
	// +k8s:validation:maximum=5000
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`

	// sandboxTemplateRef names the SandboxTemplate, in the pool's namespace, members are made from.
	TemplateRef SandboxTemplateRef `json:"sandboxTemplateRef,omitempty" protobuf:"bytes,2,opt,name=sandboxTemplateRef"`

	// updateStrategy says how members are replaced after the template changed.
	// +optional
	UpdateStrategy *SandboxWarmPoolUpdateStrategy `json:"updateStrategy,omitempty" protobuf:"bytes,3,opt,name=updateStrategy"`

	// readinessGracePeriodSeconds is how long, in seconds from its creation, a member may stay not
	// Ready before the pool deletes it and makes a new one; 300 (five minutes) when unset, at least
	// 30. Raise it for images that take long to start. Changing it does not make existing members
	// stale: it applies to them from then on.
	// +optional
	// +k8s:validation:minimum=30
	ReadinessGracePeriodSeconds *int32 `json:"readinessGracePeriodSeconds,omitempty" protobuf:"varint,4,opt,name=readinessGracePeriodSeconds"`
}

// SandboxWarmPoolStatus is the observed state of a SandboxWarmPool.
type SandboxWarmPoolStatus struct {
	// observedGeneration is the metadata.generation of the pool the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,1,opt,name=observedGeneration"`

	// replicas is the number of current members of the pool.
	// +optional
	Replicas int32 `json:"replicas,omitempty" protobuf:"varint,2,opt,name=replicas"`

	// readyReplicas is the number of members whose Ready condition is True.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty" protobuf:"varint,3,opt,name=readyReplicas"`

	// selector is the label selector of the pool's members in string form, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty" protobuf:"bytes,4,opt,name=selector"`
}
