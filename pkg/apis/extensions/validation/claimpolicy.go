// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a claim copies into its sandbox (pod metadata, env) is checked against what its template
// opens, at the API when the claim is created and again by the controller that builds the pod.

// DefaultPolicyPeerLabels are the pod labels the secure default NetworkPolicy of a template
// admits ingress from: the sandbox router.
var DefaultPolicyPeerLabels = map[string]string{"app": "sandbox-router"}

// sidecarDomains are the domains of keys that ask a mesh or injector for a sidecar, or configure
// or bypass one (istio's traffic.sidecar.istio.io/excludeOutboundIPRanges, vault's agent-inject,
// OpenTelemetry's inject-java ...). A key matches when its prefix is the domain or a subdomain.
var sidecarDomains = []string{
	"istio.io", "linkerd.io", "kuma.io", "openservicemesh.io", "consul.hashicorp.com",
	"vault.hashicorp.com", "dapr.io", "opentelemetry.io", "appmesh.k8s.aws", "sidecar.jaegertracing.io",
}

// attachmentDomains are the domains of keys by which network plugins, cloud networking, device
// plugins and backup tools give a pod more reach than the template's: extra interfaces and fixed
// addresses (Multus, Calico, Cilium, Antrea, OVN, SR-IOV, NSM, flannel, weave, Spiderpool), cloud
// identities and ENIs (AWS, Azure, GKE), devices (NVIDIA, AMD, Intel), hooks that run commands in
// the pod (Velero, K8up, Stash) and eviction opt-outs (Karpenter). A key matches when its prefix is
// the domain or a subdomain (k8s.v1.cni.cncf.io, cni.projectcalico.org, policy.cilium.io ...).
var attachmentDomains = []string{
	"cni.cncf.io", "multus-cni.io", "projectcalico.org", "cilium.io", "antrea.io", "antrea.tanzu.vmware.com",
	"ovn.org", "sriovnetwork.openshift.io", "openshift.io", "networkservicemesh.io", "coreos.com", "weave.works",
	"spidernet.io", "kube-router.io", "kubeovn.io", "amazonaws.com", "aws", "azure.com", "azure.workload.identity",
	"gke.io", "cloud.google.com", "nvidia.com", "amd.com", "intel.com", "velero.io", "k8up.io", "stash.appscode.com",
	"kanister.io", "karpenter.sh", "kubevirt.io", "multicluster.x-k8s.io",
}

// runtimeKeyPrefixes start the annotation keys container runtimes read from a pod (CRI-O, kata,
// gVisor, containerd, crun): device, user namespace, hypervisor and mount settings.
var runtimeKeyPrefixes = []string{"io.kubernetes.", "io.katacontainers.", "dev.gvisor.", "io.containerd.", "run.oci."}

// loaderEnvVars are variables that make a loader, shell or interpreter run code of the setter's
// choice in every process of the container, not just pass it a value.
var loaderEnvVars = []string{
	"PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS",
	"GCONV_PATH", "GLIBC_TUNABLES", "HOSTALIASES", "OPENSSL_CONF", "OPENSSL_ENGINES",
	"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONWARNINGS", "PYTHONBREAKPOINT", "PYTHONINSPECT",
	"PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB",
	"NODE_OPTIONS", "NODE_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
	"LUA_INIT", "LUA_PATH", "LUA_CPATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_ASKPASS",
}

// loaderEnvVarPrefixes start loader variable families: the dynamic loader's (LD_PRELOAD,
// LD_LIBRARY_PATH, LD_AUDIT ...), bash's exported functions and git's config injection.
var loaderEnvVarPrefixes = []string{"LD_", "BASH_FUNC_", "GIT_CONFIG_"}

// IsLoaderEnvVar reports whether an environment variable steers a loader or interpreter.
func IsLoaderEnvVar(name string) bool {
	return slices.Contains(loaderEnvVars, name) || slices.ContainsFunc(loaderEnvVarPrefixes, func(p string) bool {
		return strings.HasPrefix(name, p)
	})
}

// PeerLabelKeys are the pod label keys a template's NetworkPolicy selects peers by, in its ingress
// and egress rules: DefaultPolicyPeerLabels for the secure default, none when the policy is not
// managed (policies of others are not known; such a template should list its keys in
// allowedClaimPodMetadata).
func PeerLabelKeys(managed, custom bool, ingress []networkingv1.NetworkPolicyIngressRule, egress []networkingv1.NetworkPolicyEgressRule) []string {
	if !managed {
		return nil
	}
	if !custom {
		keys := make([]string, 0, len(DefaultPolicyPeerLabels))
		for k := range DefaultPolicyPeerLabels {
			keys = append(keys, k)
		}
		return keys
	}
	var keys []string
	add := func(peers []networkingv1.NetworkPolicyPeer) {
		for _, p := range peers {
			keys = append(keys, selectorKeys(p.PodSelector)...)
		}
	}
	for _, r := range ingress {
		add(r.From)
	}
	for _, r := range egress {
		add(r.To)
	}
	return keys
}

func selectorKeys(s *metav1.LabelSelector) []string {
	if s == nil {
		return nil
	}
	var keys []string
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	for _, e := range s.MatchExpressions {
		keys = append(keys, e.Key)
	}
	return keys
}

// ClaimPodMetadataRefusal says why a template refuses a pod label (label true) or annotation key
// in a claim's additionalPodMetadata, or "" when it accepts it. allowed is the template's
// allowedClaimPodMetadata list of that kind, nil when the template has none; peerKeys are its
// PeerLabelKeys.
func ClaimPodMetadataRefusal(key string, label bool, allowed []string, peerKeys []string) string {
	switch {
	case IsRestrictedMetadataKey(key):
		return "keys in the kubernetes.io, k8s.io and agents.x-k8s.io domains (and their subdomains) are reserved"
	case allowed != nil && !slices.Contains(allowed, key):
		return "the template's allowedClaimPodMetadata does not list this key"
	case allowed != nil:
		return ""
	case label && slices.Contains(peerKeys, key):
		return "the template's NetworkPolicy admits peers by this label: only the template may set it (allowedClaimPodMetadata)"
	case isSidecarKey(key):
		return "sidecar injection and service mesh keys are only set by the template (allowedClaimPodMetadata)"
	case inDomains(key, attachmentDomains):
		return "network attachment, cloud identity, device and backup hook keys are only set by the template (allowedClaimPodMetadata)"
	case slices.ContainsFunc(runtimeKeyPrefixes, func(p string) bool { return strings.HasPrefix(key, p) }):
		return "container runtime keys are only set by the template (allowedClaimPodMetadata)"
	}
	return ""
}

func isSidecarKey(key string) bool {
	return inDomains(key, sidecarDomains)
}

// inDomains reports whether key's prefix is one of domains or a subdomain of one.
func inDomains(key string, domains []string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && slices.ContainsFunc(domains, func(d string) bool {
		return prefix == d || strings.HasSuffix(prefix, "."+d)
	})
}

// ClaimEnvContainerRefusal says why a template does not let claim env reach container (empty:
// the first regular container), or "" when it does. first is the template's first regular
// container, open its envVarsInjectionContainers.
func ClaimEnvContainerRefusal(container, first string, open []string) string {
	if container == "" || container == first || slices.Contains(open, container) {
		return ""
	}
	return "claim env reaches the template's first container (" + first + ") and the containers its envVarsInjectionContainers names, not this one"
}

// ClaimEnvNameRefusal says why a template refuses a claim env variable by its name, or "".
// overrides says whether the template's envVarsInjectionPolicy is Overrides.
func ClaimEnvNameRefusal(name string, overrides bool) string {
	if IsLoaderEnvVar(name) && !overrides {
		return "a loader or interpreter variable: claims may set it only when the template's envVarsInjectionPolicy is Overrides"
	}
	return ""
}
