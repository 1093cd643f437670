// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

func port(p intstr.IntOrString, proto corev1.Protocol) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(proto), Port: &p}
}

// validTemplate is the secure example template: ingress from the Istio gateway, egress to DNS and
// to the internet except private ranges.
func validTemplate() *extensions.SandboxTemplate {
	return &extensions.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "secure-datascience-template", Namespace: "default", ResourceVersion: "1"},
		Spec: extensions.SandboxTemplateSpec{
			PodTemplate:          podTemplate(),
			VolumeClaimTemplates: []agents.PersistentVolumeClaimTemplate{volumeClaimTemplate("workspace")},
			NetworkPolicy: &extensions.NetworkPolicySpec{
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"istio-injection": "enabled"}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "istio-ingressgateway"}},
					}},
				}},
				Egress: []networkingv1.NetworkPolicyEgressRule{{
					Ports: []networkingv1.NetworkPolicyPort{
						port(intstr.FromInt32(53), corev1.ProtocolUDP),
						port(intstr.FromInt32(53), corev1.ProtocolTCP),
					},
					To: []networkingv1.NetworkPolicyPeer{{
						IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8", "169.254.0.0/16"}},
					}},
				}},
			},
			NetworkPolicyManagement:    extensions.NetworkPolicyManagementManaged,
			EnvVarsInjectionPolicy:     extensions.EnvVarsInjectionPolicyDisallowed,
			VolumeClaimTemplatesPolicy: extensions.VolumeClaimTemplatesPolicyDisallowed,
			Service:                    ptr.To(true),
		},
	}
}

const (
	egressPort0 = "spec.networkPolicy.egress[0].ports[0]"
	egressPeer0 = "spec.networkPolicy.egress[0].to[0]"
	ingressPeer = "spec.networkPolicy.ingress[0].from[0]"
)

func TestValidateSandboxTemplate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(t *extensions.SandboxTemplate)
		want   []want
	}{
		{name: "valid", mutate: func(t *extensions.SandboxTemplate) {}},
		{name: "idleTimeout of 10s", mutate: func(t *extensions.SandboxTemplate) { t.Spec.IdleTimeout = &metav1.Duration{Duration: 10 * time.Second} }},
		{name: "idleTimeout of 0", mutate: func(t *extensions.SandboxTemplate) { t.Spec.IdleTimeout = &metav1.Duration{} },
			want: []want{invalid("spec.idleTimeout")}},
		{name: "no network policy (secure default)", mutate: func(t *extensions.SandboxTemplate) { t.Spec.NetworkPolicy = nil }},

		// metadata: the NetworkPolicy is <name>-network-policy
		{name: "name is a subdomain", mutate: func(t *extensions.SandboxTemplate) { t.Name = "team-a.python-runtime" }},
		{name: "name of 238 characters", mutate: func(t *extensions.SandboxTemplate) { t.Name = strings.Repeat("t", 238) }},
		{name: "name of 239 characters (no room for the policy suffix)", mutate: func(t *extensions.SandboxTemplate) { t.Name = strings.Repeat("t", 239) },
			want: []want{invalid("metadata.name")}},
		{name: "name of 254 characters", mutate: func(t *extensions.SandboxTemplate) { t.Name = strings.Repeat("t", 254) },
			want: []want{invalid("metadata.name")}},
		{name: "name invalid", mutate: func(t *extensions.SandboxTemplate) { t.Name = "Secure_Template" },
			want: []want{invalid("metadata.name")}},

		// what claims may reach: env containers and pod metadata keys
		{name: "env containers of the pod template", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.PodTemplate.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "busybox"}}
			t.Spec.EnvVarsInjectionContainers = []string{"my-container", "setup"}
		}},
		{name: "env containers unknown or twice", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsInjectionContainers = []string{"my-container", "sidecar", "my-container"}
		}, want: []want{notFound("spec.envVarsInjectionContainers[1]"), duplicate("spec.envVarsInjectionContainers[2]")}},
		{name: "claim pod metadata keys", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.AllowedClaimPodMetadata = &extensions.ClaimPodMetadataKeys{Labels: []string{"team", "app"}, Annotations: []string{"sidecar.istio.io/inject"}}
		}},
		{name: "claim pod metadata keys invalid, reserved or twice", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.AllowedClaimPodMetadata = &extensions.ClaimPodMetadataKeys{
				Labels:      []string{"team", "team", "bad key"},
				Annotations: []string{"agents.x-k8s.io/claim-uid", "kubernetes.io/x"},
			}
		}, want: []want{
			duplicate("spec.allowedClaimPodMetadata.labels[1]"), invalid("spec.allowedClaimPodMetadata.labels[2]"),
			invalid("spec.allowedClaimPodMetadata.annotations[0]"), invalid("spec.allowedClaimPodMetadata.annotations[1]"),
		}},
		{name: "claim volume openings", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.ClaimVolumeClaimTemplates = &extensions.ClaimVolumeClaimTemplates{
				AllowedFields:     []string{"dataSource", "dataSourceRef", "volumeName", "selector", "volumeAttributesClassName"},
				StorageClassNames: []string{"premium", ""}, MaxCount: ptr.To[int32](64), MaxStorage: ptr.To(resource.MustParse("1Ti")),
			}
		}},
		{name: "claim volume openings unknown, twice or out of bounds", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.ClaimVolumeClaimTemplates = &extensions.ClaimVolumeClaimTemplates{
				AllowedFields:     []string{"dataSource", "hostPath", "dataSource", "accessModes"},
				StorageClassNames: []string{"premium", "Not_A_Class", "premium"}, MaxCount: ptr.To[int32](65), MaxStorage: ptr.To(resource.MustParse("0")),
			}
		}, want: []want{
			notSupported("spec.claimVolumeClaimTemplates.allowedFields[1]"), duplicate("spec.claimVolumeClaimTemplates.allowedFields[2]"),
			notSupported("spec.claimVolumeClaimTemplates.allowedFields[3]"),
			invalid("spec.claimVolumeClaimTemplates.storageClassNames[1]"), duplicate("spec.claimVolumeClaimTemplates.storageClassNames[2]"),
			invalid("spec.claimVolumeClaimTemplates.maxCount"), invalid("spec.claimVolumeClaimTemplates.maxStorage"),
		}},
		{name: "claim volume count of zero", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.ClaimVolumeClaimTemplates = &extensions.ClaimVolumeClaimTemplates{MaxCount: ptr.To[int32](0)}
		}, want: []want{invalid("spec.claimVolumeClaimTemplates.maxCount")}},

		// pod template and volume claim templates (agents rules)
		{name: "no containers", mutate: func(t *extensions.SandboxTemplate) { t.Spec.PodTemplate.Spec.Containers = nil },
			want: []want{required("spec.podTemplate.spec.containers")}},
		{name: "container without image", mutate: func(t *extensions.SandboxTemplate) { t.Spec.PodTemplate.Spec.Containers[0].Image = "" },
			want: []want{required("spec.podTemplate.spec.containers[0].image")}},
		{name: "pod label invalid", mutate: func(t *extensions.SandboxTemplate) { t.Spec.PodTemplate.ObjectMeta.Labels["app"] = "not valid" },
			want: []want{invalid("spec.podTemplate.metadata.labels")}},
		{name: "mount of an unknown volume", mutate: func(t *extensions.SandboxTemplate) { t.Spec.VolumeClaimTemplates = nil },
			want: []want{notFound("spec.podTemplate.spec.containers[0].volumeMounts[0].name")}},
		{name: "pod volume named like a volume claim template (replaced by its claim)", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.PodTemplate.Spec.Volumes = []corev1.Volume{{Name: "workspace"}}
		}},
		{name: "volume claim template without storage", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = nil
		}, want: []want{required("spec.volumeClaimTemplates[0].spec.resources.requests[storage]")}},
		{name: "volume claim template name invalid", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.VolumeClaimTemplates = append(t.Spec.VolumeClaimTemplates, volumeClaimTemplate("Cache"))
		}, want: []want{invalid("spec.volumeClaimTemplates[1].metadata.name")}},

		// policies
		{name: "Unmanaged network policy", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicyManagement = extensions.NetworkPolicyManagementUnmanaged
		}},
		{name: "network policy management unknown", mutate: func(t *extensions.SandboxTemplate) { t.Spec.NetworkPolicyManagement = "Auto" },
			want: []want{notSupported("spec.networkPolicyManagement")}},
		{name: "network policy management empty", mutate: func(t *extensions.SandboxTemplate) { t.Spec.NetworkPolicyManagement = "" },
			want: []want{notSupported("spec.networkPolicyManagement")}},
		{name: "env injection Allowed", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsInjectionPolicy = extensions.EnvVarsInjectionPolicyAllowed
		}},
		{name: "env injection Overrides", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsInjectionPolicy = extensions.EnvVarsInjectionPolicyOverrides
		}},
		{name: "env injection unknown", mutate: func(t *extensions.SandboxTemplate) { t.Spec.EnvVarsInjectionPolicy = "Sometimes" },
			want: []want{notSupported("spec.envVarsInjectionPolicy")}},
		{name: "env delivery by file", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsDelivery = &extensions.EnvVarsDelivery{File: "/run/claim/env", TimeoutSeconds: ptr.To[int32](300)}
		}},
		{name: "env delivery by command", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsDelivery = &extensions.EnvVarsDelivery{Command: []string{"/bin/activate"}}
		}},
		{name: "env delivery empty", mutate: func(t *extensions.SandboxTemplate) { t.Spec.EnvVarsDelivery = &extensions.EnvVarsDelivery{} },
			want: []want{required("spec.envVarsDelivery")}},
		{name: "env delivery both ways", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsDelivery = &extensions.EnvVarsDelivery{File: "/run/env", Command: []string{"/bin/activate"}}
		}, want: []want{forbidden("spec.envVarsDelivery.command")}},
		{name: "env delivery file relative", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsDelivery = &extensions.EnvVarsDelivery{File: "run/env"}
		}, want: []want{invalid("spec.envVarsDelivery.file")}},
		{name: "env delivery file not clean", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsDelivery = &extensions.EnvVarsDelivery{File: "/run/../etc/env"}
		}, want: []want{invalid("spec.envVarsDelivery.file")}},
		{name: "env delivery file with a newline", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsDelivery = &extensions.EnvVarsDelivery{File: "/run/env\nx"}
		}, want: []want{invalid("spec.envVarsDelivery.file")}},
		{name: "env delivery command without program", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsDelivery = &extensions.EnvVarsDelivery{Command: []string{"", "x"}}
		}, want: []want{invalid("spec.envVarsDelivery.command[0]")}},
		{name: "env delivery timeout too long", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsDelivery = &extensions.EnvVarsDelivery{File: "/run/env", TimeoutSeconds: ptr.To[int32](301)}
		}, want: []want{invalid("spec.envVarsDelivery.timeoutSeconds")}},
		{name: "env delivery timeout zero", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.EnvVarsDelivery = &extensions.EnvVarsDelivery{File: "/run/env", TimeoutSeconds: ptr.To[int32](0)}
		}, want: []want{invalid("spec.envVarsDelivery.timeoutSeconds")}},
		{name: "volume claim templates Allowed", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.VolumeClaimTemplatesPolicy = extensions.VolumeClaimTemplatesPolicyAllowed
		}},
		{name: "volume claim templates Overrides", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.VolumeClaimTemplatesPolicy = extensions.VolumeClaimTemplatesPolicyOverrides
		}},
		{name: "volume claim templates policy unknown", mutate: func(t *extensions.SandboxTemplate) { t.Spec.VolumeClaimTemplatesPolicy = "Sometimes" },
			want: []want{notSupported("spec.volumeClaimTemplatesPolicy")}},

		// network policy ports
		{name: "port SCTP by name, no port", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].Ports[0] = port(intstr.FromString("dns"), corev1.ProtocolSCTP)
			t.Spec.NetworkPolicy.Egress[0].Ports[1] = networkingv1.NetworkPolicyPort{}
		}},
		{name: "protocol unknown", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].Ports[0].Protocol = ptr.To(corev1.Protocol("ICMP"))
		}, want: []want{notSupported(egressPort0 + ".protocol")}},
		{name: "port 0", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].Ports[0].Port = ptr.To(intstr.FromInt32(0))
		},
			want: []want{invalid(egressPort0 + ".port")}},
		{name: "port 65536", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].Ports[0].Port = ptr.To(intstr.FromInt32(65536))
		}, want: []want{invalid(egressPort0 + ".port")}},
		{name: "port name invalid", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].Ports[0].Port = ptr.To(intstr.FromString("dns_port"))
		}, want: []want{invalid(egressPort0 + ".port")}},
		{name: "port range", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].Ports[0] = networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(32000)), EndPort: ptr.To[int32](32768)}
		}},
		{name: "port range of one port", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].Ports[0].EndPort = ptr.To[int32](53)
		}},
		{name: "endPort below port", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].Ports[0].EndPort = ptr.To[int32](52)
		}, want: []want{invalid(egressPort0 + ".endPort")}},
		{name: "endPort above 65535", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].Ports[0].EndPort = ptr.To[int32](65536)
		}, want: []want{invalid(egressPort0 + ".endPort")}},
		{name: "endPort without port", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].Ports[0] = networkingv1.NetworkPolicyPort{EndPort: ptr.To[int32](100)}
		}, want: []want{required(egressPort0 + ".port")}},
		{name: "endPort with a named port", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].Ports[0] = networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromString("dns")), EndPort: ptr.To[int32](100)}
		}, want: []want{invalid(egressPort0 + ".endPort")}},
		{name: "ingress port invalid", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Ingress[0].Ports = []networkingv1.NetworkPolicyPort{port(intstr.FromInt32(-1), corev1.ProtocolTCP)}
		}, want: []want{invalid("spec.networkPolicy.ingress[0].ports[0].port")}},

		// network policy peers
		{name: "IPv6 block", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].To[0].IPBlock = &networkingv1.IPBlock{CIDR: "::/0", Except: []string{"fc00::/7"}}
		}},
		{name: "cidr missing", mutate: func(t *extensions.SandboxTemplate) { t.Spec.NetworkPolicy.Egress[0].To[0].IPBlock.CIDR = "" },
			want: []want{required(egressPeer0 + ".ipBlock.cidr")}},
		{name: "cidr not a CIDR", mutate: func(t *extensions.SandboxTemplate) { t.Spec.NetworkPolicy.Egress[0].To[0].IPBlock.CIDR = "10.0.0.0/33" },
			want: []want{invalid(egressPeer0 + ".ipBlock.cidr")}},
		{name: "cidr with host bits", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].To[0].IPBlock = &networkingv1.IPBlock{CIDR: "10.0.0.1/8"}
		}, want: []want{invalid(egressPeer0 + ".ipBlock.cidr")}},
		{name: "except not a CIDR", mutate: func(t *extensions.SandboxTemplate) { t.Spec.NetworkPolicy.Egress[0].To[0].IPBlock.Except[1] = "nope" },
			want: []want{invalid(egressPeer0 + ".ipBlock.except[1]")}},
		{name: "except outside cidr", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].To[0].IPBlock = &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16", "192.168.0.0/16"}}
		}, want: []want{invalid(egressPeer0 + ".ipBlock.except[1]")}},
		{name: "except equal to cidr", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].To[0].IPBlock = &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.0.0.0/8"}}
		}, want: []want{invalid(egressPeer0 + ".ipBlock.except[0]")}},
		{name: "except of the other family", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].To[0].IPBlock = &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"fc00::/7"}}
		}, want: []want{invalid(egressPeer0 + ".ipBlock.except[0]")}},
		{name: "peer without anything", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].To[0] = networkingv1.NetworkPolicyPeer{}
		}, want: []want{required(egressPeer0)}},
		{name: "peer with ipBlock and a selector", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Egress[0].To[0].PodSelector = &metav1.LabelSelector{}
		}, want: []want{forbidden(egressPeer0 + ".ipBlock")}},
		{name: "empty pod selector (all pods in the namespace)", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Ingress[0].From[0] = networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}}
		}},
		{name: "pod selector label value invalid", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Ingress[0].From[0].PodSelector.MatchLabels["app"] = "istio ingress"
		}, want: []want{invalid(ingressPeer + ".podSelector.matchLabels")}},
		{name: "namespace selector expression without values", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Ingress[0].From[0].NamespaceSelector = &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}},
			}
		}, want: []want{required(ingressPeer + ".namespaceSelector.matchExpressions[0].values")}},
		{name: "namespace selector expression with values", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.NetworkPolicy.Ingress[0].From[0].NamespaceSelector = &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}},
			}
		}},

		// all errors at once
		{name: "several errors are all reported", mutate: func(t *extensions.SandboxTemplate) {
			t.Name = strings.Repeat("t", 240)
			t.Spec.PodTemplate.Spec.Containers[0].Name = "My_Container"
			t.Spec.VolumeClaimTemplates[0].Spec.AccessModes = nil
			t.Spec.NetworkPolicyManagement = "Auto"
			t.Spec.EnvVarsInjectionPolicy = "Maybe"
			t.Spec.NetworkPolicy.Egress[0].Ports[1].Protocol = ptr.To(corev1.Protocol("ICMP"))
			t.Spec.NetworkPolicy.Egress[0].To[0].IPBlock.CIDR = "0.0.0.0/40"
		}, want: []want{
			invalid("metadata.name"),
			invalid("spec.podTemplate.spec.containers[0].name"),
			required("spec.volumeClaimTemplates[0].spec.accessModes"),
			notSupported("spec.networkPolicyManagement"),
			notSupported("spec.envVarsInjectionPolicy"),
			notSupported("spec.networkPolicy.egress[0].ports[1].protocol"),
			invalid(egressPeer0 + ".ipBlock.cidr"),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := validTemplate()
			tc.mutate(tmpl)
			expectErrors(t, ValidateSandboxTemplate(tmpl), tc.want...)
		})
	}
}

func TestValidateSandboxTemplateUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(t *extensions.SandboxTemplate)
		want   []want
	}{
		{name: "unchanged", mutate: func(t *extensions.SandboxTemplate) {}},
		{name: "everything in the spec changes", mutate: func(t *extensions.SandboxTemplate) {
			t.Spec.PodTemplate.Spec.Containers[0].Image = "python:3.13"
			t.Spec.VolumeClaimTemplates = append(t.Spec.VolumeClaimTemplates, volumeClaimTemplate("cache"))
			t.Spec.NetworkPolicy = nil
			t.Spec.NetworkPolicyManagement = extensions.NetworkPolicyManagementUnmanaged
			t.Spec.EnvVarsInjectionPolicy = extensions.EnvVarsInjectionPolicyOverrides
			t.Spec.Service = nil
		}},
		{name: "new spec is validated", mutate: func(t *extensions.SandboxTemplate) { t.Spec.PodTemplate.Spec.Containers = nil },
			want: []want{required("spec.podTemplate.spec.containers")}},
		{name: "name changed", mutate: func(t *extensions.SandboxTemplate) { t.Name = "other" },
			want: []want{invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldT := validTemplate()
			newT := validTemplate()
			tc.mutate(newT)
			expectErrors(t, ValidateSandboxTemplateUpdate(newT, oldT), tc.want...)
		})
	}
}
