// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package agents

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ShutdownPolicy says what happens to a Sandbox when its shutdownTime has passed.
type ShutdownPolicy string

const (
	// ShutdownPolicyDelete deletes the Sandbox after its children.
	ShutdownPolicyDelete ShutdownPolicy = "Delete"
	// ShutdownPolicyRetain keeps the Sandbox, expired, after its children are deleted.
	ShutdownPolicyRetain ShutdownPolicy = "Retain"
)

// OperatingMode is the desired operational state of a Sandbox, kept in step with spec.replicas.
type OperatingMode string

const (
	// OperatingModeRunning runs the Pod (spec.replicas 1).
	OperatingModeRunning OperatingMode = "Running"
	// OperatingModeSuspended deletes the Pod and keeps the volumes (spec.replicas 0).
	OperatingModeSuspended OperatingMode = "Suspended"
)

// MinIdleTimeout is the shortest idle timeout a Sandbox, template or claim may ask for: activity
// is written to status.lastActivityTime every few seconds, so a shorter one could suspend a
// sandbox whose traffic another replica has not written yet.
const MinIdleTimeout = 10 * time.Second

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Sandbox is a single, controller-managed Pod with optional headless Service and volumes.
type Sandbox struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec   SandboxSpec
	Status SandboxStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxList is a list of Sandboxes.
type SandboxList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []Sandbox
}

// PodMetadata is the subset of object metadata that is copied onto a Pod.
type PodMetadata struct {
	Labels      map[string]string
	Annotations map[string]string
}

// EmbeddedObjectMetadata is the subset of object metadata of a volume claim template.
type EmbeddedObjectMetadata struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
}

// PodTemplate describes the Pod of a Sandbox.
type PodTemplate struct {
	Spec       corev1.PodSpec
	ObjectMeta PodMetadata
}

// PersistentVolumeClaimTemplate describes a PersistentVolumeClaim made for a Sandbox.
type PersistentVolumeClaimTemplate struct {
	EmbeddedObjectMetadata
	Spec corev1.PersistentVolumeClaimSpec
}

// Lifecycle holds the expiry settings of a Sandbox.
type Lifecycle struct {
	ShutdownTime   *metav1.Time
	ShutdownPolicy *ShutdownPolicy
}

// SandboxSpec is the desired state of a Sandbox.
type SandboxSpec struct {
	PodTemplate          PodTemplate
	VolumeClaimTemplates []PersistentVolumeClaimTemplate
	Lifecycle
	IdleTimeout   *metav1.Duration
	Replicas      *int32
	OperatingMode OperatingMode
	Service       *bool
}

// SandboxStatus is the observed state of a Sandbox.
type SandboxStatus struct {
	ServiceFQDN      string
	Service          string
	Conditions       []metav1.Condition
	Replicas         int32
	LabelSelector    string
	PodIPs           []string
	NodeName         string
	LastActivityTime *metav1.Time
}
