// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"slices"
	"sort"

	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsvalidation "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/validation"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

var supportedClaimShutdownPolicies = []extensions.ShutdownPolicy{
	extensions.ShutdownPolicyDelete, extensions.ShutdownPolicyDeleteForeground, extensions.ShutdownPolicyRetain,
}

// ValidateSandboxClaimName checks the name of a SandboxClaim. A claim that is not served from a
// warm pool gets a Sandbox of its own name, so it must be a valid Sandbox name: a DNS-1035 label
// (see agents validation.ValidateSandboxName).
var ValidateSandboxClaimName = agentsvalidation.ValidateSandboxName

// ValidateSandboxClaim validates a SandboxClaim on create.
func ValidateSandboxClaim(c *extensions.SandboxClaim) field.ErrorList {
	allErrs := agentsvalidation.ValidateObjectMeta(&c.ObjectMeta, ValidateSandboxClaimName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSandboxClaimSpec(&c.Spec, c.Name, field.NewPath("spec"))...)
	return allErrs
}

// ValidateSandboxClaimUpdate validates an update of a claim's metadata and spec.
//
// What may change:
//   - spec.sandboxTemplateRef, spec.warmPoolRef, spec.warmpool, spec.env and
//     spec.volumeClaimTemplates are immutable: the claim's Sandbox has already been made from (or
//     adopted according to) them, and the controller never rebuilds a Sandbox for a claim, so a
//     change would only make the claim lie about its Sandbox.
//   - spec.additionalPodMetadata stays mutable: the controller merges it into the Sandbox's pod
//     template on every sync, and from there onto the running Pod.
//   - spec.lifecycle stays mutable: expiry is computed by the claim controller from the current
//     spec, so extending or shortening a claim's life, or changing what happens then, just works.
func ValidateSandboxClaimUpdate(newC, oldC *extensions.SandboxClaim) field.ErrorList {
	allErrs := agentsvalidation.ValidateObjectMetaUpdate(&newC.ObjectMeta, &oldC.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateSandboxClaimSpec(&newC.Spec, newC.Name, specPath)...)

	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(
		newC.Spec.TemplateRef.Name, oldC.Spec.TemplateRef.Name, specPath.Child("sandboxTemplateRef", "name"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(
		warmPoolValue(newC.Spec.WarmPool), warmPoolValue(oldC.Spec.WarmPool), specPath.Child("warmpool"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(
		warmPoolRefName(newC.Spec.WarmPoolRef), warmPoolRefName(oldC.Spec.WarmPoolRef), specPath.Child("warmPoolRef", "name"))...)
	if !apiequality.Semantic.DeepEqual(newC.Spec.Env, oldC.Spec.Env) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("env"), field.OmitValueType{},
			"field is immutable: the environment is injected when the sandbox is created"))
	}
	if !apiequality.Semantic.DeepEqual(newC.Spec.VolumeClaimTemplates, oldC.Spec.VolumeClaimTemplates) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("volumeClaimTemplates"), field.OmitValueType{},
			"field is immutable: the PersistentVolumeClaims are made when the sandbox is created"))
	}
	return allErrs
}

// ValidateSandboxClaimStatusUpdate validates an update of a claim's status.
func ValidateSandboxClaimStatusUpdate(newC, oldC *extensions.SandboxClaim) field.ErrorList {
	allErrs := agentsvalidation.ValidateObjectMetaUpdate(&newC.ObjectMeta, &oldC.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	allErrs = append(allErrs, metav1validation.ValidateConditions(newC.Status.Conditions, statusPath.Child("conditions"))...)
	allErrs = append(allErrs, agentsvalidation.ValidateConditionTimes(newC.Status.Conditions, statusPath.Child("conditions"))...)
	sandboxPath := statusPath.Child("sandbox")
	if name := newC.Status.SandboxStatus.Name; name != "" {
		for _, msg := range agentsvalidation.ValidateSandboxName(name, false) {
			allErrs = append(allErrs, field.Invalid(sandboxPath.Child("name"), name, msg))
		}
	}
	allErrs = append(allErrs, agentsvalidation.ValidatePodIPs(newC.Status.SandboxStatus.PodIPs, sandboxPath.Child("podIPs"))...)
	return allErrs
}

// warmPoolValue is the policy a claim's spec.warmpool stands for; unset means "default", which is
// what the defaulter fills in.
func warmPoolValue(p *extensions.WarmPoolPolicy) extensions.WarmPoolPolicy {
	if p == nil {
		return extensions.WarmPoolPolicyDefault
	}
	return *p
}

// warmPoolRefName is the pool a claim's spec.warmPoolRef names, empty without one.
func warmPoolRefName(ref *extensions.SandboxWarmPoolRef) string {
	if ref == nil {
		return ""
	}
	return ref.Name
}

func validateSandboxClaimSpec(spec *extensions.SandboxClaimSpec, claimName string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	// With a warmPoolRef the template comes from the pool, filled in when the claim is created; a
	// pool that is not there is reported on warmPoolRef by the registry.
	if spec.WarmPoolRef == nil || spec.TemplateRef.Name != "" {
		allErrs = append(allErrs, validateTemplateRef(&spec.TemplateRef, fldPath.Child("sandboxTemplateRef"))...)
	}

	warmPool := warmPoolValue(spec.WarmPool)
	if warmPool != extensions.WarmPoolPolicyNone && warmPool != extensions.WarmPoolPolicyDefault {
		for _, msg := range ValidateSandboxWarmPoolName(string(warmPool), false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("warmpool"), warmPool,
				`must be "none", "default" or the name of a SandboxWarmPool: `+msg))
		}
	}
	if ref := spec.WarmPoolRef; ref != nil {
		refPath := fldPath.Child("warmPoolRef", "name")
		if ref.Name == "" {
			allErrs = append(allErrs, field.Required(refPath, "the name of a SandboxWarmPool in the same namespace"))
		} else {
			for _, msg := range ValidateSandboxWarmPoolName(ref.Name, false) {
				allErrs = append(allErrs, field.Invalid(refPath, ref.Name, msg))
			}
		}
		// The two ways of naming the pool are kept in step: warmpool defaults to warmPoolRef's pool
		// and may only be that pool or "none" (the pool's template, started cold).
		if ref.Name != "" && warmPool != extensions.WarmPoolPolicyNone && string(warmPool) != ref.Name {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("warmpool"), warmPool,
				fmt.Sprintf(`must be %q (spec.warmPoolRef.name) or "none" when spec.warmPoolRef is set`, ref.Name)))
		}
	}

	allErrs = append(allErrs, validateAdditionalPodMetadata(&spec.AdditionalPodMetadata, fldPath.Child("additionalPodMetadata"))...)
	allErrs = append(allErrs, validateClaimBounds(spec, fldPath)...)

	envPath := fldPath.Child("env")
	allErrs = append(allErrs, validateClaimEnv(spec.Env, envPath)...)
	// env together with a warm pool policy other than "none" is a warm claim like any other: the
	// values reach the member late (exec, and the template's envVarsDelivery).

	// The claim's sandbox is named after the claim whenever it has volume claim templates (they
	// force a cold start), so its PersistentVolumeClaims are <template>-<claim name>. Whether the
	// template's policy allows them is checked by the registry, which reads the template.
	vctPath := fldPath.Child("volumeClaimTemplates")
	vctErrs := agentsvalidation.ValidateVolumeClaimTemplates(spec.VolumeClaimTemplates, vctPath)
	allErrs = append(allErrs, vctErrs...)
	if len(vctErrs) == 0 && claimName != "" && len(ValidateSandboxClaimName(claimName, false)) == 0 {
		allErrs = append(allErrs, agentsvalidation.ValidateVolumeClaimNames(spec.VolumeClaimTemplates, claimName, vctPath)...)
	}

	if lc := spec.Lifecycle; lc != nil {
		lcPath := fldPath.Child("lifecycle")
		allErrs = append(allErrs, agentsvalidation.ValidateOptionalTime(lc.ShutdownTime, lcPath.Child("shutdownTime"))...)
		allErrs = append(allErrs, agentsvalidation.ValidateIdleTimeout(lc.IdleTimeout, lcPath.Child("idleTimeout"))...)
		if lc.TTLSecondsAfterFinished != nil {
			allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(*lc.TTLSecondsAfterFinished), lcPath.Child("ttlSecondsAfterFinished"))...)
		}
		if p := lc.ShutdownPolicy; p != nil && !slices.Contains(supportedClaimShutdownPolicies, *p) {
			allErrs = append(allErrs, field.NotSupported(lcPath.Child("shutdownPolicy"), *p, supportedClaimShutdownPolicies))
		}
	}
	return allErrs
}

// The lists a claim fills that the server copies into objects it makes with its own rights (the
// pod, one PVC per volume) are bounded, whatever the template says: past them, a 422.
const (
	MaxClaimEnv          = 128
	MaxClaimMetadataKeys = 64
)

// validateClaimBounds checks the number of env entries, volumes, and labels and annotations of
// the pod and of each volume.
func validateClaimBounds(spec *extensions.SandboxClaimSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	tooMany := func(n, limit int, p *field.Path) {
		if n > limit {
			allErrs = append(allErrs, field.TooMany(p, n, limit))
		}
	}
	tooMany(len(spec.Env), MaxClaimEnv, fldPath.Child("env"))
	tooMany(len(spec.VolumeClaimTemplates), MaxClaimVolumes, fldPath.Child("volumeClaimTemplates"))
	metaPath := fldPath.Child("additionalPodMetadata")
	tooMany(len(spec.AdditionalPodMetadata.Labels), MaxClaimMetadataKeys, metaPath.Child("labels"))
	tooMany(len(spec.AdditionalPodMetadata.Annotations), MaxClaimMetadataKeys, metaPath.Child("annotations"))
	for i, v := range spec.VolumeClaimTemplates {
		volMeta := fldPath.Child("volumeClaimTemplates").Index(i).Child("metadata")
		tooMany(len(v.Labels), MaxClaimMetadataKeys, volMeta.Child("labels"))
		tooMany(len(v.Annotations), MaxClaimMetadataKeys, volMeta.Child("annotations"))
	}
	return allErrs
}

// validateAdditionalPodMetadata checks the labels and annotations a claim adds to its Pod: valid
// keys and values, and none in a domain that belongs to Kubernetes or to this system.
func validateAdditionalPodMetadata(m *agents.PodMetadata, fldPath *field.Path) field.ErrorList {
	allErrs := agentsvalidation.ValidatePodMetadata(m, fldPath)
	for _, kind := range []struct {
		name string
		keys map[string]string
	}{{"labels", m.Labels}, {"annotations", m.Annotations}} {
		for _, k := range sortedKeys(kind.keys) {
			if IsRestrictedMetadataKey(k) {
				allErrs = append(allErrs, field.Forbidden(fldPath.Child(kind.name).Key(k),
					"keys in the kubernetes.io, k8s.io and agents.x-k8s.io domains (and their subdomains) are reserved"))
			}
		}
	}
	return allErrs
}

// validateClaimEnv checks the environment variables a claim injects: valid names, a valid
// container name when one is given, and each (name, container) pair at most once.
func validateClaimEnv(env []extensions.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	type target struct{ name, container string }
	seen := map[target]bool{}
	for i, e := range env {
		p := fldPath.Index(i)
		nameErrs := agentsvalidation.ValidateEnvVarName(e.Name, p.Child("name"))
		allErrs = append(allErrs, nameErrs...)
		if e.ContainerName != "" {
			for _, msg := range utilvalidation.IsDNS1123Label(e.ContainerName) {
				allErrs = append(allErrs, field.Invalid(p.Child("containerName"), e.ContainerName, msg))
			}
		}
		if len(nameErrs) > 0 {
			continue
		}
		key := target{e.Name, e.ContainerName}
		if seen[key] {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), e.Name))
		}
		seen[key] = true
	}
	return allErrs
}

// ValidateClaimPodMetadataForTemplate checks the pod metadata keys a claim sets against what its
// template t opens (ClaimPodMetadataRefusal).
func ValidateClaimPodMetadataForTemplate(c *extensions.SandboxClaim, t *extensions.SandboxTemplate) field.ErrorList {
	var allErrs field.ErrorList
	spec := &t.Spec
	policy := claimMetadataPolicy(t)
	peerKeys, allowedLabels, allowedAnnotations := policy.PeerKeys, policy.AllowedLabels, policy.AllowedAnnotations
	metaPath := field.NewPath("spec", "additionalPodMetadata")
	templateMeta := spec.PodTemplate.ObjectMeta
	for _, kind := range []struct {
		name     string
		label    bool
		keys     map[string]string
		allowed  []string
		template map[string]string
	}{
		{"labels", true, c.Spec.AdditionalPodMetadata.Labels, allowedLabels, templateMeta.Labels},
		{"annotations", false, c.Spec.AdditionalPodMetadata.Annotations, allowedAnnotations, templateMeta.Annotations},
	} {
		for _, k := range sortedKeys(kind.keys) {
			// Reserved domains are ValidateSandboxClaim's; the template's own keys are compared by
			// the controller (the same value changes nothing, another is refused).
			if _, set := kind.template[k]; IsRestrictedMetadataKey(k) || set {
				continue
			}
			if why := ClaimPodMetadataRefusal(k, kind.label, kind.allowed, peerKeys); why != "" {
				allErrs = append(allErrs, field.Forbidden(metaPath.Child(kind.name).Key(k), why))
			}
		}
	}
	return allErrs
}

// claimMetadataPolicy is what template t opens to claims' pod and volume metadata.
func claimMetadataPolicy(t *extensions.SandboxTemplate) ClaimMetadataPolicy {
	spec := &t.Spec
	p := ClaimMetadataPolicy{PeerKeys: PeerLabelKeys(spec.NetworkPolicyManagement != extensions.NetworkPolicyManagementUnmanaged, spec.NetworkPolicy != nil,
		networkPolicyIngress(spec.NetworkPolicy), networkPolicyEgress(spec.NetworkPolicy))}
	if a := spec.AllowedClaimPodMetadata; a != nil {
		p.AllowedLabels, p.AllowedAnnotations = nonNil(a.Labels), nonNil(a.Annotations)
	}
	return p
}

// ValidateClaimVolumesForTemplate checks a claim's volume claim templates against template t
// (ValidateClaimVolumes); a policy that refuses them all is reported by the registry.
func ValidateClaimVolumesForTemplate(c *extensions.SandboxClaim, t *extensions.SandboxTemplate) field.ErrorList {
	policy := t.Spec.VolumeClaimTemplatesPolicy
	if len(c.Spec.VolumeClaimTemplates) == 0 ||
		(policy != extensions.VolumeClaimTemplatesPolicyAllowed && policy != extensions.VolumeClaimTemplatesPolicyOverrides) {
		return nil
	}
	var classes []*string
	for i := range t.Spec.VolumeClaimTemplates {
		classes = append(classes, t.Spec.VolumeClaimTemplates[i].Spec.StorageClassName)
	}
	volumePolicy := NewClaimVolumePolicy(classes, t.Spec.PodTemplate.Spec.Volumes, claimMetadataPolicy(t))
	if o := t.Spec.ClaimVolumeClaimTemplates; o != nil {
		volumePolicy.Open(o.AllowedFields, o.StorageClassNames, o.MaxCount, o.MaxStorage)
	}
	vols := make([]ClaimVolume, 0, len(c.Spec.VolumeClaimTemplates))
	for i := range c.Spec.VolumeClaimTemplates {
		v := &c.Spec.VolumeClaimTemplates[i]
		vols = append(vols, ClaimVolume{Name: v.Name, Labels: v.Labels, Annotations: v.Annotations, Spec: &v.Spec})
	}
	return ValidateClaimVolumes(vols, volumePolicy, field.NewPath("spec", "volumeClaimTemplates"))
}

// ValidateClaimEnvForTemplate checks a claim's env against its template t: which containers it
// reaches (ClaimEnvContainerRefusal) and loader variables (ClaimEnvNameRefusal).
func ValidateClaimEnvForTemplate(c *extensions.SandboxClaim, t *extensions.SandboxTemplate) field.ErrorList {
	var allErrs field.ErrorList
	spec := &t.Spec
	first := ""
	if len(spec.PodTemplate.Spec.Containers) > 0 {
		first = spec.PodTemplate.Spec.Containers[0].Name
	}
	overrides := spec.EnvVarsInjectionPolicy == extensions.EnvVarsInjectionPolicyOverrides
	envPath := field.NewPath("spec", "env")
	for i, e := range c.Spec.Env {
		if why := ClaimEnvNameRefusal(e.Name, overrides); why != "" {
			allErrs = append(allErrs, field.Forbidden(envPath.Index(i).Child("name"), e.Name+" is "+why))
		}
		if why := ClaimEnvContainerRefusal(e.ContainerName, first, spec.EnvVarsInjectionContainers); why != "" {
			allErrs = append(allErrs, field.Forbidden(envPath.Index(i).Child("containerName"), why))
		}
	}
	return allErrs
}

func networkPolicyIngress(np *extensions.NetworkPolicySpec) []networkingv1.NetworkPolicyIngressRule {
	if np == nil {
		return nil
	}
	return np.Ingress
}

func networkPolicyEgress(np *extensions.NetworkPolicySpec) []networkingv1.NetworkPolicyEgressRule {
	if np == nil {
		return nil
	}
	return np.Egress
}

// nonNil keeps a listed but empty allow list (nothing allowed) apart from no list.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
