// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"net/netip"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	agentsvalidation "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/validation"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

var supportedNetworkPolicyManagement = []extensions.NetworkPolicyManagement{
	extensions.NetworkPolicyManagementManaged, extensions.NetworkPolicyManagementUnmanaged,
}

var supportedEnvVarsInjectionPolicies = []extensions.EnvVarsInjectionPolicy{
	extensions.EnvVarsInjectionPolicyAllowed, extensions.EnvVarsInjectionPolicyOverrides, extensions.EnvVarsInjectionPolicyDisallowed,
}

var supportedVolumeClaimTemplatesPolicies = []extensions.VolumeClaimTemplatesPolicy{
	extensions.VolumeClaimTemplatesPolicyDisallowed, extensions.VolumeClaimTemplatesPolicyAllowed, extensions.VolumeClaimTemplatesPolicyOverrides,
}

var supportedNetworkPolicyProtocols = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}

// ValidateSandboxTemplate validates a SandboxTemplate on create.
func ValidateSandboxTemplate(t *extensions.SandboxTemplate) field.ErrorList {
	allErrs := agentsvalidation.ValidateObjectMeta(&t.ObjectMeta, ValidateSandboxTemplateName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSandboxTemplateSpec(&t.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateSandboxTemplateUpdate validates an update of a SandboxTemplate.
//
// The whole spec stays mutable. A template is only read when something is made from it: sandboxes
// that exist keep what they were made from (a claim's Sandbox is never rebuilt), warm pools see
// their members as stale and replace them as their updateStrategy says, and the template's
// NetworkPolicy is updated in place. Changing the volume claim templates here does not touch the
// PersistentVolumeClaims of existing sandboxes; only new sandboxes get the new ones.
func ValidateSandboxTemplateUpdate(newT, oldT *extensions.SandboxTemplate) field.ErrorList {
	allErrs := agentsvalidation.ValidateObjectMetaUpdate(&newT.ObjectMeta, &oldT.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSandboxTemplateSpec(&newT.Spec, field.NewPath("spec"))...)
	return allErrs
}

func validateSandboxTemplateSpec(spec *extensions.SandboxTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := agentsvalidation.ValidatePodTemplate(&spec.PodTemplate, spec.VolumeClaimTemplates, fldPath.Child("podTemplate"))
	allErrs = append(allErrs, agentsvalidation.ValidateVolumeClaimTemplates(spec.VolumeClaimTemplates, fldPath.Child("volumeClaimTemplates"))...)
	allErrs = append(allErrs, agentsvalidation.ValidateIdleTimeout(spec.IdleTimeout, fldPath.Child("idleTimeout"))...)

	if !slices.Contains(supportedNetworkPolicyManagement, spec.NetworkPolicyManagement) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("networkPolicyManagement"), spec.NetworkPolicyManagement, supportedNetworkPolicyManagement))
	}
	if !slices.Contains(supportedEnvVarsInjectionPolicies, spec.EnvVarsInjectionPolicy) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("envVarsInjectionPolicy"), spec.EnvVarsInjectionPolicy, supportedEnvVarsInjectionPolicies))
	}
	if !slices.Contains(supportedVolumeClaimTemplatesPolicies, spec.VolumeClaimTemplatesPolicy) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("volumeClaimTemplatesPolicy"), spec.VolumeClaimTemplatesPolicy, supportedVolumeClaimTemplatesPolicies))
	}
	if np := spec.NetworkPolicy; np != nil {
		allErrs = append(allErrs, validateNetworkPolicySpec(np, fldPath.Child("networkPolicy"))...)
	}
	allErrs = append(allErrs, validateEnvVarsInjectionContainers(spec, fldPath.Child("envVarsInjectionContainers"))...)
	if a := spec.AllowedClaimPodMetadata; a != nil {
		metaPath := fldPath.Child("allowedClaimPodMetadata")
		allErrs = append(allErrs, validateAllowedKeys(a.Labels, metaPath.Child("labels"))...)
		allErrs = append(allErrs, validateAllowedKeys(a.Annotations, metaPath.Child("annotations"))...)
	}
	if o := spec.ClaimVolumeClaimTemplates; o != nil {
		allErrs = append(allErrs, validateClaimVolumeClaimTemplates(o, fldPath.Child("claimVolumeClaimTemplates"))...)
	}
	if d := spec.EnvVarsDelivery; d != nil {
		allErrs = append(allErrs, validateEnvVarsDelivery(d, fldPath.Child("envVarsDelivery"))...)
	}
	return allErrs
}

// MaxEnvVarsDeliveryTimeoutSeconds bounds a delivery: the claim waits for it before it is Ready,
// and the controller's worker waits with it.
const MaxEnvVarsDeliveryTimeoutSeconds = 300

// validateEnvVarsDelivery checks that exactly one way is given: an absolute, clean file path
// (it is quoted into a shell command, so no NUL or newline either), or a command with a program.
func validateEnvVarsDelivery(d *extensions.EnvVarsDelivery, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case d.File == "" && len(d.Command) == 0:
		allErrs = append(allErrs, field.Required(fldPath, "one of file and command is required"))
	case d.File != "" && len(d.Command) > 0:
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("command"), "may not be set with file: give one way of delivery"))
	}
	if f := d.File; f != "" {
		switch {
		case !path.IsAbs(f) || path.Clean(f) != f || f == "/":
			allErrs = append(allErrs, field.Invalid(fldPath.Child("file"), f, "must be an absolute, clean path to a file"))
		case strings.ContainsAny(f, "\x00\n"):
			allErrs = append(allErrs, field.Invalid(fldPath.Child("file"), f, "must not contain NUL or newline"))
		}
	}
	if len(d.Command) > 0 && d.Command[0] == "" {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("command").Index(0), "", "must name the program to run"))
	}
	if t := d.TimeoutSeconds; t != nil && (*t < 1 || *t > MaxEnvVarsDeliveryTimeoutSeconds) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("timeoutSeconds"), *t, fmt.Sprintf("must be between 1 and %d", MaxEnvVarsDeliveryTimeoutSeconds)))
	}
	return allErrs
}

// validateClaimVolumeClaimTemplates checks what a template opens to its claims' volumes: PVC spec
// fields it knows, valid class names, once each, and bounds within MaxClaimVolumes and above zero.
func validateClaimVolumeClaimTemplates(o *extensions.ClaimVolumeClaimTemplates, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for i, name := range o.AllowedFields {
		p := fldPath.Child("allowedFields").Index(i)
		switch {
		case seen[name]:
			allErrs = append(allErrs, field.Duplicate(p, name))
		case !slices.Contains(OpenableClaimVolumeSpecFields, name):
			allErrs = append(allErrs, field.NotSupported(p, name, OpenableClaimVolumeSpecFields))
		}
		seen[name] = true
	}
	classes := map[string]bool{}
	for i, name := range o.StorageClassNames {
		p := fldPath.Child("storageClassNames").Index(i)
		if classes[name] {
			allErrs = append(allErrs, field.Duplicate(p, name))
		}
		classes[name] = true
		if name == "" {
			continue // the class of unclassed PersistentVolumes
		}
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, false) {
			allErrs = append(allErrs, field.Invalid(p, name, msg))
		}
	}
	if n := o.MaxCount; n != nil && (*n < 1 || *n > MaxClaimVolumes) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxCount"), *n, fmt.Sprintf("must be between 1 and %d", MaxClaimVolumes)))
	}
	if q := o.MaxStorage; q != nil && q.Sign() <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxStorage"), q.String(), "must be positive"))
	}
	return allErrs
}

// validateEnvVarsInjectionContainers checks that each container named is one of the pod
// template's, once.
func validateEnvVarsInjectionContainers(spec *extensions.SandboxTemplateSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	pod := &spec.PodTemplate.Spec
	seen := map[string]bool{}
	for i, name := range spec.EnvVarsInjectionContainers {
		p := fldPath.Index(i)
		if seen[name] {
			allErrs = append(allErrs, field.Duplicate(p, name))
			continue
		}
		seen[name] = true
		isContainer := func(c corev1.Container) bool { return c.Name == name }
		if !slices.ContainsFunc(pod.Containers, isContainer) && !slices.ContainsFunc(pod.InitContainers, isContainer) {
			allErrs = append(allErrs, field.NotFound(p, name))
		}
	}
	return allErrs
}

// validateAllowedKeys checks the pod metadata keys a template opens to claims: valid keys, once,
// none in a reserved domain (claims never set those).
func validateAllowedKeys(keys []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for i, k := range keys {
		p := fldPath.Index(i)
		for _, msg := range utilvalidation.IsQualifiedName(k) {
			allErrs = append(allErrs, field.Invalid(p, k, msg))
		}
		switch {
		case seen[k]:
			allErrs = append(allErrs, field.Duplicate(p, k))
		case IsRestrictedMetadataKey(k):
			allErrs = append(allErrs, field.Invalid(p, k, "keys in the kubernetes.io, k8s.io and agents.x-k8s.io domains are reserved: claims may never set them"))
		}
		seen[k] = true
	}
	return allErrs
}

// validateNetworkPolicySpec checks the rules the controller copies into the template's
// NetworkPolicy, so that a policy kube-apiserver would refuse is refused here already.
func validateNetworkPolicySpec(np *extensions.NetworkPolicySpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, rule := range np.Ingress {
		rulePath := fldPath.Child("ingress").Index(i)
		for j := range rule.Ports {
			allErrs = append(allErrs, validateNetworkPolicyPort(&rule.Ports[j], rulePath.Child("ports").Index(j))...)
		}
		for j := range rule.From {
			allErrs = append(allErrs, validateNetworkPolicyPeer(&rule.From[j], rulePath.Child("from").Index(j))...)
		}
	}
	for i, rule := range np.Egress {
		rulePath := fldPath.Child("egress").Index(i)
		for j := range rule.Ports {
			allErrs = append(allErrs, validateNetworkPolicyPort(&rule.Ports[j], rulePath.Child("ports").Index(j))...)
		}
		for j := range rule.To {
			allErrs = append(allErrs, validateNetworkPolicyPeer(&rule.To[j], rulePath.Child("to").Index(j))...)
		}
	}
	return allErrs
}

func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if p := port.Protocol; p != nil && !slices.Contains(supportedNetworkPolicyProtocols, *p) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("protocol"), *p, supportedNetworkPolicyProtocols))
	}

	portPath := fldPath.Child("port")
	if port.Port != nil {
		if port.Port.Type == intstr.Int {
			for _, msg := range utilvalidation.IsValidPortNum(int(port.Port.IntVal)) {
				allErrs = append(allErrs, field.Invalid(portPath, port.Port.IntVal, msg))
			}
		} else {
			for _, msg := range utilvalidation.IsValidPortName(port.Port.StrVal) {
				allErrs = append(allErrs, field.Invalid(portPath, port.Port.StrVal, msg))
			}
		}
	}

	if port.EndPort != nil {
		endPath := fldPath.Child("endPort")
		end := *port.EndPort
		switch {
		case port.Port == nil:
			allErrs = append(allErrs, field.Required(portPath, "must be set when endPort is set"))
		case port.Port.Type != intstr.Int:
			allErrs = append(allErrs, field.Invalid(endPath, end, "may only be set when port is a number"))
		case end < port.Port.IntVal:
			allErrs = append(allErrs, field.Invalid(endPath, end, "must be greater than or equal to port"))
		default:
			for _, msg := range utilvalidation.IsValidPortNum(int(end)) {
				allErrs = append(allErrs, field.Invalid(endPath, end, msg))
			}
		}
	}
	return allErrs
}

func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	hasSelector := peer.PodSelector != nil || peer.NamespaceSelector != nil
	switch {
	case !hasSelector && peer.IPBlock == nil:
		allErrs = append(allErrs, field.Required(fldPath, "one of podSelector, namespaceSelector or ipBlock is required"))
	case hasSelector && peer.IPBlock != nil:
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("ipBlock"), "may not be set together with podSelector or namespaceSelector"))
	}

	opts := metav1validation.LabelSelectorValidationOptions{}
	if peer.PodSelector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(peer.PodSelector, opts, fldPath.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		allErrs = append(allErrs, validateIPBlock(peer.IPBlock, fldPath.Child("ipBlock"))...)
	}
	return allErrs
}

// validateIPBlock checks cidr and that every except entry is a CIDR strictly inside it. CIDRs are
// checked as kube-apiserver checks NetworkPolicies: no bits set after the prefix length, but
// non-canonical spellings (upper-case IPv6) are accepted.
func validateIPBlock(b *networkingv1.IPBlock, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	cidrPath := fldPath.Child("cidr")
	var block netip.Prefix
	if b.CIDR == "" {
		allErrs = append(allErrs, field.Required(cidrPath, ""))
	} else if errs := utilvalidation.IsValidCIDRForLegacyField(cidrPath, b.CIDR, true, nil); len(errs) > 0 {
		allErrs = append(allErrs, errs...)
	} else {
		block, _ = netip.ParsePrefix(b.CIDR)
	}

	for i, except := range b.Except {
		exceptPath := fldPath.Child("except").Index(i)
		if errs := utilvalidation.IsValidCIDRForLegacyField(exceptPath, except, true, nil); len(errs) > 0 {
			allErrs = append(allErrs, errs...)
			continue
		}
		if !block.IsValid() {
			continue
		}
		inner, err := netip.ParsePrefix(except)
		if err != nil {
			continue
		}
		if inner.Addr().Is4() != block.Addr().Is4() || inner.Bits() <= block.Bits() || !block.Contains(inner.Addr()) {
			allErrs = append(allErrs, field.Invalid(exceptPath, except, "must be a strict subset of cidr "+b.CIDR))
		}
	}
	return allErrs
}
