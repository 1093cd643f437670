// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// fnvHash is the 32-bit FNV-1a of s in 8 hex digits, computed here rather than through naming.
func fnvHash(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

func template(mods ...func(*extensionsv1beta1.SandboxTemplate)) *extensionsv1beta1.SandboxTemplate {
	t := &extensionsv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "python", Namespace: "team-a", UID: "tmpl-uid"},
		Spec: extensionsv1beta1.SandboxTemplateSpec{
			PodTemplate: agentsv1beta1.PodTemplate{
				ObjectMeta: agentsv1beta1.PodMetadata{
					Labels:      map[string]string{"app": "python"},
					Annotations: map[string]string{"team": "ml"},
				},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "python:3.12",
					Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}}},
			},
			VolumeClaimTemplates: []agentsv1beta1.PersistentVolumeClaimTemplate{{
				EmbeddedObjectMetadata: agentsv1beta1.EmbeddedObjectMetadata{Name: "workspace", Labels: map[string]string{"disk": "ssd"}},
				Spec:                   corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
			}},
			NetworkPolicyManagement: extensionsv1beta1.NetworkPolicyManagementManaged,
			Service:                 ptr.To(true),
		},
	}
	for _, m := range mods {
		m(t)
	}
	return t
}

func TestSecureByDefault(t *testing.T) {
	cases := []struct {
		name string
		mgmt extensionsv1beta1.NetworkPolicyManagement
		np   *extensionsv1beta1.NetworkPolicySpec
		want bool
	}{
		{name: "managed, no rules", mgmt: extensionsv1beta1.NetworkPolicyManagementManaged, want: true},
		{name: "unset management, no rules", mgmt: "", want: true},
		{name: "managed with rules", mgmt: extensionsv1beta1.NetworkPolicyManagementManaged, np: &extensionsv1beta1.NetworkPolicySpec{}},
		{name: "unmanaged", mgmt: extensionsv1beta1.NetworkPolicyManagementUnmanaged},
		{name: "unmanaged with rules", mgmt: extensionsv1beta1.NetworkPolicyManagementUnmanaged, np: &extensionsv1beta1.NetworkPolicySpec{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := template(func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.NetworkPolicyManagement, t.Spec.NetworkPolicy = tc.mgmt, tc.np
			})
			if got := SecureByDefault(tmpl); got != tc.want {
				t.Errorf("SecureByDefault = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestApplySecureDefaults(t *testing.T) {
	public := &corev1.PodDNSConfig{Nameservers: []string{"8.8.8.8", "1.1.1.1"}}
	custom := &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}}
	unmanaged := func(t *extensionsv1beta1.SandboxTemplate) {
		t.Spec.NetworkPolicyManagement = extensionsv1beta1.NetworkPolicyManagementUnmanaged
	}
	withRules := func(t *extensionsv1beta1.SandboxTemplate) {
		t.Spec.NetworkPolicy = &extensionsv1beta1.NetworkPolicySpec{}
	}
	cases := []struct {
		name          string
		tmpl          *extensionsv1beta1.SandboxTemplate
		spec          corev1.PodSpec
		wantAutomount *bool
		wantDNS       corev1.DNSPolicy
		wantDNSConfig *corev1.PodDNSConfig
	}{
		{name: "secure default: no token, public resolvers", tmpl: template(),
			wantAutomount: ptr.To(false), wantDNS: corev1.DNSNone, wantDNSConfig: public},
		{name: "token asked for is kept", tmpl: template(), spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(true)},
			wantAutomount: ptr.To(true), wantDNS: corev1.DNSNone, wantDNSConfig: public},
		{name: "token refused is kept", tmpl: template(), spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false)},
			wantAutomount: ptr.To(false), wantDNS: corev1.DNSNone, wantDNSConfig: public},
		{name: "a chosen DNS policy is kept with its config", tmpl: template(),
			spec:          corev1.PodSpec{DNSPolicy: corev1.DNSNone, DNSConfig: custom},
			wantAutomount: ptr.To(false), wantDNS: corev1.DNSNone, wantDNSConfig: custom},
		{name: "ClusterFirst chosen explicitly is kept", tmpl: template(), spec: corev1.PodSpec{DNSPolicy: corev1.DNSClusterFirst},
			wantAutomount: ptr.To(false), wantDNS: corev1.DNSClusterFirst},
		{name: "unmanaged: cluster DNS", tmpl: template(unmanaged), wantAutomount: ptr.To(false)},
		{name: "own rules: cluster DNS", tmpl: template(withRules), wantAutomount: ptr.To(false)},
		{name: "unmanaged still gets no token", tmpl: template(unmanaged), spec: corev1.PodSpec{DNSConfig: custom},
			wantAutomount: ptr.To(false), wantDNSConfig: custom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			ApplySecureDefaults(tc.tmpl, &spec)
			if !apiequality.Semantic.DeepEqual(spec.AutomountServiceAccountToken, tc.wantAutomount) {
				t.Errorf("automountServiceAccountToken = %v, want %v", ptr.Deref(spec.AutomountServiceAccountToken, true), *tc.wantAutomount)
			}
			if spec.DNSPolicy != tc.wantDNS || !apiequality.Semantic.DeepEqual(spec.DNSConfig, tc.wantDNSConfig) {
				t.Errorf("DNS = %q %+v, want %q %+v", spec.DNSPolicy, spec.DNSConfig, tc.wantDNS, tc.wantDNSConfig)
			}
		})
	}
}

func TestNewSandbox(t *testing.T) {
	tmpl := template()
	before := tmpl.DeepCopy()
	sb := NewSandboxFromTemplate(tmpl)

	refHash := fnvHash("python")
	if sb.Namespace != "team-a" || sb.Name != "" || sb.GenerateName != "" || len(sb.OwnerReferences) != 0 {
		t.Errorf("identity = %s/%s generateName %q owners %v, want the template's namespace and nothing else", sb.Namespace, sb.Name, sb.GenerateName, sb.OwnerReferences)
	}
	if want := map[string]string{extensionsv1beta1.SandboxTemplateRefHashLabel: refHash}; !apiequality.Semantic.DeepEqual(sb.Labels, want) {
		t.Errorf("labels = %v, want %v", sb.Labels, want)
	}
	if want := map[string]string{agentsv1beta1.SandboxTemplateRefAnnotation: "python"}; !apiequality.Semantic.DeepEqual(sb.Annotations, want) {
		t.Errorf("annotations = %v, want %v", sb.Annotations, want)
	}
	wantPodMeta := agentsv1beta1.PodMetadata{
		Labels:      map[string]string{"app": "python", extensionsv1beta1.SandboxTemplateRefHashLabel: refHash},
		Annotations: map[string]string{"team": "ml"},
	}
	if !apiequality.Semantic.DeepEqual(sb.Spec.PodTemplate.ObjectMeta, wantPodMeta) {
		t.Errorf("pod metadata = %+v, want %+v", sb.Spec.PodTemplate.ObjectMeta, wantPodMeta)
	}
	wantSpec := tmpl.Spec.PodTemplate.Spec.DeepCopy()
	wantSpec.AutomountServiceAccountToken = ptr.To(false)
	wantSpec.DNSPolicy = corev1.DNSNone
	wantSpec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"8.8.8.8", "1.1.1.1"}}
	if !apiequality.Semantic.DeepEqual(sb.Spec.PodTemplate.Spec, *wantSpec) {
		t.Errorf("pod spec = %+v, want %+v", sb.Spec.PodTemplate.Spec, *wantSpec)
	}
	if !apiequality.Semantic.DeepEqual(sb.Spec.VolumeClaimTemplates, tmpl.Spec.VolumeClaimTemplates) {
		t.Errorf("volume claim templates = %+v, want the template's", sb.Spec.VolumeClaimTemplates)
	}
	if ptr.Deref(sb.Spec.Replicas, 0) != 1 {
		t.Errorf("replicas = %v, want 1", sb.Spec.Replicas)
	}
	if !ptr.Deref(sb.Spec.Service, false) {
		t.Errorf("service = %v, want the template's true", sb.Spec.Service)
	}
	if sb.Spec.ShutdownTime != nil || ptr.Deref(sb.Spec.ShutdownPolicy, "") != agentsv1beta1.ShutdownPolicyRetain {
		t.Errorf("lifecycle = %+v, want no shutdown time and Retain", sb.Spec.Lifecycle)
	}

	// Editing the sandbox the way the controllers do must leave the template alone.
	sb.Labels["x"] = "y"
	sb.Spec.PodTemplate.ObjectMeta.Labels["x"] = "y"
	sb.Spec.PodTemplate.ObjectMeta.Annotations["x"] = "y"
	sb.Spec.PodTemplate.Spec.Containers[0].Env = append(sb.Spec.PodTemplate.Spec.Containers[0].Env, corev1.EnvVar{Name: "B"})
	sb.Spec.PodTemplate.Spec.Containers[0].Env[0].Value = "changed"
	sb.Spec.VolumeClaimTemplates[0].Labels["x"] = "y"
	if !apiequality.Semantic.DeepEqual(tmpl, before) {
		t.Errorf("the template changed through the sandbox: %+v", tmpl.Spec)
	}
}

func TestNewSandboxTemplateWithoutMetadata(t *testing.T) {
	tmpl := template(func(t *extensionsv1beta1.SandboxTemplate) {
		t.Spec.PodTemplate.ObjectMeta = agentsv1beta1.PodMetadata{}
		t.Spec.VolumeClaimTemplates = nil
		t.Spec.Service = nil
	})
	sb := NewSandboxFromTemplate(tmpl)
	if want := map[string]string{extensionsv1beta1.SandboxTemplateRefHashLabel: fnvHash("python")}; !apiequality.Semantic.DeepEqual(sb.Spec.PodTemplate.ObjectMeta.Labels, want) {
		t.Errorf("pod labels = %v, want %v", sb.Spec.PodTemplate.ObjectMeta.Labels, want)
	}
	if sb.Spec.VolumeClaimTemplates != nil || sb.Spec.Service != nil {
		t.Errorf("volume claim templates %v and service %v, want none", sb.Spec.VolumeClaimTemplates, sb.Spec.Service)
	}
}

// TestNewSandboxSharesNoMemory: a sandbox is edited by its caller (metadata merge, env
// injection); nothing it points to may belong to the template in the cache, to another sandbox
// or to the package.
func TestNewSandboxSharesNoMemory(t *testing.T) {
	tmpl := template()
	before := tmpl.DeepCopy()
	a, b := NewSandboxFromTemplate(tmpl), NewSandboxFromTemplate(tmpl)

	var shared []string
	a.Spec.PodTemplate.Spec.DNSConfig.Nameservers[0] = "9.9.9.9"
	if b.Spec.PodTemplate.Spec.DNSConfig.Nameservers[0] != "8.8.8.8" || PublicResolvers[0] != "8.8.8.8" {
		shared = append(shared, "DNSConfig.Nameservers is the package slice PublicResolvers itself, so an in-place edit "+
			"of one sandbox's nameservers changes every later sandbox")
	}
	PublicResolvers[0] = "8.8.8.8" // repair the package state for the other tests

	*a.Spec.Service = false
	if !apiequality.Semantic.DeepEqual(tmpl, before) {
		shared = append(shared, "spec.service is the template's own *bool, so setting *sandbox.Spec.Service changes the (cached) template")
	}
	if len(shared) > 0 {
		t.Fatalf("NewSandboxFromTemplate shares memory: %s", strings.Join(shared, "; "))
	}
}

// TestPodTemplateHash: the revision of a template's pod template follows its pod spec, and per
// the Recreate strategy's contract ("label or annotation changes alone do not count") not its
// pod labels and annotations.
func TestPodTemplateHash(t *testing.T) {
	hash := func(mods ...func(*extensionsv1beta1.SandboxTemplate)) string {
		h, err := PodTemplateHash(template(mods...))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	base := hash()
	if len(base) != 8 {
		t.Errorf("hash %q is not 8 hex digits", base)
	}
	if again := hash(); again != base {
		t.Errorf("hash not stable: %s then %s", base, again)
	}
	cases := []struct {
		name     string
		mod      func(*extensionsv1beta1.SandboxTemplate)
		wantSame bool
	}{
		{name: "image", mod: func(t *extensionsv1beta1.SandboxTemplate) {
			t.Spec.PodTemplate.Spec.Containers[0].Image = "python:3.13"
		}},
		{name: "env", mod: func(t *extensionsv1beta1.SandboxTemplate) { t.Spec.PodTemplate.Spec.Containers[0].Env[0].Value = "2" }},
		{name: "a container added", mod: func(t *extensionsv1beta1.SandboxTemplate) {
			t.Spec.PodTemplate.Spec.Containers = append(t.Spec.PodTemplate.Spec.Containers, corev1.Container{Name: "sidecar"})
		}},
		{name: "the template's name does not count", mod: func(t *extensionsv1beta1.SandboxTemplate) { t.Name = "other" }, wantSame: true},
		{name: "volume claim templates do not count", mod: func(t *extensionsv1beta1.SandboxTemplate) { t.Spec.VolumeClaimTemplates = nil }, wantSame: true},
		{name: "env injection policy does not count", mod: func(t *extensionsv1beta1.SandboxTemplate) {
			t.Spec.EnvVarsInjectionPolicy = extensionsv1beta1.EnvVarsInjectionPolicyAllowed
		}, wantSame: true},
		{
			name: "a pod label alone does not count", wantSame: true,
			mod: func(t *extensionsv1beta1.SandboxTemplate) { t.Spec.PodTemplate.ObjectMeta.Labels["tier"] = "gold" },
		},
		{
			name: "a pod annotation alone does not count", wantSame: true,
			mod: func(t *extensionsv1beta1.SandboxTemplate) { t.Spec.PodTemplate.ObjectMeta.Annotations["team"] = "web" },
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := hash(tc.mod)
			if same := got == base; same != tc.wantSame {
				t.Errorf("hash %s vs %s: same = %v, want %v", got, base, same, tc.wantSame)
			}
		})
	}
}
