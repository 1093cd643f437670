// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ShutdownPolicy says what happens to a Sandbox when its shutdownTime has passed.
// +enum
type ShutdownPolicy string

const (
	// ShutdownPolicyDelete deletes the Sandbox after its children.
	ShutdownPolicyDelete ShutdownPolicy = "Delete"
	// ShutdownPolicyRetain keeps the Sandbox, expired, after its children are deleted.
	ShutdownPolicyRetain ShutdownPolicy = "Retain"
)

// OperatingMode is the desired operational state of a Sandbox.
// +enum
type OperatingMode string

const (
	// OperatingModeRunning runs the Pod (spec.replicas 1).
	OperatingModeRunning OperatingMode = "Running"
	// OperatingModeSuspended deletes the Pod and keeps its PersistentVolumeClaims (spec.replicas 0).
	OperatingModeSuspended OperatingMode = "Suspended"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale

// Sandbox is a single, controller-managed Pod meant to host an agent workload, with an optional
// headless Service and PersistentVolumeClaims that live as long as the Sandbox.
type Sandbox struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// spec is the desired state of the Sandbox.
	Spec SandboxSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`

	// status is the observed state of the Sandbox, written by the controller.
	// +optional
	Status SandboxStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxList is a list of Sandboxes.
type SandboxList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// items is the list of Sandboxes.
	Items []Sandbox `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// PodMetadata is the part of object metadata that is copied onto the Pod: labels and annotations.
type PodMetadata struct {
	// labels are added to the Pod. Keys removed here are removed from the Pod again.
	// +optional
	Labels map[string]string `json:"labels,omitempty" protobuf:"bytes,1,rep,name=labels"`

	// annotations are added to the Pod. Keys removed here are removed from the Pod again.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,2,rep,name=annotations"`
}

// EmbeddedObjectMetadata is the part of object metadata a volume claim template carries.
type EmbeddedObjectMetadata struct {
	// name of the volume claim template. The PersistentVolumeClaim is named <name>-<sandbox name>,
	// and a Pod volume of this name is added to the Pod.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`

	// labels are added to the PersistentVolumeClaim.
	// +optional
	Labels map[string]string `json:"labels,omitempty" protobuf:"bytes,2,rep,name=labels"`

	// annotations are added to the PersistentVolumeClaim.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,3,rep,name=annotations"`
}

// PodTemplate describes the Pod of a Sandbox.
type PodTemplate struct {
	// spec is the full specification of the Pod. The Pod is named after the Sandbox.
	Spec corev1.PodSpec `json:"spec" protobuf:"bytes,1,opt,name=spec"`

	// metadata holds the labels and annotations put on the Pod.
	// +optional
	ObjectMeta PodMetadata `json:"metadata,omitempty" protobuf:"bytes,2,opt,name=metadata"`
}

// PersistentVolumeClaimTemplate describes a PersistentVolumeClaim made for a Sandbox.
type PersistentVolumeClaimTemplate struct {
	// metadata of the claim; name is required.
	EmbeddedObjectMetadata `json:"metadata" protobuf:"bytes,1,opt,name=metadata"`

	// spec is the specification of the PersistentVolumeClaim. Every claim needs at least one
	// access mode that a provisioner in the cluster supports.
	Spec corev1.PersistentVolumeClaimSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
}

// Lifecycle holds the expiry settings of a Sandbox.
type Lifecycle struct {
	// shutdownTime is the absolute time (RFC 3339) at which the Sandbox expires. Its Pod and Service
	// are deleted then; its PersistentVolumeClaims stay until the Sandbox is deleted. Unset means
	// the Sandbox never expires.
	// +optional
	ShutdownTime *metav1.Time `json:"shutdownTime,omitempty" protobuf:"bytes,1,opt,name=shutdownTime"`

	// shutdownPolicy says what happens to the Sandbox itself once it has expired: Delete removes it,
	// Retain (the default) keeps it with a Ready=False condition of reason SandboxExpired. Underlying
	// resources (Pods, Services) are always deleted on expiry.
	// +optional
	// +default="Retain"
	ShutdownPolicy *ShutdownPolicy `json:"shutdownPolicy,omitempty" protobuf:"bytes,2,opt,name=shutdownPolicy,casttype=ShutdownPolicy"`
}

// SandboxSpec is the desired state of a Sandbox.
type SandboxSpec struct {
	// podTemplate describes the Pod the controller runs for this Sandbox.
	PodTemplate PodTemplate `json:"podTemplate" protobuf:"bytes,1,opt,name=podTemplate"`

	// volumeClaimTemplates lists the PersistentVolumeClaims made for this Sandbox. Each one is named
	// <template name>-<sandbox name> and mounted as the Pod volume of the template's name. The list
	// is replaced as a whole on update.
	// +optional
	// +listType=atomic
	VolumeClaimTemplates []PersistentVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty" protobuf:"bytes,2,rep,name=volumeClaimTemplates"`

	// Lifecycle holds shutdownTime and shutdownPolicy, inlined into spec.
	Lifecycle `json:",inline" protobuf:"bytes,3,opt,name=lifecycle"`

	// idleTimeout suspends the Sandbox (replicas 0, PersistentVolumeClaims kept, as a user's
	// suspend) once it has had no request or open connection through the sandboxes/proxy or
	// sandboxclaims/proxy subresource for this long (a duration such as "15m"), counted from
	// status.lastActivityTime or from when it last became Ready, whichever is later. The next
	// request through the proxy resumes it. At least 10s. Unset: never suspended for idleness.
	// +optional
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty" protobuf:"bytes,7,opt,name=idleTimeout"`

	// replicas is 1 (the default) to run the Pod and 0 to suspend the Sandbox: the Pod is deleted and
	// its PersistentVolumeClaims are kept. It is the spec path of the scale subresource. It is kept
	// in step with operatingMode (1: Running, 0: Suspended): set either one, and a write that changes
	// one changes the other.
	// +optional
	// +default=1
	// +k8s:validation:minimum=0
	// +k8s:validation:maximum=1
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,4,opt,name=replicas"`

	// operatingMode is Running (the default) or Suspended: the same choice as replicas 1 or 0, in
	// the shape of the agent-sandbox v1.0 API. The two are kept in step: a create sets whichever is
	// missing from the other (both given and disagreeing is refused), and an update that changes one
	// changes the other, so kubectl scale --replicas=0 shows Suspended here.
	// +optional
	OperatingMode OperatingMode `json:"operatingMode,omitempty" protobuf:"bytes,5,opt,name=operatingMode,casttype=OperatingMode"`

	// service controls the headless Service of this Sandbox. true creates (or adopts) one named after
	// the Sandbox, false deletes the one the controller owns, and unset keeps an existing Service but
	// creates none.
	// +optional
	Service *bool `json:"service,omitempty" protobuf:"varint,6,opt,name=service"`
}

// SandboxStatus is the observed state of a Sandbox.
type SandboxStatus struct {
	// serviceFQDN is the fully qualified DNS name of the Sandbox's Service, valid for the cluster
	// domain the controller was configured with (cluster.local by default).
	// +optional
	ServiceFQDN string `json:"serviceFQDN,omitempty" protobuf:"bytes,1,opt,name=serviceFQDN"`

	// service is the name of the Service of this Sandbox, when it has one.
	// +optional
	Service string `json:"service,omitempty" protobuf:"bytes,2,opt,name=service"`

	// conditions are Ready, Suspended and Finished, and PodScheduled mirrored from the Pod (its
	// status, reason and message) while there is one.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" protobuf:"bytes,3,rep,name=conditions"`

	// replicas is the number of Pods running for this Sandbox (0 or 1), the status path of the scale
	// subresource.
	// +optional
	Replicas int32 `json:"replicas,omitempty" protobuf:"varint,4,opt,name=replicas"`

	// selector is the label selector of the Sandbox's Pod in string form, for the scale subresource.
	// +optional
	LabelSelector string `json:"selector,omitempty" protobuf:"bytes,5,opt,name=selector"`

	// podIPs are the IP addresses of the Pod; more than one on dual-stack clusters.
	// +optional
	// +listType=atomic
	PodIPs []string `json:"podIPs,omitempty" protobuf:"bytes,6,rep,name=podIPs"`

	// nodeName is the node the Pod is scheduled to; empty while it is not scheduled or there is no
	// Pod.
	// +optional
	NodeName string `json:"nodeName,omitempty" protobuf:"bytes,7,opt,name=nodeName"`

	// lastActivityTime is when a request or connection through the proxy subresources was last
	// seen. The server replicas write it at most every few seconds while there is traffic, not once
	// per request; spec.idleTimeout counts from it.
	// +optional
	LastActivityTime *metav1.Time `json:"lastActivityTime,omitempty" protobuf:"bytes,8,opt,name=lastActivityTime"`
}
