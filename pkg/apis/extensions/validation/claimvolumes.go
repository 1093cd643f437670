// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A claim's volume claim templates become PersistentVolumeClaims the server creates with its own
// rights, so a claim may only ask for new, empty storage of a kind the platform offers: the PVC
// spec fields in claimVolumeSpecFields, a storage class one of its template's own volume claim
// templates uses, within a count and a total size. Everything else a PVC spec can say (a data
// source to clone or restore someone's data from, a volume name or selector that binds an existing
// PersistentVolume, a volume attributes class, and whatever a later Kubernetes adds) is refused by
// name: this is an allow list.
var claimVolumeSpecFields = []string{"accessModes", "resources", "volumeMode", "storageClassName"}

// OpenableClaimVolumeSpecFields are the PVC spec fields a template may open to its claims' volumes
// (spec.claimVolumeClaimTemplates.allowedFields): every other field of the PVC spec this server
// knows.
var OpenableClaimVolumeSpecFields = func() []string {
	var names []string
	t := reflect.TypeFor[corev1.PersistentVolumeClaimSpec]()
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); !slices.Contains(claimVolumeSpecFields, name) {
			names = append(names, name)
		}
	}
	return names
}()

const (
	// DefaultClaimVolumeMaxCount is how many volume claim templates one claim may add.
	DefaultClaimVolumeMaxCount = 8
	// MaxClaimVolumes bounds a claim's volume claim templates whatever its template says.
	MaxClaimVolumes = 64
)

// DefaultClaimVolumeMaxStorage is the storage all of one claim's volumes may request together.
var DefaultClaimVolumeMaxStorage = resource.MustParse("100Gi")

// ClaimVolume is what the checks read of one of a claim's volume claim templates; both API
// versions' types fill it.
type ClaimVolume struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Spec        *corev1.PersistentVolumeClaimSpec
}

// ClaimVolumePolicy is what a template opens to its claims' volumes.
type ClaimVolumePolicy struct {
	// StorageClassNames are the classes claims may name: those of the template's own volume claim
	// templates and those it opens.
	StorageClassNames []string
	// AllowedFields are the PVC spec fields the template opens besides claimVolumeSpecFields.
	AllowedFields []string
	MaxCount      int
	MaxStorage    resource.Quantity
	// PodVolumes are the names of the volumes the template's pod declares, which no claim volume
	// may take.
	PodVolumes []string
	// Metadata is what the template opens to claims' pod metadata; volumes follow the same rules.
	Metadata ClaimMetadataPolicy
}

// ClaimMetadataPolicy is the part of a template that decides which metadata keys claims may set:
// its allowedClaimPodMetadata (nil lists: none given) and the label keys its NetworkPolicy admits
// peers by.
type ClaimMetadataPolicy struct {
	AllowedLabels, AllowedAnnotations, PeerKeys []string
}

// NewClaimVolumePolicy is the policy of a template whose volume claim templates name the given
// storage classes (nil: the cluster default) and whose pod declares podVolumes.
func NewClaimVolumePolicy(classes []*string, podVolumes []corev1.Volume, metadata ClaimMetadataPolicy) ClaimVolumePolicy {
	p := ClaimVolumePolicy{MaxCount: DefaultClaimVolumeMaxCount, MaxStorage: DefaultClaimVolumeMaxStorage, Metadata: metadata}
	for _, c := range classes {
		if c != nil && !slices.Contains(p.StorageClassNames, *c) {
			p.StorageClassNames = append(p.StorageClassNames, *c)
		}
	}
	for _, v := range podVolumes {
		p.PodVolumes = append(p.PodVolumes, v.Name)
	}
	return p
}

// Open widens p by what a template's spec.claimVolumeClaimTemplates opens: more PVC spec fields and
// storage classes, and other bounds (unset: the defaults). Nil opens nothing.
func (p *ClaimVolumePolicy) Open(allowedFields, classes []string, maxCount *int32, maxStorage *resource.Quantity) {
	p.AllowedFields = append(p.AllowedFields, allowedFields...)
	for _, c := range classes {
		if !slices.Contains(p.StorageClassNames, c) {
			p.StorageClassNames = append(p.StorageClassNames, c)
		}
	}
	if maxCount != nil {
		p.MaxCount = int(*maxCount)
	}
	if maxStorage != nil {
		p.MaxStorage = maxStorage.DeepCopy()
	}
}

// ValidateClaimVolumes checks a claim's volume claim templates against its template's policy; the
// errors are at fldPath (spec.volumeClaimTemplates).
func ValidateClaimVolumes(vols []ClaimVolume, p ClaimVolumePolicy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(vols) > p.MaxCount {
		allErrs = append(allErrs, field.TooMany(fldPath, len(vols), p.MaxCount))
	}
	var total resource.Quantity
	for i, v := range vols {
		volPath := fldPath.Index(i)
		if slices.Contains(p.PodVolumes, v.Name) {
			allErrs = append(allErrs, field.Forbidden(volPath.Child("metadata", "name"),
				fmt.Sprintf("the template's pod declares a volume %q; a claim volume may not replace it", v.Name)))
		}
		allErrs = append(allErrs, claimVolumeMetadata(v, p.Metadata, volPath.Child("metadata"))...)
		if v.Spec == nil {
			continue
		}
		specPath := volPath.Child("spec")
		allErrs = append(allErrs, claimVolumeSpecFieldsSet(v.Spec, p.AllowedFields, specPath)...)
		if c := v.Spec.StorageClassName; c != nil && !slices.Contains(p.StorageClassNames, *c) {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("storageClassName"), fmt.Sprintf(
				"storage class %q is not one the template offers: those of its volume claim templates and spec.claimVolumeClaimTemplates.storageClassNames (%s)", *c, strings.Join(quoted(p.StorageClassNames), ", "))))
		}
		for _, list := range []corev1.ResourceList{v.Spec.Resources.Requests, v.Spec.Resources.Limits} {
			if q, ok := list[corev1.ResourceStorage]; ok {
				total.Add(q)
				break
			}
		}
	}
	if total.Cmp(p.MaxStorage) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath, fmt.Sprintf(
			"the claim's volumes request %s of storage together; the template allows at most %s", total.String(), p.MaxStorage.String())))
	}
	return allErrs
}

// claimVolumeSpecFieldsSet lists the PVC spec fields set outside claimVolumeSpecFields and the
// template's allowed ones, by their JSON names, found by reflection so that a field a later
// Kubernetes adds is refused too.
func claimVolumeSpecFieldsSet(spec *corev1.PersistentVolumeClaimSpec, allowed []string, specPath *field.Path) field.ErrorList {
	open := strings.Join(append(slices.Clone(claimVolumeSpecFields), allowed...), ", ")
	var allErrs field.ErrorList
	v := reflect.ValueOf(spec).Elem()
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if slices.Contains(claimVolumeSpecFields, name) || slices.Contains(allowed, name) || v.Field(i).IsZero() {
			continue
		}
		allErrs = append(allErrs, field.Forbidden(specPath.Child(name),
			"a claim's volumes are new, empty storage: only "+open+" may be set (a template opens more with spec.claimVolumeClaimTemplates.allowedFields)"))
	}
	return allErrs
}

// claimVolumeMetadata checks a volume's labels and annotations as a claim's pod metadata is
// checked: no reserved domain, nothing the template keeps for itself.
func claimVolumeMetadata(v ClaimVolume, p ClaimMetadataPolicy, metaPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, kind := range []struct {
		name    string
		label   bool
		keys    map[string]string
		allowed []string
	}{{"labels", true, v.Labels, p.AllowedLabels}, {"annotations", false, v.Annotations, p.AllowedAnnotations}} {
		for _, k := range sortedKeys(kind.keys) {
			if why := ClaimPodMetadataRefusal(k, kind.label, kind.allowed, p.PeerKeys); why != "" {
				allErrs = append(allErrs, field.Forbidden(metaPath.Child(kind.name).Key(k), why))
			}
		}
	}
	return allErrs
}

func quoted(names []string) []string {
	if len(names) == 0 {
		return []string{"none"}
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}
