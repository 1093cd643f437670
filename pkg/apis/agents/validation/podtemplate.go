// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

// The pod template is a full PodSpec that kube-apiserver validates again when the controller
// creates the Pod. Only what commonly goes wrong, and what the controller itself relies on, is
// checked here, so that a Sandbox (or a template) that can never get a Pod is refused when it is
// written instead of reporting a ReconcilerError later.

var supportedRestartPolicies = []corev1.RestartPolicy{
	corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever,
}

var supportedAccessModes = []corev1.PersistentVolumeAccessMode{
	corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod,
}

// ValidatePodMetadata checks the labels and annotations that are copied onto a Pod.
func ValidatePodMetadata(m *agents.PodMetadata, fldPath *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateLabels(m.Labels, fldPath.Child("labels"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(m.Annotations, fldPath.Child("annotations"))...)
	return allErrs
}

// ValidatePodTemplate checks a pod template, at fldPath (spec.podTemplate). volumeClaimTemplates
// are the templates of the same spec: the controller adds a Pod volume named after each of them,
// so container volume mounts may refer to them, and no Pod volume may take one of their names.
func ValidatePodTemplate(t *agents.PodTemplate, volumeClaimTemplates []agents.PersistentVolumeClaimTemplate, fldPath *field.Path) field.ErrorList {
	allErrs := ValidatePodMetadata(&t.ObjectMeta, fldPath.Child("metadata"))
	allErrs = append(allErrs, validatePodSpec(&t.Spec, volumeClaimTemplates, fldPath.Child("spec"))...)
	return allErrs
}

func validatePodSpec(spec *corev1.PodSpec, vcts []agents.PersistentVolumeClaimTemplate, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList

	claimVolumes := sets.New[string]()
	for _, vct := range vcts {
		if vct.Name != "" {
			claimVolumes.Insert(vct.Name)
		}
	}

	podVolumes := sets.New[string]()
	for i, v := range spec.Volumes {
		namePath := fldPath.Child("volumes").Index(i).Child("name")
		switch {
		case v.Name == "":
			allErrs = append(allErrs, field.Required(namePath, ""))
		case podVolumes.Has(v.Name):
			allErrs = append(allErrs, field.Duplicate(namePath, v.Name))
		default:
			for _, msg := range utilvalidation.IsDNS1123Label(v.Name) {
				allErrs = append(allErrs, field.Invalid(namePath, v.Name, msg))
			}
		}
		podVolumes.Insert(v.Name)
	}
	// A pod volume named like a volume claim template is allowed: the controller replaces it with
	// the template's PersistentVolumeClaim, as the seed system does.
	mountable := podVolumes.Union(claimVolumes)

	if len(spec.Containers) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("containers"), "at least one container is required"))
	}
	// Container names are unique across regular, init and ephemeral containers, as in a Pod.
	containerNames := sets.New[string]()
	for i := range spec.InitContainers {
		allErrs = append(allErrs, validateContainer(&spec.InitContainers[i], true, containerNames, mountable, fldPath.Child("initContainers").Index(i))...)
	}
	for i := range spec.Containers {
		allErrs = append(allErrs, validateContainer(&spec.Containers[i], true, containerNames, mountable, fldPath.Child("containers").Index(i))...)
	}
	for i := range spec.EphemeralContainers {
		c := (*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)
		allErrs = append(allErrs, validateContainer(c, false, containerNames, mountable, fldPath.Child("ephemeralContainers").Index(i))...)
	}

	if spec.RestartPolicy != "" && !slices.Contains(supportedRestartPolicies, spec.RestartPolicy) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("restartPolicy"), spec.RestartPolicy, supportedRestartPolicies))
	}
	return allErrs
}

// validateContainer checks one container and records its name in names. mountable holds the volume
// names its mounts may refer to.
func validateContainer(c *corev1.Container, requireImage bool, names, mountable sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList

	namePath := fldPath.Child("name")
	switch {
	case c.Name == "":
		allErrs = append(allErrs, field.Required(namePath, ""))
	case names.Has(c.Name):
		allErrs = append(allErrs, field.Duplicate(namePath, c.Name))
	default:
		for _, msg := range utilvalidation.IsDNS1123Label(c.Name) {
			allErrs = append(allErrs, field.Invalid(namePath, c.Name, msg))
		}
	}
	names.Insert(c.Name)

	// kube-apiserver refuses a Pod whose container has no image; refuse the template early.
	if requireImage && strings.TrimSpace(c.Image) == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("image"), ""))
	}

	for i, p := range c.Ports {
		portPath := fldPath.Child("ports").Index(i)
		for _, msg := range utilvalidation.IsValidPortNum(int(p.ContainerPort)) {
			allErrs = append(allErrs, field.Invalid(portPath.Child("containerPort"), p.ContainerPort, msg))
		}
		if p.HostPort != 0 {
			for _, msg := range utilvalidation.IsValidPortNum(int(p.HostPort)) {
				allErrs = append(allErrs, field.Invalid(portPath.Child("hostPort"), p.HostPort, msg))
			}
		}
		if p.Name != "" {
			for _, msg := range utilvalidation.IsValidPortName(p.Name) {
				allErrs = append(allErrs, field.Invalid(portPath.Child("name"), p.Name, msg))
			}
		}
	}

	for i, e := range c.Env {
		allErrs = append(allErrs, ValidateEnvVarName(e.Name, fldPath.Child("env").Index(i).Child("name"))...)
	}

	for i, m := range c.VolumeMounts {
		mountPath := fldPath.Child("volumeMounts").Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(mountPath.Child("name"), ""))
		} else if !mountable.Has(m.Name) {
			allErrs = append(allErrs, field.NotFound(mountPath.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(mountPath.Child("mountPath"), ""))
		}
	}
	return allErrs
}

// ValidateEnvVarName checks the name of an environment variable.
func ValidateEnvVarName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsEnvVarName(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

// ValidateVolumeClaimTemplates checks the volume claim templates of a Sandbox or a template, at
// fldPath (spec.volumeClaimTemplates).
func ValidateVolumeClaimTemplates(vcts []agents.PersistentVolumeClaimTemplate, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i := range vcts {
		vct := &vcts[i]
		metaPath := fldPath.Index(i).Child("metadata")
		namePath := metaPath.Child("name")
		switch {
		case vct.Name == "":
			allErrs = append(allErrs, field.Required(namePath, ""))
		case seen.Has(vct.Name):
			allErrs = append(allErrs, field.Duplicate(namePath, vct.Name))
		default:
			// The name becomes a Pod volume name, which is a DNS-1123 label.
			for _, msg := range utilvalidation.IsDNS1123Label(vct.Name) {
				allErrs = append(allErrs, field.Invalid(namePath, vct.Name, msg))
			}
		}
		seen.Insert(vct.Name)
		allErrs = append(allErrs, metav1validation.ValidateLabels(vct.Labels, metaPath.Child("labels"))...)
		allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(vct.Annotations, metaPath.Child("annotations"))...)

		specPath := fldPath.Index(i).Child("spec")
		if len(vct.Spec.AccessModes) == 0 {
			allErrs = append(allErrs, field.Required(specPath.Child("accessModes"), "at least one access mode is required"))
		}
		for j, mode := range vct.Spec.AccessModes {
			if !slices.Contains(supportedAccessModes, mode) {
				allErrs = append(allErrs, field.NotSupported(specPath.Child("accessModes").Index(j), mode, supportedAccessModes))
			}
		}
		storagePath := specPath.Child("resources", "requests").Key(string(corev1.ResourceStorage))
		if q, ok := vct.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
			allErrs = append(allErrs, field.Required(storagePath, ""))
		} else if q.Sign() <= 0 {
			allErrs = append(allErrs, field.Invalid(storagePath, q.String(), "must be greater than zero"))
		}
	}
	return allErrs
}

// ValidateVolumeClaimNames checks the names of the PersistentVolumeClaims the controller makes for
// the Sandbox sandboxName: <template name>-<sandbox name>, which must be a DNS-1123 subdomain of at
// most 253 characters. The errors are reported on the template's metadata.name under fldPath
// (spec.volumeClaimTemplates). Templates without a name are skipped.
func ValidateVolumeClaimNames(vcts []agents.PersistentVolumeClaimTemplate, sandboxName string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if sandboxName == "" {
		return nil
	}
	for i := range vcts {
		if vcts[i].Name == "" {
			continue
		}
		namePath := fldPath.Index(i).Child("metadata", "name")
		pvcName := vcts[i].Name + "-" + sandboxName
		if len(pvcName) > utilvalidation.DNS1123SubdomainMaxLength {
			allErrs = append(allErrs, field.TooLong(namePath, vcts[i].Name, max(0, utilvalidation.DNS1123SubdomainMaxLength-1-len(sandboxName))))
			continue
		}
		for _, msg := range utilvalidation.IsDNS1123Subdomain(pvcName) {
			allErrs = append(allErrs, field.Invalid(namePath, vcts[i].Name,
				fmt.Sprintf("the PersistentVolumeClaim name %q made from it is invalid: %s", pvcName, msg)))
		}
	}
	return allErrs
}
