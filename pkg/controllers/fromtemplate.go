// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// NewSandboxFromTemplate builds Sandboxes from a SandboxTemplate, the one way both the claim and
// the warm pool controllers make them, so a warm member and a cold sandbox of a template match.

package controllers

import (
	"encoding/json"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// PublicResolvers replace cluster DNS for sandboxes of a secure-by-default template, so a sandbox
// cannot enumerate the cluster's services through it.
var PublicResolvers = []string{"8.8.8.8", "1.1.1.1"}

// SecureByDefault says whether the template runs under the controller's default NetworkPolicy:
// managed, with no rules of its own.
func SecureByDefault(t *extensionsv1beta1.SandboxTemplate) bool {
	return t.Spec.NetworkPolicyManagement != extensionsv1beta1.NetworkPolicyManagementUnmanaged && t.Spec.NetworkPolicy == nil
}

// ApplySecureDefaults hardens a pod spec made from t: no service account token unless the template
// asks for one, and, in secure-by-default mode only, public resolvers instead of cluster DNS
// unless the template chose a DNS policy.
func ApplySecureDefaults(t *extensionsv1beta1.SandboxTemplate, spec *corev1.PodSpec) {
	if spec.AutomountServiceAccountToken == nil {
		spec.AutomountServiceAccountToken = ptr.To(false)
	}
	if SecureByDefault(t) && spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSNone
		spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: slices.Clone(PublicResolvers)}
	}
}

// PodTemplateHash identifies a revision of the template's pod spec; warm members built from an
// older one are stale. Pod labels and annotations are left out: changing them alone does not make
// members stale.
func PodTemplateHash(t *extensionsv1beta1.SandboxTemplate) (string, error) {
	b, err := json.Marshal(t.Spec.PodTemplate.Spec)
	if err != nil {
		return "", err
	}
	return objectmeta.NameHash(string(b)), nil
}

// NewSandboxFromTemplate returns a Sandbox of t in t's namespace: the template's pod template with secure
// defaults, its volume claim templates, Service setting and idle timeout, the template-ref annotation and the
// template-ref hash label on the Sandbox and its pod template. The caller names and owns it.
func NewSandboxFromTemplate(t *extensionsv1beta1.SandboxTemplate) *agentsv1beta1.Sandbox {
	refHash := objectmeta.NameHash(t.Name)
	sb := &agentsv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   t.Namespace,
			Labels:      map[string]string{extensionsv1beta1.SandboxTemplateRefHashLabel: refHash},
			Annotations: map[string]string{agentsv1beta1.SandboxTemplateRefAnnotation: t.Name},
		},
		Spec: agentsv1beta1.SandboxSpec{
			PodTemplate: *t.Spec.PodTemplate.DeepCopy(),
			Replicas:    ptr.To[int32](1),
			Service:     ptrCopy(t.Spec.Service),
			IdleTimeout: ptrCopy(t.Spec.IdleTimeout),
			Lifecycle:   agentsv1beta1.Lifecycle{ShutdownPolicy: ptr.To(agentsv1beta1.ShutdownPolicyRetain)},
		},
	}
	for _, vct := range t.Spec.VolumeClaimTemplates {
		sb.Spec.VolumeClaimTemplates = append(sb.Spec.VolumeClaimTemplates, *vct.DeepCopy())
	}
	meta := &sb.Spec.PodTemplate.ObjectMeta
	meta.Labels = maps.Clone(meta.Labels)
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	meta.Labels[extensionsv1beta1.SandboxTemplateRefHashLabel] = refHash
	ApplySecureDefaults(t, &sb.Spec.PodTemplate.Spec)
	return sb
}

func ptrCopy[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}
