// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package validation checks Sandboxes, and the pod and volume claim templates that the extensions
// group embeds, before they are stored. Every function reports all the errors of an object at
// once, each with the path of the field it is about.
package validation

import (
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

// ValidateSandboxName checks the name of a Sandbox. The controller names the children of a Sandbox
// after it: the Pod and the PersistentVolumeClaims (<template>-<sandbox>) only need DNS-1123
// subdomains, but the headless Service is named after the Sandbox too, and Service names must be
// DNS-1035 labels (at most 63 characters, lower-case alphanumerics and '-', starting with a
// letter). A Sandbox whose Service could never be created is refused here rather than failing in
// the controller later, so Sandbox names are DNS-1035 labels.
var ValidateSandboxName = apimachineryvalidation.NameIsDNS1035Label

// supportedShutdownPolicies are the values of spec.shutdownPolicy.
var supportedShutdownPolicies = []agents.ShutdownPolicy{agents.ShutdownPolicyDelete, agents.ShutdownPolicyRetain}

// supportedOperatingModes are the values of spec.operatingMode.
var supportedOperatingModes = []agents.OperatingMode{agents.OperatingModeRunning, agents.OperatingModeSuspended}

// ReplicasOfMode is the spec.replicas an operating mode stands for.
func ReplicasOfMode(mode agents.OperatingMode) int32 {
	if mode == agents.OperatingModeSuspended {
		return 0
	}
	return 1
}

// ModeOfReplicas is the operating mode spec.replicas stands for: Suspended for 0, Running for 1,
// and empty for a value a Sandbox cannot have.
func ModeOfReplicas(replicas int32) agents.OperatingMode {
	switch replicas {
	case 0:
		return agents.OperatingModeSuspended
	case 1:
		return agents.OperatingModeRunning
	}
	return ""
}

// ValidateSandbox validates a Sandbox on create.
func ValidateSandbox(s *agents.Sandbox) field.ErrorList {
	allErrs := ValidateObjectMeta(&s.ObjectMeta, ValidateSandboxName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSandboxSpec(&s.Spec, s.Name, field.NewPath("spec"))...)
	return allErrs
}

// ValidateSandboxUpdate validates an update of a Sandbox's metadata and spec.
//
// What may change:
//   - spec.volumeClaimTemplates is immutable: the PersistentVolumeClaims made from it exist already
//     and the controller never resizes, re-creates or re-binds them, so a changed list would only
//     make the spec lie about the volumes the Pod has.
//   - spec.podTemplate stays mutable: its labels and annotations are propagated to the running Pod
//     (a claim that adopts a warm Sandbox rewrites them), and its spec is used for the next Pod the
//     controller creates, after a suspend (replicas 0, then 1) or once the Pod is gone.
//   - spec.replicas (the scale subresource) and spec.operatingMode, kept in step by the strategy,
//     spec.service, spec.shutdownTime, spec.shutdownPolicy and spec.idleTimeout are what users and
//     controllers change during a Sandbox's life.
func ValidateSandboxUpdate(newS, oldS *agents.Sandbox) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(&newS.ObjectMeta, &oldS.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateSandboxSpec(&newS.Spec, newS.Name, specPath)...)
	if !apiequality.Semantic.DeepEqual(newS.Spec.VolumeClaimTemplates, oldS.Spec.VolumeClaimTemplates) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("volumeClaimTemplates"), field.OmitValueType{},
			"field is immutable: the PersistentVolumeClaims made from it already exist"))
	}
	return allErrs
}

// ValidateSandboxStatusUpdate validates an update of a Sandbox's status (the spec is not looked at:
// the status strategy keeps the old one).
func ValidateSandboxStatusUpdate(newS, oldS *agents.Sandbox) field.ErrorList {
	allErrs := ValidateObjectMetaUpdate(&newS.ObjectMeta, &oldS.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	st := &newS.Status
	if st.Replicas < 0 || st.Replicas > 1 {
		allErrs = append(allErrs, field.Invalid(statusPath.Child("replicas"), st.Replicas, utilvalidation.InclusiveRangeError(0, 1)))
	}
	allErrs = append(allErrs, metav1validation.ValidateConditions(st.Conditions, statusPath.Child("conditions"))...)
	allErrs = append(allErrs, ValidateConditionTimes(st.Conditions, statusPath.Child("conditions"))...)
	allErrs = append(allErrs, ValidateSelectorString(st.LabelSelector, statusPath.Child("selector"))...)
	allErrs = append(allErrs, ValidatePodIPs(st.PodIPs, statusPath.Child("podIPs"))...)
	allErrs = append(allErrs, ValidateOptionalTime(st.LastActivityTime, statusPath.Child("lastActivityTime"))...)
	if st.NodeName != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(st.NodeName, false) {
			allErrs = append(allErrs, field.Invalid(statusPath.Child("nodeName"), st.NodeName, msg))
		}
	}
	return allErrs
}

func validateSandboxSpec(spec *agents.SandboxSpec, name string, fldPath *field.Path) field.ErrorList {
	allErrs := ValidatePodTemplate(&spec.PodTemplate, spec.VolumeClaimTemplates, fldPath.Child("podTemplate"))

	vctPath := fldPath.Child("volumeClaimTemplates")
	vctErrs := ValidateVolumeClaimTemplates(spec.VolumeClaimTemplates, vctPath)
	allErrs = append(allErrs, vctErrs...)
	// The PersistentVolumeClaim names are only checked once both of their parts are valid on their
	// own, so one bad name is not reported twice.
	if len(vctErrs) == 0 && name != "" && len(ValidateSandboxName(name, false)) == 0 {
		allErrs = append(allErrs, ValidateVolumeClaimNames(spec.VolumeClaimTemplates, name, vctPath)...)
	}

	if r := spec.Replicas; r != nil && (*r < 0 || *r > 1) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("replicas"), *r, utilvalidation.InclusiveRangeError(0, 1)))
	}
	modePath := fldPath.Child("operatingMode")
	switch mode := spec.OperatingMode; {
	case mode == "":
	case !slices.Contains(supportedOperatingModes, mode):
		allErrs = append(allErrs, field.NotSupported(modePath, mode, supportedOperatingModes))
	case spec.Replicas != nil && ModeOfReplicas(*spec.Replicas) != "" && ModeOfReplicas(*spec.Replicas) != mode:
		allErrs = append(allErrs, field.Invalid(modePath, mode,
			fmt.Sprintf("must agree with spec.replicas (%d): Running is replicas 1, Suspended is replicas 0", *spec.Replicas)))
	}
	allErrs = append(allErrs, ValidateOptionalTime(spec.ShutdownTime, fldPath.Child("shutdownTime"))...)
	allErrs = append(allErrs, ValidateIdleTimeout(spec.IdleTimeout, fldPath.Child("idleTimeout"))...)
	if p := spec.ShutdownPolicy; p != nil && !slices.Contains(supportedShutdownPolicies, *p) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("shutdownPolicy"), *p, supportedShutdownPolicies))
	}
	return allErrs
}

// ValidateSelectorString checks a label selector written in its string form, as status.selector
// is for the scale subresource: it must convert to a structured LabelSelector (so no != or
// numeric operators), since that is what the scale subresource serves.
func ValidateSelectorString(selector string, fldPath *field.Path) field.ErrorList {
	if selector == "" {
		return nil
	}
	if _, err := metav1.ParseToLabelSelector(selector); err != nil {
		return field.ErrorList{field.Invalid(fldPath, selector, err.Error())}
	}
	return nil
}

// ValidatePodIPs checks that every entry is an IP address, as the status of a Sandbox or a claim
// reports its Pod's addresses.
func ValidatePodIPs(ips []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ip := range ips {
		allErrs = append(allErrs, utilvalidation.IsValidIP(fldPath.Index(i), ip)...)
	}
	return allErrs
}
