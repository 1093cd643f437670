// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package claimtest builds the claims, templates, pools and warm members that the tests of a
// claim's adoption share: the claim controller's (pkg/controllers/sandboxclaim) and the
// create-time binding's (pkg/registry/claimbinding) derive adoptions from the same objects, and
// check them alike.
package claimtest

import (
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/tracecontext"
)

// The test claim, its namespace and template, and the pool its members come from.
const (
	Namespace    = "default"
	ClaimName    = "my-claim"
	ClaimUID     = types.UID("claim-uid-1")
	TemplateName = "python"
	PoolName     = "fast-pool"
	Generation   = int64(4)
)

// CollidingTemplateName is another template whose name has TemplateName's 32-bit name hash
// (found by meeting in the middle of FNV-1a), and CollidingPoolName a pool of it: its members
// carry the test template's hash label, as anyone who may make templates and pools can arrange.
const (
	CollidingTemplateName = "tmpl-ad1ewu5h"
	CollidingPoolName     = "colliding-pool"
)

// Now is the controller's clock in every test.
var Now = time.Date(2026, 4, 13, 12, 0, 0, 0, time.UTC)

// Hash is the 32-bit FNV-1a of s in 8 hex digits, computed here rather than through the
// naming package the controller uses.
func Hash(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

// The name hashes the members of the test template and pool are labelled with.
var (
	TemplateHash = Hash(TemplateName)
	PoolHash     = Hash(PoolName)
)

// ---- object builders ----

// Claim is a live claim of the test template with the finalizer; mods adjust it.
func Claim(mods ...func(*extensionsv1beta1.SandboxClaim)) *extensionsv1beta1.SandboxClaim {
	c := &extensionsv1beta1.SandboxClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: extensionsv1beta1.SchemeGroupVersion.String(), Kind: "SandboxClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name: ClaimName, Namespace: Namespace, UID: ClaimUID, Generation: Generation,
			ResourceVersion:   "100",
			CreationTimestamp: metav1.NewTime(Now.Add(-time.Minute)),
			Finalizers:        []string{extensionsv1beta1.ClaimSandboxFinalizer},
		},
		Spec: extensionsv1beta1.SandboxClaimSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: TemplateName}},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

// Named gives the claim another name and UID.
func Named(name string, uid types.UID) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) { c.Name, c.UID = name, uid }
}

// WarmPool sets the claim's spec.warmpool.
func WarmPool(p extensionsv1beta1.WarmPoolPolicy) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) { c.Spec.WarmPool = ptr.To(p) }
}

// WithEnv sets the environment variables the claim asks for.
func WithEnv(env ...extensionsv1beta1.EnvVar) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) { c.Spec.Env = env }
}

// WithExtraMeta sets the claim's additionalPodMetadata.
func WithExtraMeta(labels, annotations map[string]string) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) {
		c.Spec.AdditionalPodMetadata = agentsv1beta1.PodMetadata{Labels: labels, Annotations: annotations}
	}
}

// WithLifecycle sets the claim's lifecycle: a shutdown time that far from Now, a TTL after it
// finished and a shutdown policy, each when not nil.
func WithLifecycle(shutdownIn *time.Duration, ttl *int32, policy *extensionsv1beta1.ShutdownPolicy) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) {
		lc := &extensionsv1beta1.Lifecycle{TTLSecondsAfterFinished: ttl, ShutdownPolicy: policy}
		if shutdownIn != nil {
			lc.ShutdownTime = &metav1.Time{Time: Now.Add(*shutdownIn)}
		}
		c.Spec.Lifecycle = lc
	}
}

// WithClaimStatus sets the claim's status.
func WithClaimStatus(st extensionsv1beta1.SandboxClaimStatus) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) { c.Status = st }
}

// WithClaimLabel sets a label of the claim.
func WithClaimLabel(k, v string) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[k] = v
	}
}

// ClaimDeleting marks the claim as being deleted.
func ClaimDeleting(c *extensionsv1beta1.SandboxClaim) {
	c.DeletionTimestamp = &metav1.Time{Time: Now.Add(-time.Second)}
}

// WithFinalizers sets the claim's finalizers.
func WithFinalizers(f ...string) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) { c.Finalizers = f }
}

// Template is the test template: one init and one regular container, each with one variable,
// pod labels and annotations, managed networking with the secure default.
func Template(mods ...func(*extensionsv1beta1.SandboxTemplate)) *extensionsv1beta1.SandboxTemplate {
	t := &extensionsv1beta1.SandboxTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: extensionsv1beta1.SchemeGroupVersion.String(), Kind: "SandboxTemplate"},
		ObjectMeta: metav1.ObjectMeta{
			Name: TemplateName, Namespace: Namespace, UID: "template-uid", ResourceVersion: "7",
		},
		Spec: extensionsv1beta1.SandboxTemplateSpec{
			PodTemplate: agentsv1beta1.PodTemplate{
				ObjectMeta: agentsv1beta1.PodMetadata{
					Labels:      map[string]string{"app": "python", "tier": "sandbox"},
					Annotations: map[string]string{"team": "ml"},
				},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: "setup", Image: "busybox",
						Env: []corev1.EnvVar{{Name: "INIT_MODE", Value: "fast"}}}},
					Containers: []corev1.Container{
						{Name: "agent", Image: "python:3.12", Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}}},
						{Name: "sidecar", Image: "envoy"},
					},
					RestartPolicy: corev1.RestartPolicyNever,
				},
			},
			NetworkPolicyManagement: extensionsv1beta1.NetworkPolicyManagementManaged,
			EnvVarsInjectionPolicy:  extensionsv1beta1.EnvVarsInjectionPolicyDisallowed,
		},
	}
	for _, m := range mods {
		m(t)
	}
	return t
}

// EnvPolicy sets the template's envVarsInjectionPolicy.
func EnvPolicy(p extensionsv1beta1.EnvVarsInjectionPolicy) func(*extensionsv1beta1.SandboxTemplate) {
	return func(t *extensionsv1beta1.SandboxTemplate) { t.Spec.EnvVarsInjectionPolicy = p }
}

// Sandbox is a bare Sandbox in the test namespace; mods adjust it.
func Sandbox(name string, mods ...func(*agentsv1beta1.Sandbox)) *agentsv1beta1.Sandbox {
	sb := &agentsv1beta1.Sandbox{
		TypeMeta: metav1.TypeMeta{APIVersion: agentsv1beta1.SchemeGroupVersion.String(), Kind: "Sandbox"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: Namespace, UID: types.UID(name + "-uid"), ResourceVersion: "11",
			CreationTimestamp: metav1.NewTime(Now.Add(-time.Hour)),
		},
		Spec: agentsv1beta1.SandboxSpec{
			PodTemplate: agentsv1beta1.PodTemplate{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "python:3.12"}}},
			},
			Replicas: ptr.To[int32](1),
		},
	}
	for _, m := range mods {
		m(sb)
	}
	return sb
}

// OwnedByClaim makes the claim of that name and UID the sandbox's controller.
func OwnedByClaim(name string, uid types.UID) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) {
		sb.OwnerReferences = []metav1.OwnerReference{ClaimOwnerRef(name, uid)}
	}
}

// ClaimOwnerRef is the controller reference of the claim of that name and UID.
func ClaimOwnerRef(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxClaim",
		Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// PoolOwnerRef is the controller reference of the test pool of that name (see Pools).
func PoolOwnerRef(pool string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxWarmPool",
		Name: pool, UID: types.UID(pool + "-uid"), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// WithOwner makes ref the sandbox's only owner reference.
func WithOwner(ref metav1.OwnerReference) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.OwnerReferences = []metav1.OwnerReference{ref} }
}

// InNamespace moves the sandbox to namespace ns.
func InNamespace(ns string) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.Namespace = ns }
}

// SandboxReady sets the sandbox's Ready condition, ten minutes old.
func SandboxReady(status metav1.ConditionStatus, reason, msg string) func(*agentsv1beta1.Sandbox) {
	return WithSandboxCond(metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(Now.Add(-10 * time.Minute))})
}

// WithSandboxCond sets a condition of the sandbox.
func WithSandboxCond(c metav1.Condition) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { meta.SetStatusCondition(&sb.Status.Conditions, c) }
}

// WithPodIPs sets the addresses of the sandbox's pod.
func WithPodIPs(ips ...string) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.Status.PodIPs = ips }
}

// SandboxDeleting marks the sandbox as being deleted, held by its children's finalizer.
func SandboxDeleting(sb *agentsv1beta1.Sandbox) {
	sb.DeletionTimestamp = &metav1.Time{Time: Now.Add(-time.Second)}
	sb.Finalizers = []string{agentsv1beta1.SandboxChildrenFinalizer}
}

// WithRV sets the sandbox's resourceVersion.
func WithRV(rv string) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.ResourceVersion = rv }
}

// Pools are the warm pools the tests' members belong to, as their controller references
// name them (PoolOwnerRef): two of the test template, and one of the colliding template.
func Pools() []*extensionsv1beta1.SandboxWarmPool {
	var out []*extensionsv1beta1.SandboxWarmPool
	for name, template := range map[string]string{PoolName: TemplateName, "other-pool": TemplateName, CollidingPoolName: CollidingTemplateName} {
		ref := PoolOwnerRef(name)
		out = append(out, &extensionsv1beta1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, UID: ref.UID},
			Spec: extensionsv1beta1.SandboxWarmPoolSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: template}}})
	}
	return out
}

// Starting are members of the test pool whose pod is not Ready yet: the controller's adoption and
// the binding at create take them when no Ready member is left.
func Starting() []struct {
	Why    string
	Member *agentsv1beta1.Sandbox
} {
	return []struct {
		Why    string
		Member *agentsv1beta1.Sandbox
	}{
		{"not Ready", WarmMember("m1", PoolName, SandboxReady(metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady, "Pod is not Ready"))},
		{"with no Ready condition", WarmMember("m1", PoolName, func(sb *agentsv1beta1.Sandbox) { sb.Status.Conditions = nil })},
	}
}

// Unofferable are members of the test pool that no claim of the test template in Namespace may take,
// each with what rules it out; the adoption and the binding at create both check them.
func Unofferable() []struct {
	Why    string
	Member *agentsv1beta1.Sandbox
} {
	return []struct {
		Why    string
		Member *agentsv1beta1.Sandbox
	}{
		{"being deleted", WarmMember("m1", PoolName, SandboxDeleting)},
		{"in another namespace", WarmMember("m1", PoolName, InNamespace("elsewhere"))},
		{"of another template", WarmMember("m1", PoolName, func(sb *agentsv1beta1.Sandbox) {
			sb.Labels[extensionsv1beta1.SandboxTemplateRefHashLabel] = Hash("node")
		})},
		// A Sandbox someone dressed up as a member: the labels, but not made by the pool.
		{"controlled by nobody", WarmMember("m1", "")},
		{"controlled by another kind", WarmMember("m1", PoolName, WithOwner(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment",
			Name: PoolName, UID: PoolOwnerRef(PoolName).UID, Controller: ptr.To(true)}))},
		{"controlled by a pool of another group", WarmMember("m1", PoolName, func(sb *agentsv1beta1.Sandbox) {
			sb.OwnerReferences[0].APIVersion = "example.com/v1"
		})},
		{"only a non-controller owner reference to the pool", WarmMember("m1", PoolName, func(sb *agentsv1beta1.Sandbox) {
			sb.OwnerReferences[0].Controller = nil
		})},
		{"controlled by another pool than its label names", WarmMember("m1", PoolName, WithOwner(PoolOwnerRef("other-pool")))},
		{"controlled by a pool of its label's name but another UID (forged, or a deleted pool)", WarmMember("m1", PoolName, func(sb *agentsv1beta1.Sandbox) {
			sb.OwnerReferences[0].UID = "forged-uid"
		})},
		{"controlled by a pool that does not exist", WarmMember("m1", "gone-pool")},
	}
}

// WarmMember is a Ready member of pool (empty: no controller) of the test template, as the warm
// pool controller makes it.
func WarmMember(name, pool string, mods ...func(*agentsv1beta1.Sandbox)) *agentsv1beta1.Sandbox {
	hash := PoolHash
	if pool != PoolName && pool != "" {
		hash = Hash(pool)
	}
	base := []func(*agentsv1beta1.Sandbox){
		func(sb *agentsv1beta1.Sandbox) {
			sb.Labels = map[string]string{
				extensionsv1beta1.WarmPoolSandboxLabel:        hash,
				extensionsv1beta1.SandboxTemplateRefHashLabel: TemplateHash,
				agentsv1beta1.SandboxPodTemplateHashLabel:     "podtmpl1",
			}
			// The pool controller records the template a member is made from.
			template := TemplateName
			if pool == CollidingPoolName {
				template = CollidingTemplateName
			}
			sb.Annotations = map[string]string{agentsv1beta1.SandboxTemplateRefAnnotation: template}
			sb.Spec.PodTemplate.ObjectMeta = agentsv1beta1.PodMetadata{
				Labels: map[string]string{
					"app": "python", "tier": "sandbox",
					extensionsv1beta1.WarmPoolSandboxLabel:        hash,
					extensionsv1beta1.SandboxTemplateRefHashLabel: TemplateHash,
					agentsv1beta1.SandboxPodTemplateHashLabel:     "podtmpl1",
				},
				Annotations: map[string]string{"team": "ml"},
			}
			if pool != "" {
				sb.OwnerReferences = []metav1.OwnerReference{PoolOwnerRef(pool)}
			}
		},
		SandboxReady(metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"),
		WithPodIPs("10.0.0.9"),
	}
	return Sandbox(name, append(base, mods...)...)
}

// PVCTemplate is a volume claim template of that name asking for size.
func PVCTemplate(name, size string) agentsv1beta1.PersistentVolumeClaimTemplate {
	return agentsv1beta1.PersistentVolumeClaimTemplate{
		EmbeddedObjectMetadata: agentsv1beta1.EmbeddedObjectMetadata{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

// WithVolumes sets the claim's own volume claim templates.
func WithVolumes(vcts ...agentsv1beta1.PersistentVolumeClaimTemplate) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) { c.Spec.VolumeClaimTemplates = vcts }
}

// VolumePolicy sets the template's volumeClaimTemplatesPolicy and volume claim templates.
func VolumePolicy(p extensionsv1beta1.VolumeClaimTemplatesPolicy, vcts ...agentsv1beta1.PersistentVolumeClaimTemplate) func(*extensionsv1beta1.SandboxTemplate) {
	return func(t *extensionsv1beta1.SandboxTemplate) {
		t.Spec.VolumeClaimTemplatesPolicy = p
		t.Spec.VolumeClaimTemplates = vcts
	}
}

// sizes lists the volume claim templates of a sandbox as name=size.
// ReadyOf is the claim's Ready condition, failing when it has none.
func ReadyOf(t testing.TB, c *extensionsv1beta1.SandboxClaim) metav1.Condition {
	t.Helper()
	r := meta.FindStatusCondition(c.Status.Conditions, "Ready")
	if r == nil {
		t.Fatalf("claim %s has no Ready condition: %+v", c.Name, c.Status.Conditions)
	}
	return *r
}

// CheckReady compares the claim's Ready condition; a message ending in "*" matches as a prefix
// and an empty one is not compared.
func CheckReady(t testing.TB, c *extensionsv1beta1.SandboxClaim, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	r := ReadyOf(t, c)
	if r.Status != status || r.Reason != reason {
		t.Errorf("Ready = %s/%s (%q), want %s/%s", r.Status, r.Reason, r.Message, status, reason)
	}
	if msg != "" {
		if p, ok := strings.CutSuffix(msg, "*"); ok {
			if !strings.HasPrefix(r.Message, p) {
				t.Errorf("Ready message = %q, want prefix %q", r.Message, p)
			}
		} else if r.Message != msg {
			t.Errorf("Ready message = %q, want %q", r.Message, msg)
		}
	}
	if r.ObservedGeneration != c.Generation {
		t.Errorf("Ready observedGeneration = %d, want %d", r.ObservedGeneration, c.Generation)
	}
}

// ExpectAdoptedPodTemplate checks the pod template of member once adopted by the test claim (with
// owner=alice and cost-center=1234 as extra metadata): the template's, the member's and the
// claim's metadata merged, the running pod spec untouched.
func ExpectAdoptedPodTemplate(t testing.TB, adopted, member *agentsv1beta1.Sandbox) {
	t.Helper()
	want := agentsv1beta1.PodMetadata{
		Labels: map[string]string{
			"app": "python", "tier": "sandbox", "owner": "alice",
			extensionsv1beta1.SandboxIDLabel:              string(ClaimUID),
			extensionsv1beta1.SandboxTemplateRefHashLabel: TemplateHash,
		},
		Annotations: map[string]string{"team": "ml", "cost-center": "1234"},
	}
	if !apiequality.Semantic.DeepEqual(adopted.Spec.PodTemplate.ObjectMeta, want) {
		t.Errorf("pod template metadata = %+v, want %+v", adopted.Spec.PodTemplate.ObjectMeta, want)
	}
	if !apiequality.Semantic.DeepEqual(adopted.Spec.PodTemplate.Spec, member.Spec.PodTemplate.Spec) {
		t.Errorf("the running member's pod spec changed: %+v", adopted.Spec.PodTemplate.Spec)
	}
}

// Events drains recorder.
func Events(recorder *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// EventReasons drains recorder and returns the reasons of its events, in order.
func EventReasons(recorder *record.FakeRecorder) []string {
	var out []string
	for _, e := range Events(recorder) {
		// FakeRecorder formats events as "<type> <reason> <message>".
		parts := strings.SplitN(e, " ", 3)
		if len(parts) >= 2 {
			out = append(out, parts[1])
		}
	}
	return out
}

// A claim's trace context, as its creator's SDK records it: the trace and the span that
// created the claim.
const (
	TraceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	ParentID = "00f067aa0ba902b7"
	Trace    = `{"traceparent":"00-` + TraceID + `-` + ParentID + `-01"}`
)

// Traced gives the claim the trace context Trace.
func Traced(c *extensionsv1beta1.SandboxClaim) {
	c.Annotations = map[string]string{tracecontext.Annotation: Trace}
}

// ClaimCreations is the count of claim creations of the test template with the given labels, by
// their seed names.
func ClaimCreations(t testing.TB, launch, pool, podCondition string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(metrics.ClaimCreations.WithLabelValues(Namespace, TemplateName, launch, pool, podCondition))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
