// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
)

func TestCreateColdSandbox(t *testing.T) {
	claim := newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone),
		withExtraMeta(map[string]string{"owner": "alice"}, nil))
	template := newTemplate(func(t *extensionsv1beta1.SandboxTemplate) {
		t.Spec.Service = ptr.To(true)
		t.Spec.VolumeClaimTemplates = []agentsv1beta1.PersistentVolumeClaimTemplate{{
			EmbeddedObjectMetadata: agentsv1beta1.EmbeddedObjectMetadata{Name: "workspace"},
			Spec:                   corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		}}
	})
	f := newFixture(t, claim, template)
	metrics.Register()
	coldBefore := claimCreations(t, metrics.LaunchCold, "none", "not_ready")

	f.mustSync(testClaim)

	if got, want := f.writes(), []string{"create sandboxes " + testClaim, "update sandboxclaims " + testClaim, "update sandboxclaims/status " + testClaim}; !slices.Equal(got, want) {
		t.Fatalf("writes = %q, want %q", got, want)
	}
	if got := claimCreations(t, metrics.LaunchCold, "none", "not_ready") - coldBefore; got != 1 {
		t.Errorf("cold creations counted %v times under warmpool_name=none, pod_condition=not_ready; want 1", got)
	}
	expectSandboxNameLabel(t, f, testClaim)
	sb := f.createdSandboxes()[0]
	if sb.Name != testClaim || sb.Namespace != testNS {
		t.Errorf("created %s/%s, want %s/%s", sb.Namespace, sb.Name, testNS, testClaim)
	}
	if want := []metav1.OwnerReference{claimOwnerRef(testClaim, testClaimUID)}; !apiequality.Semantic.DeepEqual(sb.OwnerReferences, want) {
		t.Errorf("owner references = %+v, want %+v", sb.OwnerReferences, want)
	}
	wantLabels := map[string]string{
		extensionsv1beta1.SandboxIDLabel:              string(testClaimUID),
		extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash,
	}
	if !apiequality.Semantic.DeepEqual(sb.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", sb.Labels, wantLabels)
	}
	if got := sb.Annotations[agentsv1beta1.SandboxTemplateRefAnnotation]; got != testTemplate {
		t.Errorf("template-ref annotation = %q, want %q", got, testTemplate)
	}
	if _, ok := sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation]; ok {
		t.Errorf("a cold sandbox carries the pod-name annotation of a warm launch: %v", sb.Annotations)
	}
	wantPodMeta := agentsv1beta1.PodMetadata{
		Labels: map[string]string{"app": "python", "tier": "sandbox", "owner": "alice",
			extensionsv1beta1.SandboxIDLabel: string(testClaimUID), extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash},
		Annotations: map[string]string{"team": "ml"},
	}
	if !apiequality.Semantic.DeepEqual(sb.Spec.PodTemplate.ObjectMeta, wantPodMeta) {
		t.Errorf("pod metadata = %+v, want %+v", sb.Spec.PodTemplate.ObjectMeta, wantPodMeta)
	}
	wantSpec := template.Spec.PodTemplate.Spec.DeepCopy()
	wantSpec.AutomountServiceAccountToken = ptr.To(false)
	wantSpec.DNSPolicy = corev1.DNSNone
	wantSpec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"8.8.8.8", "1.1.1.1"}}
	if !apiequality.Semantic.DeepEqual(sb.Spec.PodTemplate.Spec, *wantSpec) {
		t.Errorf("pod spec =\n  %+v\nwant the template's with secure defaults\n  %+v", sb.Spec.PodTemplate.Spec, *wantSpec)
	}
	if sb.Spec.Replicas == nil || *sb.Spec.Replicas != 1 {
		t.Errorf("replicas = %v, want 1", sb.Spec.Replicas)
	}
	if sb.Spec.Service == nil || !*sb.Spec.Service {
		t.Errorf("spec.service = %v, want the template's true", sb.Spec.Service)
	}
	if len(sb.Spec.VolumeClaimTemplates) != 1 || sb.Spec.VolumeClaimTemplates[0].Name != "workspace" {
		t.Errorf("volume claim templates = %+v, want the template's", sb.Spec.VolumeClaimTemplates)
	}
	if sb.Spec.ShutdownTime != nil {
		t.Errorf("the claim's expiry leaked into the sandbox: %v", sb.Spec.ShutdownTime)
	}

	events := f.events()
	if want := "Normal SandboxProvisioned Created sandbox " + testClaim + " from template " + testTemplate; !slices.Equal(events, []string{want}) {
		t.Errorf("events = %q, want %q", events, want)
	}
	st := f.lastStatus()
	checkReady(t, st, metav1.ConditionFalse, extensionsv1beta1.ClaimReasonSandboxNotReady, "Sandbox "+testClaim+" reports no readiness yet")
	if st.Status.SandboxStatus.Name != testClaim {
		t.Errorf("status.sandbox.name = %q, want %q", st.Status.SandboxStatus.Name, testClaim)
	}
	// The cached template is shared with the other controllers: creating must not change it.
	cached, err := f.c.templates.SandboxTemplates(testNS).Get(testTemplate)
	f.must(err)
	if !apiequality.Semantic.DeepEqual(cached, template) {
		t.Errorf("the cached template changed: %+v", cached.Spec.PodTemplate)
	}
}

// TestCreateSecureDefaults: the service account token is off unless asked for, and public
// resolvers replace cluster DNS only in secure-by-default mode with no DNS policy chosen.
func TestCreateSecureDefaults(t *testing.T) {
	public := &corev1.PodDNSConfig{Nameservers: []string{"8.8.8.8", "1.1.1.1"}}
	cases := []struct {
		name          string
		mod           func(*extensionsv1beta1.SandboxTemplate)
		wantAutomount bool
		wantDNS       corev1.DNSPolicy
		wantDNSConfig *corev1.PodDNSConfig
	}{
		{name: "managed without rules: secure by default", wantDNS: corev1.DNSNone, wantDNSConfig: public},
		{
			name:    "unset management counts as managed",
			mod:     func(t *extensionsv1beta1.SandboxTemplate) { t.Spec.NetworkPolicyManagement = "" },
			wantDNS: corev1.DNSNone, wantDNSConfig: public,
		},
		{
			name: "managed with its own rules keeps cluster DNS",
			mod: func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.NetworkPolicy = &extensionsv1beta1.NetworkPolicySpec{}
			},
		},
		{
			name: "unmanaged keeps cluster DNS",
			mod: func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.NetworkPolicyManagement = extensionsv1beta1.NetworkPolicyManagementUnmanaged
			},
		},
		{
			name: "a DNS policy chosen by the template is kept",
			mod: func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.PodTemplate.Spec.DNSPolicy = corev1.DNSClusterFirst
			},
			wantDNS: corev1.DNSClusterFirst,
		},
		{
			name: "a token the template asks for is kept",
			mod: func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.PodTemplate.Spec.AutomountServiceAccountToken = ptr.To(true)
			},
			wantAutomount: true, wantDNS: corev1.DNSNone, wantDNSConfig: public,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			template := newTemplate()
			if tc.mod != nil {
				tc.mod(template)
			}
			f := newFixture(t, newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone)), template)
			f.mustSync(testClaim)
			created := f.createdSandboxes()
			if len(created) != 1 {
				t.Fatalf("writes = %q, want one create", f.writes())
			}
			spec := created[0].Spec.PodTemplate.Spec
			if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken != tc.wantAutomount {
				t.Errorf("automountServiceAccountToken = %v, want %v", spec.AutomountServiceAccountToken, tc.wantAutomount)
			}
			if spec.DNSPolicy != tc.wantDNS || !apiequality.Semantic.DeepEqual(spec.DNSConfig, tc.wantDNSConfig) {
				t.Errorf("DNS = %q %+v, want %q %+v", spec.DNSPolicy, spec.DNSConfig, tc.wantDNS, tc.wantDNSConfig)
			}
		})
	}
}

// TestCreateRefusals: what a cold create refuses, with the Ready it reports; none of them are
// retried (only a change of the claim or template helps) and none write a sandbox.
func TestCreateRefusals(t *testing.T) {
	type ev = extensionsv1beta1.EnvVar
	cases := []struct {
		name        string
		claim       *extensionsv1beta1.SandboxClaim
		template    *extensionsv1beta1.SandboxTemplate
		queueMember bool
		wantReason  string
		wantMsg     string
	}{
		{
			name:       "env under Disallowed",
			claim:      newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone), withEnv(ev{Name: "A", Value: "1"})),
			template:   newTemplate(),
			wantReason: extensionsv1beta1.ClaimReasonReconcilerError,
			wantMsg:    "environment variable injection is not allowed by the template policy (envVarsInjectionPolicy: Disallowed)",
		},
		{
			name:       "env naming an unknown container",
			claim:      newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone), withEnv(ev{Name: "GPU", Value: "1", ContainerName: "trainer"})),
			template:   newTemplate(envPolicy(extensionsv1beta1.EnvVarsInjectionPolicyAllowed)),
			wantReason: extensionsv1beta1.ClaimReasonReconcilerError,
			wantMsg:    `environment variable "GPU" for container "trainer": claim env reaches the template's first container (agent) and the containers its envVarsInjectionContainers names, not this one`,
		},
		{
			name:       "env overriding a template variable under Allowed",
			claim:      newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone), withEnv(ev{Name: "LOG_LEVEL", Value: "debug"})),
			template:   newTemplate(envPolicy(extensionsv1beta1.EnvVarsInjectionPolicyAllowed)),
			wantReason: extensionsv1beta1.ClaimReasonReconcilerError,
			wantMsg:    `environment variable "LOG_LEVEL" is already set by the template in container "agent"*`,
		},
		{
			name:        "metadata conflicting with the template, even with a member waiting",
			claim:       newClaim(withExtraMeta(map[string]string{"app": "node"}, nil)),
			template:    newTemplate(),
			queueMember: true,
			wantReason:  extensionsv1beta1.ClaimReasonInvalidMetadata,
			wantMsg:     `additionalPodMetadata label "app"="node" conflicts with the template's value "python"`,
		},
		{
			name:        "metadata in a restricted domain, even with a member waiting",
			claim:       newClaim(withExtraMeta(nil, map[string]string{"agents.x-k8s.io/pod-name": "x"})),
			template:    newTemplate(),
			queueMember: true,
			wantReason:  extensionsv1beta1.ClaimReasonInvalidMetadata,
			wantMsg:     `additionalPodMetadata annotation "agents.x-k8s.io/pod-name" is in a restricted domain*`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.claim, tc.template)
			if tc.queueMember {
				m := warmMember("m1", testPool)
				f.add(m)
				f.warm(m)
			}
			if err := f.sync(testClaim); err != nil {
				t.Fatalf("sync: %v, want nil (not retried)", err)
			}
			if got := f.writes(); !slices.Equal(got, []string{"update sandboxclaims/status " + testClaim}) {
				t.Errorf("writes = %q, want only the status", got)
			}
			checkReady(t, f.lastStatus(), metav1.ConditionFalse, tc.wantReason, tc.wantMsg)
			if ev := f.events(); len(ev) != 0 {
				t.Errorf("events = %q, want none", ev)
			}
			if tc.queueMember && f.chooser.Queue().Len(testBucket) != 1 {
				t.Errorf("the waiting member left the queue")
			}
		})
	}
}

func TestCreateWithEnv(t *testing.T) {
	claim := newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone), withEnv(
		extensionsv1beta1.EnvVar{Name: "NOTEBOOK_DIR", Value: "/workspace"},
		extensionsv1beta1.EnvVar{Name: "INIT_MODE", Value: "slow", ContainerName: "setup"},
	))
	// The init container gets claim env only because the template opens it.
	template := newTemplate(envPolicy(extensionsv1beta1.EnvVarsInjectionPolicyOverrides), func(t *extensionsv1beta1.SandboxTemplate) {
		t.Spec.EnvVarsInjectionContainers = []string{"setup"}
	})
	f := newFixture(t, claim, template)
	f.mustSync(testClaim)
	created := f.createdSandboxes()
	if len(created) != 1 {
		t.Fatalf("writes = %q, want one create", f.writes())
	}
	spec := created[0].Spec.PodTemplate.Spec
	if want := []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "NOTEBOOK_DIR", Value: "/workspace"}}; !apiequality.Semantic.DeepEqual(spec.Containers[0].Env, want) {
		t.Errorf("agent env = %+v, want %+v", spec.Containers[0].Env, want)
	}
	if want := []corev1.EnvVar{{Name: "INIT_MODE", Value: "slow"}}; !apiequality.Semantic.DeepEqual(spec.InitContainers[0].Env, want) {
		t.Errorf("setup env = %+v, want %+v", spec.InitContainers[0].Env, want)
	}
	cached, err := f.c.templates.SandboxTemplates(testNS).Get(testTemplate)
	f.must(err)
	if !apiequality.Semantic.DeepEqual(cached, template) {
		t.Errorf("env injection changed the cached template: %+v", cached.Spec.PodTemplate.Spec)
	}
}

// TestCreateAlreadyExists: a sandbox the cache has not seen yet blocks the create; one of this
// claim is taken as is, one of another claim is refused.
func TestCreateAlreadyExists(t *testing.T) {
	cases := []struct {
		name       string
		existing   *agentsv1beta1.Sandbox
		wantReady  [3]string
		wantName   string
		wantEvents int
	}{
		{
			name: "owned by the claim: recovered",
			existing: newSandbox(testClaim, ownedByClaim(testClaim, testClaimUID),
				sandboxReady(metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"), withPodIPs("10.1.2.3")),
			wantReady: [3]string{"True", agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"},
			wantName:  testClaim,
		},
		{
			name:      "owned by another claim: refused",
			existing:  newSandbox(testClaim, ownedByClaim("other", "other-uid")),
			wantReady: [3]string{"False", extensionsv1beta1.ClaimReasonReconcilerError, "a Sandbox named " + testClaim + " exists and is not controlled by this claim"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone)), newTemplate())
			f.addAPI(tc.existing)
			if err := f.sync(testClaim); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if n := len(f.createdSandboxes()); n != 1 {
				t.Errorf("%d create attempts, want 1", n)
			}
			if n := len(f.updatedSandboxes()) + len(f.actionsOf("delete", "sandboxes")); n != 0 {
				t.Errorf("the existing sandbox was written: %q", f.writes())
			}
			st := f.lastStatus()
			checkReady(t, st, metav1.ConditionStatus(tc.wantReady[0]), tc.wantReady[1], tc.wantReady[2])
			if st.Status.SandboxStatus.Name != tc.wantName {
				t.Errorf("status.sandbox.name = %q, want %q", st.Status.SandboxStatus.Name, tc.wantName)
			}
			if tc.wantName != "" && !slices.Equal(st.Status.SandboxStatus.PodIPs, []string{"10.1.2.3"}) {
				t.Errorf("podIPs = %v, want the existing sandbox's", st.Status.SandboxStatus.PodIPs)
			}
			if ev := f.eventReasons(); slices.Contains(ev, "SandboxProvisioned") {
				t.Errorf("events = %q, want no SandboxProvisioned for a sandbox not made now", ev)
			}
		})
	}
}

func TestCreateServerError(t *testing.T) {
	f := newFixture(t, newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone)), newTemplate())
	f.client.PrependReactor("create", "sandboxes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd unavailable"))
	})
	err := f.sync(testClaim)
	if err == nil || !strings.Contains(err.Error(), "etcd unavailable") {
		t.Fatalf("sync error = %v, want the create error for a retry", err)
	}
	st := f.lastStatus()
	checkReady(t, st, metav1.ConditionFalse, extensionsv1beta1.ClaimReasonReconcilerError, "Error seen: *")
}

func TestTemplateNotFound(t *testing.T) {
	f := newFixture(t, newClaim())
	if err := f.sync(testClaim); err != nil {
		t.Fatalf("sync: %v, want nil (no retry storm while the template is missing)", err)
	}
	if got := f.writes(); !slices.Equal(got, []string{"update sandboxclaims/status " + testClaim}) {
		t.Errorf("writes = %q, want only the status", got)
	}
	checkReady(t, f.lastStatus(), metav1.ConditionFalse, extensionsv1beta1.ClaimReasonTemplateNotFound, "SandboxTemplate default/python not found")
	if n := f.queue.Len(); n != 0 {
		t.Fatalf("queue holds %d before the template appears", n)
	}

	// Templates that are not the claim's wake nothing.
	f.c.enqueueClaimsOfTemplate(newTemplate(func(t *extensionsv1beta1.SandboxTemplate) { t.Name = "node" }))
	f.c.enqueueClaimsOfTemplate(newTemplate(func(t *extensionsv1beta1.SandboxTemplate) { t.Namespace = "elsewhere" }))
	f.c.enqueueClaimsOfTemplate("not a template")
	if n := f.queue.Len(); n != 0 {
		t.Fatalf("queue holds %d after unrelated templates, want 0", n)
	}

	f.c.enqueueClaimsOfTemplate(newTemplate())
	if n := f.queue.Len(); n != 1 {
		t.Fatalf("queue holds %d after the template appeared, want the claim (1)", n)
	}
	key, _ := f.queue.Get()
	f.queue.Done(key)
	if key != testNS+"/"+testClaim {
		t.Errorf("queued key %q, want %s/%s", key, testNS, testClaim)
	}

	// Once the template is there the next sync creates the sandbox.
	f.add(newTemplate())
	f.updateCache(f.lastStatus())
	f.reset()
	f.mustSync(testClaim)
	if n := len(f.createdSandboxes()); n != 1 {
		t.Errorf("writes = %q after the template appeared, want a create", f.writes())
	}
}

// TestTemplateMissingKeepsSandbox: a claim with a sandbox keeps mirroring it while its template
// is gone.
func TestTemplateMissingKeepsSandbox(t *testing.T) {
	sb := newSandbox(testClaim, ownedByClaim(testClaim, testClaimUID),
		sandboxReady(metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"),
		func(sb *agentsv1beta1.Sandbox) {
			sb.Spec.PodTemplate.ObjectMeta.Labels = map[string]string{"app": "python",
				extensionsv1beta1.SandboxIDLabel: string(testClaimUID), extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash}
		})
	f := newFixture(t, newClaim(withClaimLabel(extensionsv1beta1.ClaimSandboxNameLabel, testClaim)), sb)
	f.mustSync(testClaim)
	if got := f.writes(); !slices.Equal(got, []string{"update sandboxclaims/status " + testClaim}) {
		t.Errorf("writes = %q, want only the status", got)
	}
	checkReady(t, f.lastStatus(), metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready")
}
