// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
)

func tenantCtx() context.Context {
	return genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "ns"),
		&user.DefaultInfo{Name: "tenant", Groups: []string{user.AllAuthenticated}})
}

func template(mutate func(*extensions.SandboxTemplate)) *extensions.SandboxTemplate {
	t := &extensions.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "tpl", Namespace: "ns"},
		Spec: extensions.SandboxTemplateSpec{
			PodTemplate: agents.PodTemplate{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "setup", Image: "busybox"}},
				Containers:     []corev1.Container{{Name: "main", Image: "python"}, {Name: "proxy", Image: "envoy"}},
			}},
			NetworkPolicyManagement: extensions.NetworkPolicyManagementManaged,
			EnvVarsInjectionPolicy:  extensions.EnvVarsInjectionPolicyAllowed,
		},
	}
	if mutate != nil {
		mutate(t)
	}
	return t
}

func claim(mutate func(*extensions.SandboxClaim)) *extensions.SandboxClaim {
	c := &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
		Spec:       extensions.SandboxClaimSpec{TemplateRef: extensions.SandboxTemplateRef{Name: "tpl"}},
	}
	mutate(c)
	return c
}

// volumeTemplate lets claims add volumes; its own use class "fast", its pod mounts a configMap.
func volumeTemplate() *extensions.SandboxTemplate {
	return template(func(t *extensions.SandboxTemplate) {
		t.Spec.VolumeClaimTemplatesPolicy = extensions.VolumeClaimTemplatesPolicyAllowed
		t.Spec.VolumeClaimTemplates = []agents.PersistentVolumeClaimTemplate{volume("data", func(v *agents.PersistentVolumeClaimTemplate) {
			v.Spec.StorageClassName = ptr.To("fast")
		})}
		t.Spec.PodTemplate.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "setup-script"}}}}}
	})
}

func volume(name string, mutate func(*agents.PersistentVolumeClaimTemplate)) agents.PersistentVolumeClaimTemplate {
	v := agents.PersistentVolumeClaimTemplate{
		EmbeddedObjectMetadata: agents.EmbeddedObjectMetadata{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if mutate != nil {
		mutate(&v)
	}
	return v
}

func forbidden(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		if e.Type == field.ErrorTypeForbidden {
			out = append(out, e.Field)
		}
	}
	slices.Sort(out)
	return out
}

func TestValidateAgainstTemplate(t *testing.T) {
	routerPolicy := &extensions.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
		From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{
			MatchLabels:      map[string]string{"role": "gateway"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}},
		}}},
	}}}
	cases := []struct {
		name     string
		template *extensions.SandboxTemplate
		claim    *extensions.SandboxClaim
		want     []string
		// other are fields with errors of other types (too many).
		other []string
	}{
		{name: "ordinary metadata and env", template: template(nil), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata = agents.PodMetadata{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}}
			c.Spec.Env = []extensions.EnvVar{{Name: "TOKEN", Value: "v"}, {Name: "MODE", Value: "v", ContainerName: "main"}}
		})},
		{name: "the secure default's router label", template: template(nil), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Labels = map[string]string{"app": "sandbox-router"}
		}), want: []string{"spec.additionalPodMetadata.labels[app]"}},
		{name: "labels a custom policy admits peers by", template: template(func(t *extensions.SandboxTemplate) { t.Spec.NetworkPolicy = routerPolicy }),
			claim: claim(func(c *extensions.SandboxClaim) {
				c.Spec.AdditionalPodMetadata.Labels = map[string]string{"role": "gateway", "tier": "x", "app": "mine"}
			}), want: []string{"spec.additionalPodMetadata.labels[role]", "spec.additionalPodMetadata.labels[tier]"}},
		{name: "sidecar and runtime keys", template: template(nil), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata = agents.PodMetadata{
				Labels: map[string]string{"sidecar.istio.io/inject": "false", "istio.io/dataplane-mode": "none"},
				Annotations: map[string]string{
					"traffic.sidecar.istio.io/excludeOutboundIPRanges": "0.0.0.0/0", "linkerd.io/inject": "disabled",
					"vault.hashicorp.com/agent-inject": "true", "io.katacontainers.config.hypervisor.path": "/x",
					"io.kubernetes.cri-o.userns-mode": "host", "dev.gvisor.spec.mount": "x",
				},
			}
		}), want: []string{
			"spec.additionalPodMetadata.annotations[dev.gvisor.spec.mount]",
			"spec.additionalPodMetadata.annotations[io.katacontainers.config.hypervisor.path]",
			"spec.additionalPodMetadata.annotations[io.kubernetes.cri-o.userns-mode]",
			"spec.additionalPodMetadata.annotations[linkerd.io/inject]",
			"spec.additionalPodMetadata.annotations[traffic.sidecar.istio.io/excludeOutboundIPRanges]",
			"spec.additionalPodMetadata.annotations[vault.hashicorp.com/agent-inject]",
			"spec.additionalPodMetadata.labels[istio.io/dataplane-mode]",
			"spec.additionalPodMetadata.labels[sidecar.istio.io/inject]",
		}},
		{name: "network attachment, cloud, device and backup hook keys", template: template(nil), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata = agents.PodMetadata{
				Labels: map[string]string{"azure.workload.identity/use": "true", "team": "a"},
				Annotations: map[string]string{
					"k8s.v1.cni.cncf.io/networks": "host-net", "v1.multus-cni.io/default-network": "x",
					"cni.projectcalico.org/ipAddrs": `["10.0.0.1"]`, "policy.cilium.io/proxy-visibility": "x",
					"k8s.ovn.org/pod-networks": "x", "vpc.amazonaws.com/pod-eni": "x", "eks.amazonaws.com/role-arn": "x",
					"iam.gke.io/gcp-service-account": "x", "nvidia.com/gpu": "1", "pre.hook.backup.velero.io/command": "x",
					"karpenter.sh/do-not-disrupt": "true", "note": "x",
				},
			}
		}), want: []string{
			"spec.additionalPodMetadata.annotations[cni.projectcalico.org/ipAddrs]",
			"spec.additionalPodMetadata.annotations[eks.amazonaws.com/role-arn]",
			"spec.additionalPodMetadata.annotations[iam.gke.io/gcp-service-account]",
			"spec.additionalPodMetadata.annotations[k8s.ovn.org/pod-networks]",
			"spec.additionalPodMetadata.annotations[k8s.v1.cni.cncf.io/networks]",
			"spec.additionalPodMetadata.annotations[karpenter.sh/do-not-disrupt]",
			"spec.additionalPodMetadata.annotations[nvidia.com/gpu]",
			"spec.additionalPodMetadata.annotations[policy.cilium.io/proxy-visibility]",
			"spec.additionalPodMetadata.annotations[pre.hook.backup.velero.io/command]",
			"spec.additionalPodMetadata.annotations[v1.multus-cni.io/default-network]",
			"spec.additionalPodMetadata.annotations[vpc.amazonaws.com/pod-eni]",
			"spec.additionalPodMetadata.labels[azure.workload.identity/use]",
		}},
		{name: "a template that lists a network key opens it", template: template(func(t *extensions.SandboxTemplate) {
			t.Spec.AllowedClaimPodMetadata = &extensions.ClaimPodMetadataKeys{Annotations: []string{"k8s.v1.cni.cncf.io/networks"}}
		}), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Annotations = map[string]string{"k8s.v1.cni.cncf.io/networks": "lab-net"}
		})},
		{name: "claim volumes are new, empty storage of an offered class", template: volumeTemplate(), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.VolumeClaimTemplates = []agents.PersistentVolumeClaimTemplate{
				volume("scratch", nil), volume("fast", func(v *agents.PersistentVolumeClaimTemplate) { v.Spec.StorageClassName = ptr.To("fast") }),
				volume("block", func(v *agents.PersistentVolumeClaimTemplate) {
					v.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
				}),
			}
		})},
		{name: "claim volumes that copy, bind or pick storage", template: volumeTemplate(), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.VolumeClaimTemplates = []agents.PersistentVolumeClaimTemplate{
				volume("clone", func(v *agents.PersistentVolumeClaimTemplate) {
					v.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "victim-db"}
				}),
				volume("restore", func(v *agents.PersistentVolumeClaimTemplate) {
					v.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: "s"}
				}),
				volume("bind", func(v *agents.PersistentVolumeClaimTemplate) {
					v.Spec.VolumeName = "pv-of-another-team"
					v.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}
				}),
				volume("class", func(v *agents.PersistentVolumeClaimTemplate) {
					v.Spec.StorageClassName = ptr.To("premium")
					v.Spec.VolumeAttributesClassName = ptr.To("gold")
				}),
				volume("unclassed", func(v *agents.PersistentVolumeClaimTemplate) { v.Spec.StorageClassName = ptr.To("") }),
				volume("config", func(v *agents.PersistentVolumeClaimTemplate) {
					v.Labels = map[string]string{"app": "sandbox-router"}
					v.Annotations = map[string]string{"pre.hook.backup.velero.io/command": "x", "note": "ok"}
				}),
			}
		}), want: []string{
			"spec.volumeClaimTemplates[0].spec.dataSource",
			"spec.volumeClaimTemplates[1].spec.dataSourceRef",
			"spec.volumeClaimTemplates[2].spec.selector",
			"spec.volumeClaimTemplates[2].spec.volumeName",
			"spec.volumeClaimTemplates[3].spec.storageClassName",
			"spec.volumeClaimTemplates[3].spec.volumeAttributesClassName",
			"spec.volumeClaimTemplates[4].spec.storageClassName",
			"spec.volumeClaimTemplates[5].metadata.annotations[pre.hook.backup.velero.io/command]",
			"spec.volumeClaimTemplates[5].metadata.labels[app]",
			"spec.volumeClaimTemplates[5].metadata.name",
		}},
		{name: "claim volumes past the count and the storage", template: volumeTemplate(), claim: claim(func(c *extensions.SandboxClaim) {
			for i := range 9 {
				c.Spec.VolumeClaimTemplates = append(c.Spec.VolumeClaimTemplates, volume(fmt.Sprintf("v%d", i), func(v *agents.PersistentVolumeClaimTemplate) {
					v.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("12Gi")
				}))
			}
		}), want: []string{"spec.volumeClaimTemplates"}, other: []string{"spec.volumeClaimTemplates"}},
		{name: "what a template's claimVolumeClaimTemplates opens, and no more", template: func() *extensions.SandboxTemplate {
			t := volumeTemplate()
			t.Spec.ClaimVolumeClaimTemplates = &extensions.ClaimVolumeClaimTemplates{
				AllowedFields: []string{"dataSource"}, StorageClassNames: []string{"premium"},
				MaxCount: ptr.To[int32](10), MaxStorage: ptr.To(resource.MustParse("200Gi")),
			}
			return t
		}(), claim: claim(func(c *extensions.SandboxClaim) {
			for i := range 10 {
				c.Spec.VolumeClaimTemplates = append(c.Spec.VolumeClaimTemplates, volume(fmt.Sprintf("v%d", i), func(v *agents.PersistentVolumeClaimTemplate) {
					v.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("12Gi")
					v.Spec.StorageClassName = ptr.To("premium")
					v.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "shared-dataset"}
				}))
			}
			c.Spec.VolumeClaimTemplates[9].Spec.VolumeName = "pv-of-another-team"
		}), want: []string{"spec.volumeClaimTemplates[9].spec.volumeName"}},
		{name: "a template's allow list is exact", template: template(func(t *extensions.SandboxTemplate) {
			t.Spec.AllowedClaimPodMetadata = &extensions.ClaimPodMetadataKeys{Labels: []string{"team", "app"}}
		}), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata = agents.PodMetadata{Labels: map[string]string{"team": "a", "app": "x", "other": "y"}, Annotations: map[string]string{"note": "x"}}
		}), want: []string{"spec.additionalPodMetadata.annotations[note]", "spec.additionalPodMetadata.labels[other]"}},
		{name: "env into a sidecar or an init container", template: template(nil), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.Env = []extensions.EnvVar{{Name: "A", ContainerName: "proxy"}, {Name: "B", ContainerName: "setup"}}
		}), want: []string{"spec.env[0].containerName", "spec.env[1].containerName"}},
		{name: "env into containers the template opens", template: template(func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsInjectionContainers = []string{"proxy", "setup"}
		}), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.Env = []extensions.EnvVar{{Name: "A", ContainerName: "proxy"}, {Name: "B", ContainerName: "setup"}}
		})},
		{name: "loader variables under Allowed", template: template(nil), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.Env = []extensions.EnvVar{{Name: "LD_PRELOAD", Value: "/tmp/x.so"}, {Name: "BASH_ENV"}, {Name: "JAVA_TOOL_OPTIONS"}, {Name: "NODE_OPTIONS"}, {Name: "PYTHONPATH"}, {Name: "LD_AUDIT"}}
		}), want: []string{"spec.env[0].name", "spec.env[1].name", "spec.env[2].name", "spec.env[3].name", "spec.env[4].name", "spec.env[5].name"}},
		{name: "loader variables under Overrides", template: template(func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsInjectionPolicy = extensions.EnvVarsInjectionPolicyOverrides
		}), claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.Env = []extensions.EnvVar{{Name: "LD_PRELOAD", Value: "/tmp/x.so"}}
		})},
		{name: "no template yet: the controller checks later", claim: claim(func(c *extensions.SandboxClaim) {
			c.Spec.AdditionalPodMetadata.Labels = map[string]string{"app": "sandbox-router"}
		})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			getter := func(_ context.Context, name string) (*extensions.SandboxTemplate, error) {
				if tc.template == nil || name != tc.template.Name {
					return nil, apierrors.NewNotFound(extensions.Resource("sandboxtemplates"), name)
				}
				return tc.template, nil
			}
			strategy, _ := NewStrategy(nil, "", trust.NewControllerIdentity(), getter)
			errs := strategy.Validate(tenantCtx(), tc.claim)
			if got := forbidden(errs); !slices.Equal(got, tc.want) {
				t.Errorf("forbidden fields %q, want %q (all: %v)", got, tc.want, errs)
			}
			var other []string
			for _, e := range errs {
				if e.Type != field.ErrorTypeForbidden {
					other = append(other, e.Field)
				}
			}
			if !slices.Equal(other, tc.other) {
				t.Errorf("other errors: %v", errs)
			}
		})
	}
}

func TestValidateUpdateRechecksChangedPodMetadata(t *testing.T) {
	getter := func(context.Context, string) (*extensions.SandboxTemplate, error) { return template(nil), nil }
	strategy, _ := NewStrategy(nil, "", trust.NewControllerIdentity(), getter)
	old := claim(func(c *extensions.SandboxClaim) { c.ResourceVersion = "1" })
	updated := old.DeepCopy()
	updated.Spec.AdditionalPodMetadata.Labels = map[string]string{"app": "sandbox-router"}
	errs := strategy.ValidateUpdate(tenantCtx(), updated, old)
	if got := forbidden(errs); !slices.Equal(got, []string{"spec.additionalPodMetadata.labels[app]"}) {
		t.Errorf("forbidden fields %q (all: %v)", got, errs)
	}
}

func TestClaimMarksAreTheControllers(t *testing.T) {
	id := trust.NewControllerIdentity()
	strategy, statusStrategy := NewStrategy(nil, "", id, nil)
	bound := claim(func(c *extensions.SandboxClaim) {
		c.ResourceVersion = "1"
		c.Labels = map[string]string{"agents.x-k8s.io/sandbox-name": "sb", "team": "a"}
	})
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		refuse bool
	}{
		{"the controllers", id.WithUser(genericapirequest.WithNamespace(context.Background(), "ns")), false},
		{"a tenant", tenantCtx(), true},
		{"system:apiserver impersonated", genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := []string(nil)
			if tc.refuse {
				want = []string{"metadata.labels[agents.x-k8s.io/sandbox-name]"}
			}
			created := bound.DeepCopy()
			if got := forbidden(strategy.Validate(tc.ctx, created)); !slices.Equal(got, want) {
				t.Errorf("create: forbidden %q, want %q", got, want)
			}
			changed := bound.DeepCopy()
			changed.Labels["agents.x-k8s.io/sandbox-name"] = "other"
			if got := forbidden(strategy.ValidateUpdate(tc.ctx, changed, bound)); !slices.Equal(got, want) {
				t.Errorf("update: forbidden %q, want %q", got, want)
			}
			relabelled := bound.DeepCopy()
			relabelled.Labels["team"] = "b"
			if errs := strategy.ValidateUpdate(tc.ctx, relabelled, bound); len(errs) > 0 {
				t.Errorf("an update keeping the mark: %v", errs)
			}
			owned := bound.DeepCopy()
			owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxClaim", Name: "x", UID: "u", Controller: new(bool)}}
			*owned.OwnerReferences[0].Controller = true
			statusStrategy.PrepareForUpdate(tc.ctx, owned, bound)
			errs := statusStrategy.ValidateUpdate(tc.ctx, owned, bound)
			if got := len(forbidden(errs)) > 0; got != tc.refuse {
				t.Errorf("a controller reference through status: %v", errs)
			}
			if tc.refuse && !strings.Contains(errs.ToAggregate().Error(), "metadata.ownerReferences[0]") {
				t.Errorf("the error names no field: %v", errs)
			}
		})
	}
}
