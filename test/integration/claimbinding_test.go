// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1alpha1"
	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

// bindingManager is the field manager the binder writes under (claimbinding.FieldManager).
const bindingManager = "sandboxclaim-controller"

// claimGVK is the kind the adopted sandbox's controller reference names.
var claimGVK = extv1beta1.SchemeGroupVersion.WithKind("SandboxClaim")

// testChooser binds every claim offered to it to one given sandbox, as the claim controller would
// to a warm one: the sandbox rewritten as the claim's (controller reference and claim-uid label)
// and the claim Ready, serving it. It records what commit answered.
type testChooser struct {
	// candidate is the sandbox handed to commit as the one chosen, at its resourceVersion.
	candidate *agentsv1beta1.Sandbox
	// edit, when set, changes the claim with its status and the adopted sandbox before commit.
	edit func(served *extv1beta1.SandboxClaim, adopted *agentsv1beta1.Sandbox)

	mu     sync.Mutex
	claims []*extv1beta1.SandboxClaim
	errs   []error
}

func (c *testChooser) BindAtCreate(ctx context.Context, claim *extv1beta1.SandboxClaim, commit func(ctx context.Context, claim *extv1beta1.SandboxClaim, candidate, adopted *agentsv1beta1.Sandbox) error) (bool, error) {
	adopted := c.candidate.DeepCopy()
	adopted.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(claim, claimGVK)}
	adopted.Labels = maps.Clone(adopted.Labels)
	if adopted.Labels == nil {
		adopted.Labels = map[string]string{}
	}
	adopted.Labels[extv1beta1.SandboxIDLabel] = string(claim.UID)

	served := claim.DeepCopy()
	served.Labels = maps.Clone(served.Labels)
	if served.Labels == nil {
		served.Labels = map[string]string{}
	}
	served.Labels[extv1beta1.ClaimSandboxNameLabel] = adopted.Name
	served.Status.SandboxStatus.Name = adopted.Name
	served.Status.Conditions = []metav1.Condition{{
		Type:               "Ready",
		Status:             metav1.ConditionTrue,
		Reason:             "DependenciesReady",
		Message:            "bound at create by the test chooser",
		ObservedGeneration: claim.Generation,
		LastTransitionTime: metav1.Now(),
	}}
	if c.edit != nil {
		c.edit(served, adopted)
	}

	err := commit(ctx, served, c.candidate, adopted)
	c.mu.Lock()
	c.claims = append(c.claims, claim.DeepCopy())
	c.errs = append(c.errs, err)
	c.mu.Unlock()
	switch {
	case apierrors.IsConflict(err):
		// The candidate moved on; the real chooser tries another, this one has none left.
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// calls is how many claims the chooser was offered.
func (c *testChooser) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.claims)
}

// onlyCall checks that the chooser was offered exactly one claim, named name, and returns it with
// what commit answered.
func (c *testChooser) onlyCall(t *testing.T, name string) (*extv1beta1.SandboxClaim, error) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.claims) != 1 {
		t.Fatalf("chooser offered %d claims, want 1", len(c.claims))
	}
	if c.claims[0].Name != name {
		t.Fatalf("chooser offered claim %q, want %q", c.claims[0].Name, name)
	}
	return c.claims[0], c.errs[0]
}

// serve makes c the chooser of s until the test ends.
func serve(t *testing.T, s *framework.Server, c *testChooser) {
	t.Helper()
	t.Cleanup(s.ClaimBinder.Serve(c))
}

// createSandbox creates a warm-looking sandbox and returns it as stored.
func createSandbox(t *testing.T, ctx context.Context, s *framework.Server, ns, name string) *agentsv1beta1.Sandbox {
	t.Helper()
	sb, err := s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, newSandbox(ns, name), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create sandbox %s: %v", name, err)
	}
	return sb
}

// expectUnbound fails the test if the claim has a status.
func expectUnbound(t *testing.T, claim *extv1beta1.SandboxClaim) {
	t.Helper()
	if claim.Status.SandboxStatus.Name != "" || len(claim.Status.SandboxStatus.PodIPs) > 0 || len(claim.Status.Conditions) > 0 {
		t.Errorf("claim %s has status %s, want none", claim.Name, jsonOf(t, claim.Status))
	}
}

// expectNotAdopted reads the sandbox and fails the test if it has an owner or the claim-uid label,
// or if its resourceVersion is not rv.
func expectNotAdopted(t *testing.T, ctx context.Context, s *framework.Server, ns, name, rv string) *agentsv1beta1.Sandbox {
	t.Helper()
	sb, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get sandbox %s: %v", name, err)
	}
	if len(sb.OwnerReferences) > 0 {
		t.Errorf("sandbox %s has owners %s, want none", name, jsonOf(t, sb.OwnerReferences))
	}
	if v, ok := sb.Labels[extv1beta1.SandboxIDLabel]; ok {
		t.Errorf("sandbox %s has label %s=%s", name, extv1beta1.SandboxIDLabel, v)
	}
	if sb.ResourceVersion != rv {
		t.Errorf("sandbox %s resourceVersion %s, want %s (unchanged)", name, sb.ResourceVersion, rv)
	}
	return sb
}

// expectBound checks what a reader sees of a claim bound to sandbox name: status.sandbox.name and
// Ready=True observed at the claim's generation.
func expectBound(t *testing.T, status extv1beta1.SandboxClaimStatus, generation int64, sandbox string) {
	t.Helper()
	if status.SandboxStatus.Name != sandbox {
		t.Errorf("status.sandbox.name %q, want %q (status %s)", status.SandboxStatus.Name, sandbox, jsonOf(t, status))
	}
	ready := meta.FindStatusCondition(status.Conditions, "Ready")
	if ready == nil {
		t.Fatalf("no Ready condition in status %s", jsonOf(t, status))
	}
	if ready.Status != metav1.ConditionTrue || ready.Reason != "DependenciesReady" || ready.ObservedGeneration != generation || ready.LastTransitionTime.IsZero() {
		t.Errorf("Ready condition %s, want True, DependenciesReady, observedGeneration %d and a lastTransitionTime", jsonOf(t, ready), generation)
	}
}

// expectAdoptedBy reads the sandbox and checks that claim is its controller, by UID, and that it
// carries the claim-uid label.
func expectAdoptedBy(t *testing.T, ctx context.Context, s *framework.Server, ns, name string, claimName string, claimUID string) *agentsv1beta1.Sandbox {
	t.Helper()
	sb, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get sandbox %s: %v", name, err)
	}
	owner := metav1.GetControllerOf(sb)
	if owner == nil {
		t.Fatalf("sandbox %s has no controller; owners %s", name, jsonOf(t, sb.OwnerReferences))
	}
	if owner.APIVersion != "extensions.agents.x-k8s.io/v1beta1" || owner.Kind != "SandboxClaim" || owner.Name != claimName || string(owner.UID) != claimUID {
		t.Errorf("sandbox %s controller %s, want SandboxClaim %s uid %s", name, jsonOf(t, owner), claimName, claimUID)
	}
	if got := sb.Labels[extv1beta1.SandboxIDLabel]; got != claimUID {
		t.Errorf("sandbox %s label %s=%q, want %q", name, extv1beta1.SandboxIDLabel, got, claimUID)
	}
	return sb
}

// managedBy reports whether m has a managedFields entry of manager for subresource ("" for the
// main resource).
func managedBy(m metav1.ObjectMeta, manager, subresource string) bool {
	for _, e := range m.ManagedFields {
		if e.Manager == manager && e.Subresource == subresource {
			return true
		}
	}
	return false
}

// TestClaimBinding checks claims bound at create time through the binder, with a test chooser in
// place of the claim controller: what the create answers, what is stored and what watchers see.
// The subtests share one server and run one after the other, since a server has one chooser.
func TestClaimBinding(t *testing.T) {
	t.Parallel()
	s := startServer(t)

	runCounted(t, s, "Bound", map[string]float64{"bound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-bound"
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		claims := s.Client.ExtensionsV1beta1().SandboxClaims(ns)

		warm := createSandbox(t, ctx, s, ns, "warm")
		sbWatch, err := sandboxes.Watch(ctx, metav1.ListOptions{ResourceVersion: warm.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer sbWatch.Stop()
		claimList, err := claims.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		claimWatch, err := claims.Watch(ctx, metav1.ListOptions{ResourceVersion: claimList.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer claimWatch.Stop()

		chooser := &testChooser{candidate: warm}
		serve(t, s, chooser)
		created, err := claims.Create(ctx, newClaim(ns, "bound", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create claim: %v", err)
		}
		offered, commitErr := chooser.onlyCall(t, "bound")
		if commitErr != nil {
			t.Fatalf("commit answered %v", commitErr)
		}
		if offered.UID == "" || offered.UID != created.UID || offered.Generation != 1 {
			t.Errorf("chooser was offered uid %q generation %d; the created claim has uid %q", offered.UID, offered.Generation, created.UID)
		}

		// The create answers with the claim as bound, labelled with its sandbox's name.
		expectBound(t, created.Status, created.Generation, "warm")
		if !managedBy(created.ObjectMeta, bindingManager, "status") {
			t.Errorf("claim managedFields lack %s on status: %s", bindingManager, managers(created.ObjectMeta))
		}
		if got := created.Labels[extv1beta1.ClaimSandboxNameLabel]; got != "warm" {
			t.Errorf("claim label %s = %q, want warm", extv1beta1.ClaimSandboxNameLabel, got)
		}
		selected, err := claims.List(ctx, metav1.ListOptions{LabelSelector: extv1beta1.ClaimSandboxNameLabel + "=warm"})
		if err != nil {
			t.Fatal(err)
		}
		if len(selected.Items) != 1 || selected.Items[0].Name != "bound" {
			t.Errorf("claims selected by %s=warm: %d, want the bound claim", extv1beta1.ClaimSandboxNameLabel, len(selected.Items))
		}
		got, err := claims.Get(ctx, "bound", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectBound(t, got.Status, got.Generation, "warm")
		if got.ResourceVersion != created.ResourceVersion {
			t.Errorf("claim resourceVersion: create answered %s, get %s", created.ResourceVersion, got.ResourceVersion)
		}

		// The sandbox is the claim's, written in the same transaction.
		sb := expectAdoptedBy(t, ctx, s, ns, "warm", "bound", string(created.UID))
		if sb.ResourceVersion != created.ResourceVersion {
			t.Errorf("sandbox resourceVersion %s, claim %s: not one transaction", sb.ResourceVersion, created.ResourceVersion)
		}
		if sb.Generation != warm.Generation {
			t.Errorf("sandbox generation %d, want %d: spec did not change", sb.Generation, warm.Generation)
		}
		if sb.Labels["app"] != "agent" || !maps.Equal(sb.Spec.PodTemplate.ObjectMeta.Labels, warm.Spec.PodTemplate.ObjectMeta.Labels) {
			t.Errorf("sandbox lost labels: %v, pod template %v", sb.Labels, sb.Spec.PodTemplate.ObjectMeta.Labels)
		}
		if !managedBy(sb.ObjectMeta, bindingManager, "") {
			t.Errorf("sandbox managedFields lack %s: %s", bindingManager, managers(sb.ObjectMeta))
		}
		for _, e := range sb.ManagedFields {
			if e.Manager == bindingManager && (e.FieldsV1 == nil || !strings.Contains(string(e.FieldsV1.Raw), `"f:ownerReferences"`) ||
				!strings.Contains(string(e.FieldsV1.Raw), `"f:`+extv1beta1.SandboxIDLabel+`"`)) {
				t.Errorf("sandbox managedFields of %s do not own the owner reference and the claim-uid label: %s", bindingManager, jsonOf(t, e.FieldsV1))
			}
		}
		if sb.UID != warm.UID || !sb.CreationTimestamp.Equal(&warm.CreationTimestamp) {
			t.Errorf("sandbox identity changed: uid %s -> %s, created %s -> %s", warm.UID, sb.UID, warm.CreationTimestamp, sb.CreationTimestamp)
		}

		// Watchers see the adoption as an update and the claim as added bound, at that revision.
		ev := expectEvent(t, sbWatch, watch.Modified, "warm").(*agentsv1beta1.Sandbox)
		if ev.ResourceVersion != created.ResourceVersion || metav1.GetControllerOf(ev) == nil || metav1.GetControllerOf(ev).UID != created.UID {
			t.Errorf("sandbox watch event at %s with owners %s, want %s owned by %s", ev.ResourceVersion, jsonOf(t, ev.OwnerReferences), created.ResourceVersion, created.UID)
		}
		cev := expectEvent(t, claimWatch, watch.Added, "bound").(*extv1beta1.SandboxClaim)
		if cev.ResourceVersion != created.ResourceVersion {
			t.Errorf("claim watch event at %s, want %s", cev.ResourceVersion, created.ResourceVersion)
		}
		expectBound(t, cev.Status, cev.Generation, "warm")
	})

	runCounted(t, s, "SpecChangeBumpsGeneration", map[string]float64{"bound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-generation"
		warm := createSandbox(t, ctx, s, ns, "warm")
		// A Ready member, as its controller reported it, and a condition from an older generation.
		warm = withConditions(t, ctx, s, warm,
			metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady", ObservedGeneration: warm.Generation},
			metav1.Condition{Type: "Stale", Status: metav1.ConditionTrue, Reason: "Old", ObservedGeneration: warm.Generation - 1},
			metav1.Condition{Type: "Custom", Status: metav1.ConditionTrue, Reason: "SomeoneElse", ObservedGeneration: warm.Generation})
		// What the claim controller's adoption changes in the spec: the pod template's metadata
		// and the idle timeout.
		chooser := &testChooser{candidate: warm, edit: func(_ *extv1beta1.SandboxClaim, adopted *agentsv1beta1.Sandbox) {
			adopted.Spec.PodTemplate.ObjectMeta.Labels = maps.Clone(adopted.Spec.PodTemplate.ObjectMeta.Labels)
			adopted.Spec.PodTemplate.ObjectMeta.Labels["claimed-by"] = "gen"
			adopted.Spec.IdleTimeout = &metav1.Duration{Duration: time.Hour}
		}}
		serve(t, s, chooser)
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "gen", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chooser.onlyCall(t, "gen"); err != nil {
			t.Fatalf("commit answered %v", err)
		}
		expectBound(t, created.Status, created.Generation, "warm")
		sb := expectAdoptedBy(t, ctx, s, ns, "warm", "gen", string(created.UID))
		if sb.Spec.PodTemplate.ObjectMeta.Labels["claimed-by"] != "gen" {
			t.Errorf("pod template labels %v lack claimed-by=gen", sb.Spec.PodTemplate.ObjectMeta.Labels)
		}
		if sb.Generation != warm.Generation+1 {
			t.Errorf("sandbox generation %d, want %d after a spec change", sb.Generation, warm.Generation+1)
		}
		// Neither the pod template's metadata nor the idle timeout is the sandbox controller's
		// conditions' concern: what held for the member holds for the new generation, and the
		// controller has no status left to write.
		if c := meta.FindStatusCondition(sb.Status.Conditions, "Ready"); c == nil || c.ObservedGeneration != sb.Generation || c.Status != metav1.ConditionTrue {
			t.Errorf("Ready condition %s, want True observed at generation %d", jsonOf(t, c), sb.Generation)
		}
		if c := meta.FindStatusCondition(sb.Status.Conditions, "Stale"); c == nil || c.ObservedGeneration != warm.Generation-1 {
			t.Errorf("Stale condition %s, want it left at generation %d", jsonOf(t, c), warm.Generation-1)
		}
		// Someone else's condition may depend on what changed.
		if c := meta.FindStatusCondition(sb.Status.Conditions, "Custom"); c == nil || c.ObservedGeneration != warm.Generation {
			t.Errorf("Custom condition %s, want it left at generation %d", jsonOf(t, c), warm.Generation)
		}
		if got := meta.FindStatusCondition(warm.Status.Conditions, "Ready").ObservedGeneration; got != warm.Generation {
			t.Errorf("the candidate handed to commit changed: its Ready condition is at generation %d", got)
		}
	})

	runCounted(t, s, "OtherSpecChangeCarriesNoCondition", map[string]float64{"bound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-otherspec"
		warm := createSandbox(t, ctx, s, ns, "warm")
		warm = withConditions(t, ctx, s, warm,
			metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady", ObservedGeneration: warm.Generation})
		// Suspending changes what Ready says: the controller has to look again.
		chooser := &testChooser{candidate: warm, edit: func(_ *extv1beta1.SandboxClaim, adopted *agentsv1beta1.Sandbox) {
			adopted.Spec.Replicas = ptr.To[int32](0)
		}}
		serve(t, s, chooser)
		if _, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "other", "tmpl"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := chooser.onlyCall(t, "other"); err != nil {
			t.Fatalf("commit answered %v", err)
		}
		sb, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "warm", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sb.Generation != warm.Generation+1 {
			t.Fatalf("sandbox generation %d, want %d after a spec change", sb.Generation, warm.Generation+1)
		}
		if c := meta.FindStatusCondition(sb.Status.Conditions, "Ready"); c == nil || c.ObservedGeneration != warm.Generation {
			t.Errorf("Ready condition %s, want it left at generation %d", jsonOf(t, c), warm.Generation)
		}
	})

	runCounted(t, s, "StaleCandidate", map[string]float64{"conflict": 1, "unbound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-stale"
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		warm := createSandbox(t, ctx, s, ns, "warm")
		// The sandbox changes after the chooser's copy was taken.
		moved := warm.DeepCopy()
		moved.Labels["touched"] = "yes"
		moved, err := sandboxes.Update(ctx, moved, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if moved.ResourceVersion == warm.ResourceVersion {
			t.Fatalf("update did not move resourceVersion %s", warm.ResourceVersion)
		}

		chooser := &testChooser{candidate: warm}
		serve(t, s, chooser)
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "stale", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create with a stale candidate: %v", err)
		}
		if _, err := chooser.onlyCall(t, "stale"); !apierrors.IsConflict(err) {
			t.Errorf("commit of a stale candidate answered %v, want a Conflict", err)
		}
		expectUnbound(t, created)
		got, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Get(ctx, "stale", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectUnbound(t, got)
		if managedBy(got.ObjectMeta, bindingManager, "status") {
			t.Errorf("unbound claim has managedFields of %s: %s", bindingManager, managers(got.ObjectMeta))
		}
		sb := expectNotAdopted(t, ctx, s, ns, "warm", moved.ResourceVersion)
		if sb.Labels["touched"] != "yes" {
			t.Errorf("the concurrent update was lost: labels %v", sb.Labels)
		}
	})

	runCounted(t, s, "NameTaken", map[string]float64{"name_taken": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-dup"
		claims := s.Client.ExtensionsV1beta1().SandboxClaims(ns)
		warm := createSandbox(t, ctx, s, ns, "warm")
		first, err := claims.Create(ctx, newClaim(ns, "dup", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}

		chooser := &testChooser{candidate: warm}
		serve(t, s, chooser)
		_, err = claims.Create(ctx, newClaim(ns, "dup", "other"), metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("second create of dup: got %v (reason %q), want AlreadyExists", err, apierrors.ReasonForError(err))
		}
		if _, commitErr := chooser.onlyCall(t, "dup"); !storage.IsExist(commitErr) {
			t.Errorf("commit for a taken name answered %v, want a KeyExists storage error", commitErr)
		}
		expectNotAdopted(t, ctx, s, ns, "warm", warm.ResourceVersion)
		got, err := claims.Get(ctx, "dup", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.UID != first.UID || got.ResourceVersion != first.ResourceVersion || got.Spec.TemplateRef.Name != "tmpl" {
			t.Errorf("the first claim changed: uid %s -> %s, resourceVersion %s -> %s, template %s", first.UID, got.UID, first.ResourceVersion, got.ResourceVersion, got.Spec.TemplateRef.Name)
		}
		expectUnbound(t, got)
	})

	runCounted(t, s, "InvalidStatus", map[string]float64{"unbindable": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-invalid"
		warm := createSandbox(t, ctx, s, ns, "warm")
		chooser := &testChooser{candidate: warm, edit: func(served *extv1beta1.SandboxClaim, _ *agentsv1beta1.Sandbox) {
			served.Status.SandboxStatus.PodIPs = []string{"not-an-ip"}
		}}
		serve(t, s, chooser)
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "invalid", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create with an invalid status from the chooser: %v", err)
		}
		_, commitErr := chooser.onlyCall(t, "invalid")
		if !apierrors.IsInvalid(commitErr) || !strings.Contains(commitErr.Error(), "status.sandbox.podIPs") {
			t.Errorf("commit answered %v, want an Invalid error naming status.sandbox.podIPs", commitErr)
		}
		expectUnbound(t, created)
		got, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Get(ctx, "invalid", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectUnbound(t, got)
		expectNotAdopted(t, ctx, s, ns, "warm", warm.ResourceVersion)
	})

	runCounted(t, s, "SandboxOfAnotherNamespace", map[string]float64{"unbindable": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns, otherNS = "claimbinding-crossns", "claimbinding-crossns-other"
		foreign := createSandbox(t, ctx, s, otherNS, "warm")
		chooser := &testChooser{candidate: foreign}
		serve(t, s, chooser)
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "cross", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create with a sandbox of another namespace: %v", err)
		}
		if _, err := chooser.onlyCall(t, "cross"); err == nil {
			t.Errorf("commit of a sandbox of another namespace succeeded")
		}
		expectUnbound(t, created)
		expectNotAdopted(t, ctx, s, otherNS, "warm", foreign.ResourceVersion)
		if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "warm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("sandbox warm in the claim's namespace: got %v, want NotFound", err)
		}
	})

	runCounted(t, s, "V1alpha1", map[string]float64{"bound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-alpha"
		warm := createSandbox(t, ctx, s, ns, "warm")
		chooser := &testChooser{candidate: warm}
		serve(t, s, chooser)
		alpha := &extv1alpha1.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "alpha", Namespace: ns},
			Spec:       extv1alpha1.SandboxClaimSpec{TemplateRef: extv1alpha1.SandboxTemplateRef{Name: "tmpl"}},
		}
		created, err := s.Client.ExtensionsV1alpha1().SandboxClaims(ns).Create(ctx, alpha, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create through v1alpha1: %v", err)
		}
		if _, err := chooser.onlyCall(t, "alpha"); err != nil {
			t.Fatalf("commit answered %v", err)
		}
		if created.Status.SandboxStatus.Name != "warm" {
			t.Errorf("v1alpha1 create answered status %s, want sandbox warm", jsonOf(t, created.Status))
		}
		if ready := meta.FindStatusCondition(created.Status.Conditions, "Ready"); ready == nil || ready.Status != metav1.ConditionTrue {
			t.Errorf("v1alpha1 create answered conditions %s, want Ready=True", jsonOf(t, created.Status.Conditions))
		}
		sb := expectAdoptedBy(t, ctx, s, ns, "warm", "alpha", string(created.UID))
		if sb.ResourceVersion != created.ResourceVersion {
			t.Errorf("sandbox resourceVersion %s, claim %s: not one transaction", sb.ResourceVersion, created.ResourceVersion)
		}
		beta, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Get(ctx, "alpha", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectBound(t, beta.Status, beta.Generation, "warm")
	})

	runCounted(t, s, "DryRun", map[string]float64{}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-dryrun"
		warm := createSandbox(t, ctx, s, ns, "warm")
		chooser := &testChooser{candidate: warm}
		serve(t, s, chooser)
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "dry", "tmpl"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("dry-run create: %v", err)
		}
		if n := chooser.calls(); n != 0 {
			t.Errorf("chooser offered %d claims on a dry-run create, want 0", n)
		}
		expectUnbound(t, created)
		expectNotAdopted(t, ctx, s, ns, "warm", warm.ResourceVersion)
		if _, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry-run claim: got %v, want NotFound", err)
		}
	})

	runCounted(t, s, "Stopped", map[string]float64{"bound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-stopped"
		claims := s.Client.ExtensionsV1beta1().SandboxClaims(ns)
		warm := createSandbox(t, ctx, s, ns, "warm")

		// A stop of a chooser that was replaced leaves the newer one serving.
		replaced := &testChooser{candidate: warm}
		stopReplaced := s.ClaimBinder.Serve(replaced)
		current := &testChooser{candidate: warm}
		stopCurrent := s.ClaimBinder.Serve(current)
		t.Cleanup(stopCurrent)
		stopReplaced()

		created, err := claims.Create(ctx, newClaim(ns, "first", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := replaced.calls(); n != 0 {
			t.Errorf("replaced chooser offered %d claims, want 0", n)
		}
		if _, err := current.onlyCall(t, "first"); err != nil {
			t.Fatalf("commit answered %v", err)
		}
		expectBound(t, created.Status, created.Generation, "warm")

		// Once stopped, claims are stored as they are.
		bound := expectAdoptedBy(t, ctx, s, ns, "warm", "first", string(created.UID))
		stopCurrent()
		later, err := claims.Create(ctx, newClaim(ns, "later", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := current.calls(); n != 1 {
			t.Errorf("stopped chooser offered %d claims in all, want 1", n)
		}
		expectUnbound(t, later)
		if sb := expectAdoptedBy(t, ctx, s, ns, "warm", "first", string(created.UID)); sb.ResourceVersion != bound.ResourceVersion {
			t.Errorf("sandbox warm resourceVersion %s, want %s (unchanged)", sb.ResourceVersion, bound.ResourceVersion)
		}
	})
}

// runCounted runs a subtest and checks how sandbox_claim_bindings_total moved during it, by result.
func runCounted(t *testing.T, s *framework.Server, name string, want map[string]float64, f func(t *testing.T)) {
	t.Helper()
	before := bindingCounts(t, s)
	t.Run(name, func(t *testing.T) {
		f(t)
		after := bindingCounts(t, s)
		got := map[string]float64{}
		for result, n := range after {
			if d := n - before[result]; d != 0 {
				got[result] = d
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("sandbox_claim_bindings_total moved by %v, want %v", got, want)
		}
	})
}

// bindingCounts reads sandbox_claim_bindings_total from the server's /metrics, by result.
func bindingCounts(t *testing.T, s *framework.Server) map[string]float64 {
	t.Helper()
	raw, err := s.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading /metrics: %v", err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, `sandbox_claim_bindings_total{result="`)
		if !ok {
			continue
		}
		result, value, _ := strings.Cut(rest, `"} `)
		var n float64
		if _, err := fmt.Sscan(value, &n); err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[result] = n
	}
	return out
}

// withConditions writes conds, as of now, as sb's status conditions and returns the stored sandbox.
func withConditions(t *testing.T, ctx context.Context, s *framework.Server, sb *agentsv1beta1.Sandbox, conds ...metav1.Condition) *agentsv1beta1.Sandbox {
	t.Helper()
	for i := range conds {
		conds[i].LastTransitionTime = metav1.Now()
	}
	sb.Status.Conditions = conds
	stored, err := s.Client.AgentsV1beta1().Sandboxes(sb.Namespace).UpdateStatus(ctx, sb, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return stored
}
