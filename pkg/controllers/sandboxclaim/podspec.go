// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/validation"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/naming"
)

// warmPoolOnlyLabels mark a sandbox as a pool member; they go when a claim takes it.
var warmPoolOnlyLabels = []string{extensionsv1beta1.WarmPoolSandboxLabel, agentsv1beta1.SandboxPodTemplateHashLabel}

// desiredPodMetadata is the pod metadata of a claim's sandbox: the template's (or, when the
// template is gone, what the sandbox has minus the warm-pool labels), the claim's identity labels,
// and the claim's additionalPodMetadata, which may add keys but never change the template's.
func desiredPodMetadata(claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate, current *agentsv1beta1.PodMetadata) (agentsv1beta1.PodMetadata, error) {
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
	out.Labels[extensionsv1beta1.SandboxTemplateRefHashLabel] = naming.NameHash(claim.Spec.TemplateRef.Name)

	extra := claim.Spec.AdditionalPodMetadata
	for _, m := range []struct {
		kind        string
		dst, src    map[string]string
		templateSet map[string]string
	}{
		{"label", out.Labels, extra.Labels, base.Labels},
		{"annotation", out.Annotations, extra.Annotations, base.Annotations},
	} {
		for k, v := range m.src {
			// The API refuses these already; a claim stored before that rule is caught here.
			if validation.IsRestrictedMetadataKey(k) {
				return out, invalidMetadata("additionalPodMetadata %s %q is in a restricted domain (kubernetes.io, k8s.io, agents.x-k8s.io)", m.kind, k)
			}
			if cur, ok := m.templateSet[k]; ok && cur != v {
				return out, invalidMetadata("additionalPodMetadata %s %q=%q conflicts with the template's value %q", m.kind, k, v, cur)
			}
			m.dst[k] = v
		}
	}
	if len(out.Annotations) == 0 {
		out.Annotations = nil
	}
	return out, nil
}

// injectEnv adds the claim's environment variables to the pod spec as the template's policy
// allows: Allowed adds new variables, Overrides also replaces the template's, Disallowed refuses.
// Variables without a container go to the first regular container; a named container may be an
// init or a regular one.
func injectEnv(spec *corev1.PodSpec, env []extensionsv1beta1.EnvVar, policy extensionsv1beta1.EnvVarsInjectionPolicy) error {
	if len(env) == 0 {
		return nil
	}
	if policy != extensionsv1beta1.EnvVarsInjectionPolicyAllowed && policy != extensionsv1beta1.EnvVarsInjectionPolicyOverrides {
		return claimRefused("environment variable injection is not allowed by the template policy (envVarsInjectionPolicy: %s)", policy)
	}
	for _, e := range env {
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
			return claimRefused("target container %q not found in template for environment variable %q", e.ContainerName, e.Name)
		}
		replaced := false
		for i := range target.Env {
			if target.Env[i].Name != e.Name {
				continue
			}
			if policy != extensionsv1beta1.EnvVarsInjectionPolicyOverrides {
				return claimRefused("environment variable %q is already set by the template in container %q; overriding it needs envVarsInjectionPolicy: Overrides", e.Name, target.Name)
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

// mergeVolumeClaimTemplates is base (the template's volume claim templates, copied into the new
// sandbox) with the claim's merged in, as the template's volumeClaimTemplatesPolicy allows. The API
// server checked the claim against the policy when it was created; a template changed since then
// is reported here.
func mergeVolumeClaimTemplates(base []agentsv1beta1.PersistentVolumeClaimTemplate, claim *extensionsv1beta1.SandboxClaim, template *extensionsv1beta1.SandboxTemplate) ([]agentsv1beta1.PersistentVolumeClaimTemplate, error) {
	if len(claim.Spec.VolumeClaimTemplates) == 0 {
		return base, nil
	}
	own := make([]agentsv1beta1.PersistentVolumeClaimTemplate, 0, len(claim.Spec.VolumeClaimTemplates))
	for i := range claim.Spec.VolumeClaimTemplates {
		own = append(own, *claim.Spec.VolumeClaimTemplates[i].DeepCopy())
	}
	policy := template.Spec.VolumeClaimTemplatesPolicy
	if policy != extensionsv1beta1.VolumeClaimTemplatesPolicyAllowed && policy != extensionsv1beta1.VolumeClaimTemplatesPolicyOverrides {
		return nil, claimRefused("spec.volumeClaimTemplates: SandboxTemplate %s has volumeClaimTemplatesPolicy %q", template.Name, policy)
	}
	merged, conflicts := extensions.MergeVolumeClaimTemplates(base, own,
		func(v *agentsv1beta1.PersistentVolumeClaimTemplate) string { return v.Name }, policy == extensionsv1beta1.VolumeClaimTemplatesPolicyOverrides)
	if len(conflicts) > 0 {
		return nil, claimRefused("spec.volumeClaimTemplates[%d]: SandboxTemplate %s has a volume claim template %q and volumeClaimTemplatesPolicy Allowed",
			conflicts[0], template.Name, own[conflicts[0]].Name)
	}
	return merged, nil
}
