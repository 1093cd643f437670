// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package validation checks SandboxClaims, SandboxTemplates and SandboxWarmPools before they are
// stored. Every function reports all the errors of an object at once, each with the path of the
// field it is about. The pod and volume claim templates embedded from agents.x-k8s.io are checked
// by that group's validation.
package validation

import (
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

// NetworkPolicySuffix is appended to a template's name to name its NetworkPolicy.
const NetworkPolicySuffix = "-network-policy"

// MaxSandboxTemplateNameLength leaves room in a DNS-1123 subdomain for NetworkPolicySuffix.
const MaxSandboxTemplateNameLength = utilvalidation.DNS1123SubdomainMaxLength - len(NetworkPolicySuffix)

// WarmPoolMemberSuffixLength is the length of the "-xxxxx" suffix (a dash and five random
// characters) that makes a warm pool member's name from the pool's name.
const WarmPoolMemberSuffixLength = 6

// MaxSandboxWarmPoolNameLength leaves room in a Sandbox name (a DNS-1035 label) for the suffix.
const MaxSandboxWarmPoolNameLength = utilvalidation.DNS1035LabelMaxLength - WarmPoolMemberSuffixLength

// ValidateSandboxTemplateName checks the name of a SandboxTemplate. Its NetworkPolicy is named
// <name>-network-policy, which must be a DNS-1123 subdomain (at most 253 characters), so the name
// is a DNS-1123 subdomain of at most 238 characters.
func ValidateSandboxTemplateName(name string, prefix bool) []string {
	errs := apimachineryvalidation.NameIsDNSSubdomain(name, prefix)
	if !prefix && len(name) > MaxSandboxTemplateNameLength && len(name) <= utilvalidation.DNS1123SubdomainMaxLength {
		errs = append(errs, utilvalidation.MaxLenError(MaxSandboxTemplateNameLength)+
			" (the NetworkPolicy of the template is named <name>"+NetworkPolicySuffix+")")
	}
	return errs
}

// ValidateSandboxWarmPoolName checks the name of a SandboxWarmPool. The pool names its members
// <pool>-<5 random characters>, and they must be valid Sandbox names (DNS-1035 labels of at most 63
// characters, because each gets a Service of its name), so the pool name is a DNS-1035 label of at
// most 57 characters.
func ValidateSandboxWarmPoolName(name string, prefix bool) []string {
	errs := apimachineryvalidation.NameIsDNS1035Label(name, prefix)
	if !prefix && len(name) > MaxSandboxWarmPoolNameLength && len(name) <= utilvalidation.DNS1035LabelMaxLength {
		errs = append(errs, utilvalidation.MaxLenError(MaxSandboxWarmPoolNameLength)+
			" (members of the pool are named <pool>-<5 random characters>)")
	}
	return errs
}

// validateTemplateRef checks a reference to a SandboxTemplate by name, at fldPath
// (spec.sandboxTemplateRef).
func validateTemplateRef(ref *extensions.SandboxTemplateRef, fldPath *field.Path) field.ErrorList {
	namePath := fldPath.Child("name")
	if ref.Name == "" {
		return field.ErrorList{field.Required(namePath, "the name of a SandboxTemplate in the same namespace")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(ref.Name) {
		allErrs = append(allErrs, field.Invalid(namePath, ref.Name, msg))
	}
	return allErrs
}

// restrictedMetadataDomains are the label and annotation domains a claim may not set on its Pod:
// they belong to Kubernetes itself and to this system's controllers, which use them to find and
// identify pods (claim UID, template and pool hashes).
var restrictedMetadataDomains = []string{"kubernetes.io", "k8s.io", "agents.x-k8s.io"}

// IsRestrictedMetadataKey reports whether a label or annotation key has a prefix whose domain is
// kubernetes.io, k8s.io or agents.x-k8s.io, or a subdomain of one of them ("kubernetes.io/x",
// "foo.k8s.io/x", "x.agents.x-k8s.io/y"). Keys without a prefix are not restricted, nor are
// domains that only end in the same letters ("x-k8s.io/y", "notk8s.io/y").
func IsRestrictedMetadataKey(key string) bool {
	prefix, _, found := strings.Cut(key, "/")
	if !found {
		return false
	}
	domain := strings.ToLower(prefix)
	for _, restricted := range restrictedMetadataDomains {
		if domain == restricted || strings.HasSuffix(domain, "."+restricted) {
			return true
		}
	}
	return false
}
