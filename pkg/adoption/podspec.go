// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package adoption

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/validation"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// warmPoolOnlyLabels mark a sandbox as a pool member; they go when a claim takes it.
var warmPoolOnlyLabels = []string{extensionsv1beta1.WarmPoolSandboxLabel, agentsv1beta1.SandboxPodTemplateHashLabel}

// DesiredPodMetadata is the pod metadata of a claim's sandbox: the template's (or, when the
// template is gone, what the sandbox has minus the warm-pool labels), the claim's identity labels,
// and the claim's additionalPodMetadata, which may add keys but never change the template's.
func DesiredPodMetadata(claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate, current *agentsv1beta1.PodMetadata) (agentsv1beta1.PodMetadata, error) {
	var base agentsv1beta1.PodMetadata
	switch {
	case template != nil:
		base = template.Spec.PodTemplate.ObjectMeta
	case current != nil:
		base = *current
	}
	out := agentsv1beta1.PodMetadata{Labels: maps.Clone(base.Labels), Annotations: maps.Clone(base.Annotations)}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for _, k := range warmPoolOnlyLabels {
		delete(out.Labels, k)
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Labels[extensionsv1beta1.SandboxIDLabel] = string(claim.UID)
	out.Labels[extensionsv1beta1.SandboxTemplateRefHashLabel] = objectmeta.NameHash(claim.Spec.TemplateRef.Name)

	extra := claim.Spec.AdditionalPodMetadata
	var peerKeys, allowedLabels, allowedAnnotations []string
	if template != nil {
		peerKeys, allowedLabels, allowedAnnotations = templateMetadataPolicy(template)
	}
	for _, m := range []struct {
		kind        string
		dst, src    map[string]string
		templateSet map[string]string
		allowed     []string
	}{
		{"label", out.Labels, extra.Labels, base.Labels, allowedLabels},
		{"annotation", out.Annotations, extra.Annotations, base.Annotations, allowedAnnotations},
	} {
		for k, v := range m.src {
			// The API refuses these already; a claim stored before those rules, or created
			// before its template, is caught here.
			if validation.IsRestrictedMetadataKey(k) {
				return out, InvalidMetadata("additionalPodMetadata %s %q is in a restricted domain (kubernetes.io, k8s.io, agents.x-k8s.io)", m.kind, k)
			}
			if cur, ok := m.templateSet[k]; ok && cur != v {
				return out, InvalidMetadata("additionalPodMetadata %s %q=%q conflicts with the template's value %q", m.kind, k, v, cur)
			}
			// Repeating the template's own value changes nothing.
			if _, ok := m.templateSet[k]; !ok && template != nil {
				if why := validation.ClaimPodMetadataRefusal(k, m.kind == "label", m.allowed, peerKeys); why != "" {
					return out, InvalidMetadata("additionalPodMetadata %s %q: %s", m.kind, k, why)
				}
			}
			m.dst[k] = v
		}
	}
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out, nil
}

// templateMetadataPolicy is what a template opens to claims' pod metadata: the label keys its
// NetworkPolicy admits peers by, and its allowed label and annotation keys (nil when unlisted).
func templateMetadataPolicy(t *extensionsv1beta1.SandboxTemplate) (peerKeys, labels, annotations []string) {
	np := t.Spec.NetworkPolicy
	if np == nil {
		np = &extensionsv1beta1.NetworkPolicySpec{}
	}
	peerKeys = validation.PeerLabelKeys(t.Spec.NetworkPolicyManagement != extensionsv1beta1.NetworkPolicyManagementUnmanaged, t.Spec.NetworkPolicy != nil, np.Ingress, np.Egress)
	if a := t.Spec.AllowedClaimPodMetadata; a != nil {
		labels, annotations = append([]string{}, a.Labels...), append([]string{}, a.Annotations...)
	}
	return peerKeys, labels, annotations
}

// InjectEnv adds the claim's environment variables to the pod spec of template t as its policy
// allows: Allowed adds new variables, Overrides also replaces the template's, Disallowed refuses.
// Variables without a container go to the first regular container; another container (an init
// container too) only when t's envVarsInjectionContainers names it. Loader and interpreter
// variables (LD_PRELOAD ...) need Overrides.
func InjectEnv(spec *corev1.PodSpec, env []extensionsv1beta1.EnvVar, t *extensionsv1beta1.SandboxTemplate) error {
	if len(env) == 0 {
		return nil
	}
	policy := t.Spec.EnvVarsInjectionPolicy
	if policy != extensionsv1beta1.EnvVarsInjectionPolicyAllowed && policy != extensionsv1beta1.EnvVarsInjectionPolicyOverrides {
		return Refused("environment variable injection is not allowed by the template policy (envVarsInjectionPolicy: %s)", policy)
	}
	first := ""
	if len(spec.Containers) > 0 {
		first = spec.Containers[0].Name
	}
	for _, e := range env {
		if why := validation.ClaimEnvNameRefusal(e.Name, policy == extensionsv1beta1.EnvVarsInjectionPolicyOverrides); why != "" {
			return Refused("environment variable %q is %s", e.Name, why)
		}
		if why := validation.ClaimEnvContainerRefusal(e.ContainerName, first, t.Spec.EnvVarsInjectionContainers); why != "" {
			return Refused("environment variable %q for container %q: %s", e.Name, e.ContainerName, why)
		}
		var target *corev1.Container
		switch {
		case e.ContainerName == "" && len(spec.Containers) > 0:
			target = &spec.Containers[0]
		case e.ContainerName != "":
			for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
				for i := range list {
					if list[i].Name == e.ContainerName {
						target = &list[i]
					}
				}
			}
		}
		if target == nil {
			return Refused("target container %q not found in template for environment variable %q", e.ContainerName, e.Name)
		}
		replaced := false
		for i := range target.Env {
			if target.Env[i].Name != e.Name {
				continue
			}
			if policy != extensionsv1beta1.EnvVarsInjectionPolicyOverrides {
				return Refused("environment variable %q is already set by the template in container %q; overriding it needs envVarsInjectionPolicy: Overrides", e.Name, target.Name)
			}
			target.Env[i] = corev1.EnvVar{Name: e.Name, Value: e.Value}
			replaced = true
		}
		if !replaced {
			target.Env = append(target.Env, corev1.EnvVar{Name: e.Name, Value: e.Value})
		}
	}
	return nil
}

// MergeVolumeClaimTemplates is base (the template's volume claim templates, copied into the new
// sandbox) with the claim's merged in, as the template's volumeClaimTemplatesPolicy allows. The API
// server checked the claim against the policy when it was created; a template changed since then
// is reported here.
func MergeVolumeClaimTemplates(base []agentsv1beta1.PersistentVolumeClaimTemplate, claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate) ([]agentsv1beta1.PersistentVolumeClaimTemplate, error) {
	if len(claim.Spec.VolumeClaimTemplates) == 0 {
		return base, nil
	}
	own := make([]agentsv1beta1.PersistentVolumeClaimTemplate, 0, len(claim.Spec.VolumeClaimTemplates))
	for i := range claim.Spec.VolumeClaimTemplates {
		own = append(own, *claim.Spec.VolumeClaimTemplates[i].DeepCopy())
	}
	policy := template.Spec.VolumeClaimTemplatesPolicy
	if policy != extensionsv1beta1.VolumeClaimTemplatesPolicyAllowed && policy != extensionsv1beta1.VolumeClaimTemplatesPolicyOverrides {
		return nil, Refused("spec.volumeClaimTemplates: SandboxTemplate %s has volumeClaimTemplatesPolicy %q", template.Name, policy)
	}
	if err := checkClaimVolumes(claim, template); err != nil {
		return nil, err
	}
	merged, conflicts := extensions.MergeVolumeClaimTemplates(base, own,
		func(v *agentsv1beta1.PersistentVolumeClaimTemplate) string { return v.Name }, policy == extensionsv1beta1.VolumeClaimTemplatesPolicyOverrides)
	if len(conflicts) > 0 {
		return nil, Refused("spec.volumeClaimTemplates[%d]: SandboxTemplate %s has a volume claim template %q and volumeClaimTemplatesPolicy Allowed",
			conflicts[0], template.Name, own[conflicts[0]].Name)
	}
	return merged, nil
}

// checkClaimVolumes checks the claim's volumes against its template again before the server
// creates PVCs for them with its own rights, as the API did (validation.ValidateClaimVolumes): a
// claim stored before those rules, or a template changed since, is caught here.
func checkClaimVolumes(claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate) error {
	var classes []*string
	for i := range template.Spec.VolumeClaimTemplates {
		classes = append(classes, template.Spec.VolumeClaimTemplates[i].Spec.StorageClassName)
	}
	peerKeys, labels, annotations := templateMetadataPolicy(template)
	policy := validation.NewClaimVolumePolicy(classes, template.Spec.PodTemplate.Spec.Volumes,
		validation.ClaimMetadataPolicy{AllowedLabels: labels, AllowedAnnotations: annotations, PeerKeys: peerKeys})
	if o := template.Spec.ClaimVolumeClaimTemplates; o != nil {
		policy.Open(o.AllowedFields, o.StorageClassNames, o.MaxCount, o.MaxStorage)
	}
	vols := make([]validation.ClaimVolume, 0, len(claim.Spec.VolumeClaimTemplates))
	for i := range claim.Spec.VolumeClaimTemplates {
		v := &claim.Spec.VolumeClaimTemplates[i]
		vols = append(vols, validation.ClaimVolume{Name: v.Name, Labels: v.Labels, Annotations: v.Annotations, Spec: &v.Spec})
	}
	if errs := validation.ValidateClaimVolumes(vols, policy, field.NewPath("spec", "volumeClaimTemplates")); len(errs) > 0 {
		return Refused("%s", errs.ToAggregate().Error())
	}
	return nil
}
