// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// SandboxMarks and ClaimMarks find, in a write, the marks the controllers trust and only they may set:
// labels and annotations in the agents.x-k8s.io domain (warm-pool membership, template and pod
// template hashes, claim identity, the sandbox a claim is bound to, and any such mark added
// later) and controller references to a SandboxWarmPool or SandboxClaim. A Sandbox carrying them
// would be handed to the next claim as a pool member, or look like a claim's own.
//
// Users keep the keys of the domain that name or describe and that nothing trusts: the
// agents.x-k8s.io/pod-name annotation the seeds give them, naming the pod of a Sandbox, and on any
// object's own metadata the marks the peer's SDKs write on every claim (the created-by label and
// the client-first-requested-at annotation). Every other key of the domain, including any added
// later, stays reserved.

package trust

import (
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

// domain is the domain of the controllers' marks.
const domain = "agents.x-k8s.io"

// The keys of the domain users set themselves: on an object's own metadata, and on a Sandbox's pod
// template (which only the pod-name annotation may name).
var (
	userLabels             = []string{agentsv1beta1.CreatedByLabel}
	userAnnotations        = []string{agentsv1beta1.SandboxPodNameAnnotation, agentsv1beta1.ClientRequestedAtAnnotation}
	podTemplateAnnotations = []string{agentsv1beta1.SandboxPodNameAnnotation}
)

// The API server itself writes these keys of the domain on every create and keeps them on every
// update, whatever the request says, before the strategies validate: the launch-type label (the
// SandboxMarks strategy) and the namespace UID annotation (the SandboxNamespaceLifecycle admission).
// What a request sent for them never reaches storage, so they are not a request's marks.
var (
	serverLabels      = []string{agentsv1beta1.SandboxLaunchTypeLabel}
	serverAnnotations = []string{agentsv1beta1.NamespaceUIDAnnotation}
)

// ownerKinds are the kinds whose controller reference makes a Sandbox theirs.
var ownerKinds = []schema.GroupKind{extensions.Kind("SandboxWarmPool"), extensions.Kind("SandboxClaim")}

const reservedMessage = "reserved for the sandbox-apiserver controllers: only they may set, change or remove it"

// IsReservedKey reports whether a label or annotation key is in the controllers' domain (or a
// subdomain of it).
func IsReservedKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == domain || strings.HasSuffix(prefix, "."+domain))
}

// SandboxMarks lists the marks newS sets (old is nil on create) or changes from old: in its labels
// and annotations, its pod template's and its controller references.
func SandboxMarks(newS, oldS *agents.Sandbox) field.ErrorList {
	var oldMeta *metav1.ObjectMeta
	var oldPod agents.PodMetadata
	if oldS != nil {
		oldMeta, oldPod = &oldS.ObjectMeta, oldS.Spec.PodTemplate.ObjectMeta
	}
	allErrs := objectMeta(&newS.ObjectMeta, oldMeta, field.NewPath("metadata"))
	podPath := field.NewPath("spec", "podTemplate", "metadata")
	newPod := newS.Spec.PodTemplate.ObjectMeta
	allErrs = append(allErrs, keys(newPod.Labels, oldPod.Labels, nil, podPath.Child("labels"))...)
	return append(allErrs, keys(newPod.Annotations, oldPod.Annotations, podTemplateAnnotations, podPath.Child("annotations"))...)
}

// ClaimMarks lists the marks newC sets or changes from old (nil on create): labels and annotations.
func ClaimMarks(newC, oldC *extensions.SandboxClaim) field.ErrorList {
	var oldMeta *metav1.ObjectMeta
	if oldC != nil {
		oldMeta = &oldC.ObjectMeta
	}
	return objectMeta(&newC.ObjectMeta, oldMeta, field.NewPath("metadata"))
}

func objectMeta(newM, oldM *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	if oldM == nil {
		oldM = &metav1.ObjectMeta{}
	}
	allErrs := keys(newM.Labels, oldM.Labels, slices.Concat(serverLabels, userLabels), fldPath.Child("labels"))
	allErrs = append(allErrs, keys(newM.Annotations, oldM.Annotations, slices.Concat(serverAnnotations, userAnnotations), fldPath.Child("annotations"))...)
	return append(allErrs, controllerRefs(newM.OwnerReferences, oldM.OwnerReferences, fldPath.Child("ownerReferences"))...)
}

// keys lists the reserved keys whose presence or value differs between newKeys and oldKeys.
func keys(newKeys, oldKeys map[string]string, allowed []string, fldPath *field.Path) field.ErrorList {
	var changed []string
	for k, v := range newKeys {
		if old, ok := oldKeys[k]; !ok || old != v {
			changed = append(changed, k)
		}
	}
	for k := range oldKeys {
		if _, ok := newKeys[k]; !ok {
			changed = append(changed, k)
		}
	}
	sort.Strings(changed)
	var allErrs field.ErrorList
	for _, k := range changed {
		if IsReservedKey(k) && !slices.Contains(allowed, k) {
			allErrs = append(allErrs, field.Forbidden(fldPath.Key(k), reservedMessage))
		}
	}
	return allErrs
}

// controllerRefs lists the controller references to ownerKinds added to or removed from oldRefs.
func controllerRefs(newRefs, oldRefs []metav1.OwnerReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ref := range newRefs {
		if isOwnerKindController(ref) && !slices.ContainsFunc(oldRefs, sameRef(ref)) {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i),
				"a controller reference to a "+ref.Kind+" is "+reservedMessage))
		}
	}
	for _, ref := range oldRefs {
		if isOwnerKindController(ref) && !slices.ContainsFunc(newRefs, sameRef(ref)) {
			allErrs = append(allErrs, field.Forbidden(fldPath,
				"the controller reference to "+ref.Kind+" "+ref.Name+" is "+reservedMessage))
		}
	}
	return allErrs
}

// isOwnerKindController reports whether ref is a controller reference naming one of ownerKinds'
// kinds, under any apiVersion at all: another version of our group, a bare "v1", a misspelled
// group. The readers compare group, kind and UID (pkg/controllers/ownership) and so would not
// count most of those, but a mark that only some reader ignores is still refused.
func isOwnerKindController(ref metav1.OwnerReference) bool {
	if ref.Controller == nil || !*ref.Controller {
		return false
	}
	return slices.ContainsFunc(ownerKinds, func(gk schema.GroupKind) bool { return strings.EqualFold(ref.Kind, gk.Kind) })
}

func sameRef(ref metav1.OwnerReference) func(metav1.OwnerReference) bool {
	return func(o metav1.OwnerReference) bool {
		return o.UID == ref.UID && o.Kind == ref.Kind && o.Name == ref.Name && o.APIVersion == ref.APIVersion &&
			o.Controller != nil && *o.Controller
	}
}
