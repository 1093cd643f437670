// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	agentsv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1alpha1"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1alpha1"
	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	agentsac "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/applyconfiguration/agents/v1beta1"
)

// The fields of the agent-sandbox v1.0 API, served beside the seeds' and kept in step with them.

func modeOf(s *agentsv1beta1.Sandbox) string {
	return string(s.Spec.OperatingMode) + "/" + strconv.Itoa(int(int32Of(s.Spec.Replicas)))
}

func TestOperatingMode(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "mode"
	ctx := testContext(t)
	sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)

	t.Run("create: either field decides the other", func(t *testing.T) {
		for i, tc := range []struct {
			name     string
			replicas *int32
			mode     agentsv1beta1.OperatingMode
			want     string
		}{
			{"neither", nil, "", "Running/1"},
			{"operatingMode Suspended", nil, agentsv1beta1.OperatingModeSuspended, "Suspended/0"},
			{"replicas 0", ptr.To[int32](0), "", "Suspended/0"},
			{"both, agreeing", ptr.To[int32](1), agentsv1beta1.OperatingModeRunning, "Running/1"},
		} {
			sb := newSandbox(ns, "created-"+strconv.Itoa(i))
			sb.Spec.Replicas, sb.Spec.OperatingMode = tc.replicas, tc.mode
			got, err := sandboxes.Create(ctx, sb, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if modeOf(got) != tc.want {
				t.Errorf("%s: got %s, want %s", tc.name, modeOf(got), tc.want)
			}
		}
	})

	t.Run("create: disagreeing or unknown values are refused", func(t *testing.T) {
		sb := newSandbox(ns, "disagree")
		sb.Spec.Replicas, sb.Spec.OperatingMode = ptr.To[int32](1), agentsv1beta1.OperatingModeSuspended
		_, err := sandboxes.Create(ctx, sb, metav1.CreateOptions{})
		expectInvalid(t, err, "spec.operatingMode")
		sb.Spec.Replicas, sb.Spec.OperatingMode = nil, "Paused"
		_, err = sandboxes.Create(ctx, sb, metav1.CreateOptions{})
		expectInvalid(t, err, "spec.operatingMode")
	})

	t.Run("update: the field a write changes decides the other", func(t *testing.T) {
		if _, err := sandboxes.Create(ctx, newSandbox(ns, "toggled"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, step := range []struct {
			how   string
			patch string
			want  string
		}{
			{"merge patch of operatingMode", `{"spec":{"operatingMode":"Suspended"}}`, "Suspended/0"},
			{"merge patch of replicas", `{"spec":{"replicas":1}}`, "Running/1"},
			{"both, agreeing", `{"spec":{"replicas":0,"operatingMode":"Suspended"}}`, "Suspended/0"},
			// operatingMode is as it was (Suspended): replicas, the one changed, decides.
			{"replicas changed beside the old operatingMode", `{"spec":{"replicas":1,"operatingMode":"Suspended"}}`, "Running/1"},
		} {
			got, err := sandboxes.Patch(ctx, "toggled", types.MergePatchType, []byte(step.patch), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("%s: %v", step.how, err)
			}
			if modeOf(got) != step.want {
				t.Errorf("%s: got %s, want %s", step.how, modeOf(got), step.want)
			}
		}
		_, err := sandboxes.Patch(ctx, "toggled", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{})
		expectInvalid(t, err, "spec.replicas")
	})

	t.Run("scale subresource", func(t *testing.T) {
		if _, err := sandboxes.Create(ctx, newSandbox(ns, "scaled"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, replicas := range []int32{0, 1} {
			sc, err := sandboxes.GetScale(ctx, "scaled", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sc.Spec.Replicas = replicas
			if _, err := sandboxes.UpdateScale(ctx, "scaled", sc, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			got, err := sandboxes.Get(ctx, "scaled", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[int32]string{0: "Suspended/0", 1: "Running/1"}[replicas]
			if modeOf(got) != want {
				t.Errorf("after scale to %d: %s, want %s", replicas, modeOf(got), want)
			}
		}
	})

	t.Run("server-side apply of operatingMode alone", func(t *testing.T) {
		apply := func(mode agentsv1beta1.OperatingMode) *agentsv1beta1.Sandbox {
			t.Helper()
			cfg := agentsac.Sandbox("applied", ns).WithSpec(agentsac.SandboxSpec().
				WithOperatingMode(mode).WithPodTemplate(agentsac.PodTemplate().WithSpec(podSpec())))
			got, err := sandboxes.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: "v1-manifests"})
			if err != nil {
				t.Fatalf("apply %s: %v", mode, err)
			}
			return got
		}
		if got := apply(agentsv1beta1.OperatingModeSuspended); modeOf(got) != "Suspended/0" {
			t.Errorf("applied Suspended: %s", modeOf(got))
		}
		if got := apply(agentsv1beta1.OperatingModeRunning); modeOf(got) != "Running/1" {
			t.Errorf("applied Running: %s", modeOf(got))
		}
	})

	t.Run("v1alpha1", func(t *testing.T) {
		sb := &agentsv1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: "alpha", Namespace: ns},
			Spec: agentsv1alpha1.SandboxSpec{
				PodTemplate:   agentsv1alpha1.PodTemplate{Spec: podSpec()},
				OperatingMode: agentsv1alpha1.OperatingModeSuspended,
			},
		}
		got, err := s.Client.AgentsV1alpha1().Sandboxes(ns).Create(ctx, sb, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if int32Of(got.Spec.Replicas) != 0 || got.Spec.OperatingMode != agentsv1alpha1.OperatingModeSuspended {
			t.Errorf("v1alpha1: replicas %d, operatingMode %q", int32Of(got.Spec.Replicas), got.Spec.OperatingMode)
		}
		sb.Name, sb.Spec.Replicas = "alpha-bad", ptr.To[int32](1)
		_, err = s.Client.AgentsV1alpha1().Sandboxes(ns).Create(ctx, sb, metav1.CreateOptions{})
		expectInvalid(t, err, "spec.operatingMode")
	})

	t.Run("launch-type label: cold for a Sandbox made directly, and kept", func(t *testing.T) {
		sb := newSandbox(ns, "labelled")
		sb.Labels[agentsv1beta1.SandboxLaunchTypeLabel] = agentsv1beta1.LaunchTypeWarm
		got, err := sandboxes.Create(ctx, sb, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lt := got.Labels[agentsv1beta1.SandboxLaunchTypeLabel]; lt != agentsv1beta1.LaunchTypeCold {
			t.Errorf("launch type %q, want cold", lt)
		}
		got, err = sandboxes.Patch(ctx, "labelled", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"`+agentsv1beta1.SandboxLaunchTypeLabel+`":null}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lt := got.Labels[agentsv1beta1.SandboxLaunchTypeLabel]; lt != agentsv1beta1.LaunchTypeCold {
			t.Errorf("launch type after removing it %q, want cold", lt)
		}
	})
}

func storageTemplate(name, size string) agentsv1beta1.PersistentVolumeClaimTemplate {
	return agentsv1beta1.PersistentVolumeClaimTemplate{
		EmbeddedObjectMetadata: agentsv1beta1.EmbeddedObjectMetadata{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

func TestClaimByWarmPoolRef(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "poolref"
	ctx := testContext(t)
	ext := s.Client.ExtensionsV1beta1()
	for _, name := range []string{"python", "node"} {
		if _, err := ext.SandboxTemplates(ns).Create(ctx, newTemplate(ns, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pool := newPool(ns, "python-pool", "python", 1)
	pool.Spec.Replicas = nil
	created, err := ext.SandboxWarmPools(ns).Create(ctx, pool, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if int32Of(created.Spec.Replicas) != 1 {
		t.Errorf("pool without replicas stored with %d, want 1", int32Of(created.Spec.Replicas))
	}
	claims := ext.SandboxClaims(ns)
	byPool := func(name, template, pool string) *extv1beta1.SandboxClaim {
		c := newClaim(ns, name, template)
		c.Spec.WarmPoolRef = &extv1beta1.SandboxWarmPoolRef{Name: pool}
		return c
	}

	t.Run("the pool decides the template", func(t *testing.T) {
		got, err := claims.Create(ctx, byPool("by-pool", "", "python-pool"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.TemplateRef.Name != "python" || got.Spec.WarmPool == nil || *got.Spec.WarmPool != "python-pool" {
			t.Errorf("claim by pool: template %q, warmpool %v", got.Spec.TemplateRef.Name, got.Spec.WarmPool)
		}
		if _, err := claims.Create(ctx, byPool("both", "python", "python-pool"), metav1.CreateOptions{}); err != nil {
			t.Errorf("claim naming the pool and its template: %v", err)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		_, err := claims.Create(ctx, byPool("other-template", "node", "python-pool"), metav1.CreateOptions{})
		expectInvalid(t, err, "spec.sandboxTemplateRef.name")
		_, err = claims.Create(ctx, byPool("no-pool", "", "missing-pool"), metav1.CreateOptions{})
		expectInvalid(t, err, "spec.warmPoolRef.name")
		c := byPool("any-pool", "", "python-pool")
		c.Spec.WarmPool = ptr.To(extv1beta1.WarmPoolPolicyDefault)
		_, err = claims.Create(ctx, c, metav1.CreateOptions{})
		expectInvalid(t, err, "spec.warmpool")
		_, err = claims.Patch(ctx, "by-pool", types.MergePatchType, []byte(`{"spec":{"warmPoolRef":{"name":"other-pool"}}}`), metav1.PatchOptions{})
		expectInvalid(t, err, "spec.warmPoolRef.name", "spec.warmpool")
	})
	t.Run("v1alpha1", func(t *testing.T) {
		c := &extv1alpha1.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "alpha", Namespace: ns},
			Spec:       extv1alpha1.SandboxClaimSpec{WarmPoolRef: &extv1alpha1.SandboxWarmPoolRef{Name: "python-pool"}},
		}
		got, err := s.Client.ExtensionsV1alpha1().SandboxClaims(ns).Create(ctx, c, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.TemplateRef.Name != "python" {
			t.Errorf("v1alpha1 claim by pool: template %q", got.Spec.TemplateRef.Name)
		}
		c.Name, c.Spec.WarmPoolRef.Name = "alpha-missing", "missing-pool"
		_, err = s.Client.ExtensionsV1alpha1().SandboxClaims(ns).Create(ctx, c, metav1.CreateOptions{})
		expectInvalid(t, err, "spec.warmPoolRef.name")
		p, err := s.Client.ExtensionsV1alpha1().SandboxWarmPools(ns).Get(ctx, "python-pool", metav1.GetOptions{})
		if err != nil || p.Spec.Replicas == nil || *p.Spec.Replicas != 1 {
			t.Errorf("v1alpha1 pool: replicas %v, %v", p.Spec.Replicas, err)
		}
	})
	t.Run("pool status.observedGeneration", func(t *testing.T) {
		p, err := ext.SandboxWarmPools(ns).Get(ctx, "python-pool", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.ObservedGeneration = p.Generation
		got, err := ext.SandboxWarmPools(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err != nil || got.Status.ObservedGeneration != p.Generation {
			t.Fatalf("status.observedGeneration %d, %v", got.Status.ObservedGeneration, err)
		}
		got.Status.ObservedGeneration = -1
		_, err = ext.SandboxWarmPools(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{})
		expectInvalid(t, err, "status.observedGeneration")
	})
}

func TestClaimVolumeClaimTemplates(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "claimvolumes"
	ctx := testContext(t)
	ext := s.Client.ExtensionsV1beta1()
	for name, policy := range map[string]extv1beta1.VolumeClaimTemplatesPolicy{
		"closed": "", "allowed": extv1beta1.VolumeClaimTemplatesPolicyAllowed, "overrides": extv1beta1.VolumeClaimTemplatesPolicyOverrides,
	} {
		tmpl := newTemplate(ns, name)
		tmpl.Spec.VolumeClaimTemplatesPolicy = policy
		tmpl.Spec.VolumeClaimTemplates = []agentsv1beta1.PersistentVolumeClaimTemplate{storageTemplate("home", "1Gi")}
		got, err := ext.SandboxTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if policy == "" && got.Spec.VolumeClaimTemplatesPolicy != extv1beta1.VolumeClaimTemplatesPolicyDisallowed {
			t.Errorf("template without a policy stored with %q, want Disallowed", got.Spec.VolumeClaimTemplatesPolicy)
		}
	}
	claim := func(name, template string, vcts ...agentsv1beta1.PersistentVolumeClaimTemplate) *extv1beta1.SandboxClaim {
		c := newClaim(ns, name, template)
		c.Spec.VolumeClaimTemplates = vcts
		return c
	}
	claims := ext.SandboxClaims(ns)
	for _, tc := range []struct {
		claim      *extv1beta1.SandboxClaim
		wantFields []string
	}{
		{claim("closed", "closed", storageTemplate("scratch", "1Gi")), []string{"spec.volumeClaimTemplates"}},
		{claim("no-template", "missing", storageTemplate("scratch", "1Gi")), []string{"spec.volumeClaimTemplates"}},
		{claim("allowed-new", "allowed", storageTemplate("scratch", "1Gi")), nil},
		{claim("allowed-same", "allowed", storageTemplate("scratch", "1Gi"), storageTemplate("home", "5Gi")), []string{"spec.volumeClaimTemplates[1].metadata.name"}},
		{claim("overrides-same", "overrides", storageTemplate("home", "5Gi")), nil},
	} {
		_, err := claims.Create(ctx, tc.claim, metav1.CreateOptions{})
		if tc.wantFields == nil {
			if err != nil {
				t.Errorf("claim %s: %v", tc.claim.Name, err)
			}
			continue
		}
		expectInvalid(t, err, tc.wantFields...)
	}
	_, err := claims.Patch(ctx, "allowed-new", types.MergePatchType, []byte(`{"spec":{"volumeClaimTemplates":null}}`), metav1.PatchOptions{})
	expectInvalid(t, err, "spec.volumeClaimTemplates")
}

// TestWarmPoolReadinessGracePeriod: a manifest with the peer's v1.0.12 field
// spec.readinessGracePeriodSeconds applies server-side with strict field validation, as
// `kubectl apply --server-side --validate=strict` sends it, in both versions; the field is
// published with its bound, stored as given (unset stays unset) and refused below 30 with the
// field named, storing nothing.
func TestWarmPoolReadinessGracePeriod(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "grace"
	ctx := testContext(t)
	ext := s.Client.ExtensionsV1beta1()
	if _, err := ext.SandboxTemplates(ns).Create(ctx, newTemplate(ns, "python-runtime-template"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	manifest := func(version, name, specExtra string) []byte {
		return []byte(`apiVersion: extensions.agents.x-k8s.io/` + version + `
kind: SandboxWarmPool
metadata:
  name: ` + name + `
spec:
  sandboxTemplateRef:
    name: python-runtime-template
` + specExtra)
	}
	apply := func(version, name string, body []byte) error {
		rc := ext.RESTClient()
		if version == "v1alpha1" {
			rc = s.Client.ExtensionsV1alpha1().RESTClient()
		}
		return rc.Patch(types.ApplyPatchType).Namespace(ns).Resource("sandboxwarmpools").Name(name).
			Param("fieldManager", "kubectl").Param("fieldValidation", "Strict").Body(body).Do(ctx).Error()
	}
	stored := func(name string) *extv1beta1.SandboxWarmPool {
		t.Helper()
		p, err := ext.SandboxWarmPools(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("published for kubectl explain, with its minimum", func(t *testing.T) {
		for _, version := range []string{"v1beta1", "v1alpha1"} {
			raw, err := s.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/extensions.agents.x-k8s.io/" + version).DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Components struct {
					Schemas map[string]struct {
						Properties map[string]struct {
							Description string   `json:"description"`
							Minimum     *float64 `json:"minimum"`
							Type        string   `json:"type"`
						} `json:"properties"`
					} `json:"schemas"`
				} `json:"components"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			f, ok := doc.Components.Schemas["io.x-k8s.agents.extensions."+version+".SandboxWarmPoolSpec"].Properties["readinessGracePeriodSeconds"]
			if !ok {
				t.Fatalf("%s: SandboxWarmPoolSpec has no readinessGracePeriodSeconds", version)
			}
			if f.Type != "integer" || f.Minimum == nil || *f.Minimum != 30 || !strings.Contains(f.Description, "300 (five minutes) when unset") {
				t.Errorf("%s: readinessGracePeriodSeconds published as type %q, minimum %v, description %q", version, f.Type, f.Minimum, f.Description)
			}
		}
	})

	t.Run("applies with strict validation in both versions", func(t *testing.T) {
		if err := apply("v1beta1", "beta-pool", manifest("v1beta1", "beta-pool", "  readinessGracePeriodSeconds: 45\n")); err != nil {
			t.Fatalf("v1beta1 apply: %v", err)
		}
		if err := apply("v1alpha1", "alpha-pool", manifest("v1alpha1", "alpha-pool", "  readinessGracePeriodSeconds: 600\n")); err != nil {
			t.Fatalf("v1alpha1 apply: %v", err)
		}
		if err := apply("v1beta1", "plain-pool", manifest("v1beta1", "plain-pool", "")); err != nil {
			t.Fatalf("apply without the field: %v", err)
		}
		for name, want := range map[string]*int32{"beta-pool": ptr.To[int32](45), "alpha-pool": ptr.To[int32](600), "plain-pool": nil} {
			if got := stored(name).Spec.ReadinessGracePeriodSeconds; !ptr.Equal(got, want) {
				t.Errorf("%s: stored readinessGracePeriodSeconds %v, want %v", name, ptr.Deref(got, -1), ptr.Deref(want, -1))
			}
		}
		alpha, err := s.Client.ExtensionsV1alpha1().SandboxWarmPools(ns).Get(ctx, "beta-pool", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ptr.Deref(alpha.Spec.ReadinessGracePeriodSeconds, -1); got != 45 {
			t.Errorf("beta-pool read as v1alpha1: readinessGracePeriodSeconds %d, want 45", got)
		}
	})

	t.Run("changing it is a spec change like any other", func(t *testing.T) {
		before := stored("beta-pool")
		if err := apply("v1beta1", "beta-pool", manifest("v1beta1", "beta-pool", "  readinessGracePeriodSeconds: 90\n")); err != nil {
			t.Fatal(err)
		}
		after := stored("beta-pool")
		if ptr.Deref(after.Spec.ReadinessGracePeriodSeconds, -1) != 90 || after.Generation != before.Generation+1 {
			t.Errorf("after re-apply: readinessGracePeriodSeconds %d, generation %d (was %d)",
				ptr.Deref(after.Spec.ReadinessGracePeriodSeconds, -1), after.Generation, before.Generation)
		}
	})

	t.Run("below the minimum: 422 naming the field, nothing stored", func(t *testing.T) {
		for _, version := range []string{"v1beta1", "v1alpha1"} {
			err := apply(version, "short-pool", manifest(version, "short-pool", "  readinessGracePeriodSeconds: 10\n"))
			expectInvalid(t, err, "spec.readinessGracePeriodSeconds")
			if !strings.Contains(err.Error(), "must be at least 30") {
				t.Errorf("%s: the error does not say the bound: %v", version, err)
			}
		}
		if _, err := ext.SandboxWarmPools(ns).Get(ctx, "short-pool", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a refused pool was stored: %v", err)
		}
		err := apply("v1beta1", "beta-pool", manifest("v1beta1", "beta-pool", "  readinessGracePeriodSeconds: 29\n"))
		expectInvalid(t, err, "spec.readinessGracePeriodSeconds")
		if got := ptr.Deref(stored("beta-pool").Spec.ReadinessGracePeriodSeconds, -1); got != 90 {
			t.Errorf("a refused update changed the stored value to %d", got)
		}
	})

	t.Run("a misspelt field is refused, naming it, and nothing stored", func(t *testing.T) {
		// k8s.io/apiserver's apply refuses a field its schema lacks before strict decoding runs,
		// with a plain error (answered as a 500), so only the refusal and its message are checked.
		err := apply("v1beta1", "typo-pool", manifest("v1beta1", "typo-pool", "  readinessGracePeriod: 60\n"))
		if err == nil || !strings.Contains(err.Error(), ".spec.readinessGracePeriod") {
			t.Errorf("apply with spec.readinessGracePeriod: want a refusal naming it, got %v", err)
		}
		if _, err := ext.SandboxWarmPools(ns).Get(ctx, "typo-pool", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a refused pool was stored: %v", err)
		}
	})
}
