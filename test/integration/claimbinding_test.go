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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1alpha1"
	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/claimbinding"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/warm"
	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

// bindingManager is the field manager the binder writes under (claimbinding.FieldManager).
const bindingManager = "sandboxclaim-controller"

// claimGVK is the kind the adopted sandbox's controller reference names.
var claimGVK = extv1beta1.SchemeGroupVersion.WithKind("SandboxClaim")

// warmMember creates, as the warm pool controller would, a member of pool ns/pool (created first
// when it does not exist yet) for claims of template tmpl, with status conditions conds (a Ready
// one when none are given), and waits until the server's chooser has it queued as Ready, at that
// status. It returns the member as stored.
func warmMember(t *testing.T, ctx context.Context, s *framework.Server, ns, name string, conds ...metav1.Condition) *agentsv1beta1.Sandbox {
	t.Helper()
	pool, err := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).Get(ctx, "pool", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		pool, err = s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).Create(ctx, newPool(ns, "pool", "tmpl", 0), metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(ns, name)
	sb.Labels[extv1beta1.WarmPoolSandboxLabel] = objectmeta.NameHash("pool")
	sb.Labels[extv1beta1.SandboxTemplateRefHashLabel] = objectmeta.NameHash("tmpl")
	sb.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pool, extv1beta1.SchemeGroupVersion.WithKind("SandboxWarmPool"))}
	// Only the controllers may write the warm-pool marks.
	sb, err = s.ControllerClient.AgentsV1beta1().Sandboxes(ns).Create(ctx, sb, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create member %s: %v", name, err)
	}
	if len(conds) == 0 {
		conds = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady", ObservedGeneration: sb.Generation}}
	}
	// The status write makes the member Ready: once the chooser queues it so, its cache holds
	// this write, the one a binding's transaction is conditional on.
	sb = withConditions(t, ctx, s, sb, conds...)
	ready := warm.Bucket{Namespace: ns, TemplateRefHash: objectmeta.NameHash("tmpl")}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return s.WarmChooser.Queue().Len(ready) > 0, nil
	}); err != nil {
		t.Fatalf("member %s never queued by the chooser: %v", name, err)
	}
	return sb
}

// createSandbox creates a sandbox and returns it as stored.
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

// expectNotAdopted reads the member and fails the test if its pool is not its controller, if it
// has the claim-uid label, or if its resourceVersion is not rv.
func expectNotAdopted(t *testing.T, ctx context.Context, s *framework.Server, ns, name, rv string) *agentsv1beta1.Sandbox {
	t.Helper()
	sb, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get sandbox %s: %v", name, err)
	}
	if ref := metav1.GetControllerOf(sb); ref == nil || ref.Kind != "SandboxWarmPool" {
		t.Errorf("sandbox %s has owners %s, want its pool only", name, jsonOf(t, sb.OwnerReferences))
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

// TestClaimBinding checks claims bound at create time by a server that runs no controller (it
// never leads), from warm members its chooser has queued: what the create answers, what is stored
// and what watchers see. The subtests share one server and run one after the other, so that each
// moves sandbox_claim_bindings_total alone.
func TestClaimBinding(t *testing.T) {
	t.Parallel()
	s := framework.StartNonLeader(t, t.TempDir())

	runCounted(t, s, "Bound", map[string]float64{"bound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-bound"
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		claims := s.Client.ExtensionsV1beta1().SandboxClaims(ns)

		warm := warmMember(t, ctx, s, ns, "warm")
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

		created, err := claims.Create(ctx, newClaim(ns, "bound", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create claim: %v", err)
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
		if _, member := sb.Labels[extv1beta1.WarmPoolSandboxLabel]; member || sb.Labels["app"] != "agent" || sb.Spec.PodTemplate.ObjectMeta.Labels["team"] != "ml" {
			t.Errorf("sandbox labels %v, pod template %v: want the pool's mark gone and the rest kept", sb.Labels, sb.Spec.PodTemplate.ObjectMeta.Labels)
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

	runCounted(t, s, "SpecChangeCarriesConditions", map[string]float64{"bound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-generation"
		// A Ready member, as its controller reported it, and a condition from an older generation.
		warm := warmMember(t, ctx, s, ns, "warm",
			metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady", ObservedGeneration: 1},
			metav1.Condition{Type: "Stale", Status: metav1.ConditionTrue, Reason: "Old", ObservedGeneration: 0},
			metav1.Condition{Type: "Custom", Status: metav1.ConditionTrue, Reason: "SomeoneElse", ObservedGeneration: 1})
		// What the adoption changes in the spec: the pod template's metadata and the idle timeout.
		claim := newClaim(ns, "gen", "tmpl")
		claim.Spec.AdditionalPodMetadata.Labels = map[string]string{"claimed-by": "gen"}
		claim.Spec.Lifecycle = &extv1beta1.Lifecycle{IdleTimeout: &metav1.Duration{Duration: time.Hour}}
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectBound(t, created.Status, created.Generation, "warm")
		sb := expectAdoptedBy(t, ctx, s, ns, "warm", "gen", string(created.UID))
		if sb.Spec.PodTemplate.ObjectMeta.Labels["claimed-by"] != "gen" || sb.Spec.IdleTimeout == nil || sb.Spec.IdleTimeout.Duration != time.Hour {
			t.Errorf("pod template labels %v and idle timeout %v, want claimed-by=gen and 1h", sb.Spec.PodTemplate.ObjectMeta.Labels, sb.Spec.IdleTimeout)
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
		if c := meta.FindStatusCondition(sb.Status.Conditions, "Stale"); c == nil || c.ObservedGeneration != 0 {
			t.Errorf("Stale condition %s, want it left at generation 0", jsonOf(t, c))
		}
		// Someone else's condition may depend on what changed.
		if c := meta.FindStatusCondition(sb.Status.Conditions, "Custom"); c == nil || c.ObservedGeneration != warm.Generation {
			t.Errorf("Custom condition %s, want it left at generation %d", jsonOf(t, c), warm.Generation)
		}
	})

	runCounted(t, s, "NameTaken", map[string]float64{"unbound": 1, "name_taken": 1, "bound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-dup"
		claims := s.Client.ExtensionsV1beta1().SandboxClaims(ns)
		// Stored unbound: no member yet.
		first, err := claims.Create(ctx, newClaim(ns, "dup", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		warm := warmMember(t, ctx, s, ns, "warm")
		_, err = claims.Create(ctx, newClaim(ns, "dup", "tmpl"), metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			t.Fatalf("second create of dup: got %v (reason %q), want AlreadyExists", err, apierrors.ReasonForError(err))
		}
		expectNotAdopted(t, ctx, s, ns, "warm", warm.ResourceVersion)
		got, err := claims.Get(ctx, "dup", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.UID != first.UID || got.ResourceVersion != first.ResourceVersion {
			t.Errorf("the first claim changed: uid %s -> %s, resourceVersion %s -> %s", first.UID, got.UID, first.ResourceVersion, got.ResourceVersion)
		}
		expectUnbound(t, got)
		// The member goes back to the queue for the next claim.
		next, err := claims.Create(ctx, newClaim(ns, "next", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if next.Status.SandboxStatus.Name != "warm" {
			t.Errorf("the next claim's status %s, want it bound to warm", jsonOf(t, next.Status))
		}
	})

	runCounted(t, s, "MemberOfAnotherNamespace", map[string]float64{"unbound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns, otherNS = "claimbinding-crossns", "claimbinding-crossns-other"
		foreign := warmMember(t, ctx, s, otherNS, "warm")
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "cross", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create beside a member of another namespace: %v", err)
		}
		expectUnbound(t, created)
		expectNotAdopted(t, ctx, s, otherNS, "warm", foreign.ResourceVersion)
	})

	runCounted(t, s, "V1alpha1", map[string]float64{"bound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-alpha"
		warmMember(t, ctx, s, ns, "warm")
		alpha := &extv1alpha1.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "alpha", Namespace: ns},
			Spec:       extv1alpha1.SandboxClaimSpec{TemplateRef: extv1alpha1.SandboxTemplateRef{Name: "tmpl"}},
		}
		created, err := s.Client.ExtensionsV1alpha1().SandboxClaims(ns).Create(ctx, alpha, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create through v1alpha1: %v", err)
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
		warm := warmMember(t, ctx, s, ns, "warm")
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "dry", "tmpl"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("dry-run create: %v", err)
		}
		expectUnbound(t, created)
		expectNotAdopted(t, ctx, s, ns, "warm", warm.ResourceVersion)
		if _, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("dry-run claim: got %v, want NotFound", err)
		}
	})

	// The cases below hand the commit, through the binder's interceptor, what neither the chooser
	// nor pkg/adoption ever would: the transaction and the registries' checks must refuse it on
	// their own.
	runCounted(t, s, "OtherSpecChangeCarriesNoCondition", map[string]float64{"bound": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-otherspec"
		warm := warmMember(t, ctx, s, ns, "warm")
		// Suspending changes what Ready says: the sandbox controller has to look again.
		commits := interceptCommits(t, s, func(a *claimbinding.Adoption) {
			a.Adopted.Spec.Replicas = ptr.To[int32](0)
		})
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "other", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := commits.only(t); err != nil {
			t.Fatalf("commit answered %v", err)
		}
		sb := expectAdoptedBy(t, ctx, s, ns, "warm", "other", string(created.UID))
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
		sandboxes := s.ControllerClient.AgentsV1beta1().Sandboxes(ns)
		warmMember(t, ctx, s, ns, "warm")
		// Between the choice and the commit the member moves on: its pool lets it go.
		var moved *agentsv1beta1.Sandbox
		commits := interceptCommits(t, s, func(a *claimbinding.Adoption) {
			released := a.Candidate.DeepCopy()
			delete(released.Labels, extv1beta1.WarmPoolSandboxLabel)
			released.Labels["touched"] = "yes"
			var err error
			if moved, err = sandboxes.Update(ctx, released, metav1.UpdateOptions{}); err != nil {
				t.Errorf("release the member: %v", err)
			}
		})
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "stale", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create with a stale candidate: %v", err)
		}
		if err := commits.only(t); !apierrors.IsConflict(err) {
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
		if moved == nil {
			t.FailNow()
		}
		sb := expectNotAdopted(t, ctx, s, ns, "warm", moved.ResourceVersion)
		if sb.Labels["touched"] != "yes" {
			t.Errorf("the concurrent update was lost: labels %v", sb.Labels)
		}
	})

	runCounted(t, s, "InvalidStatus", map[string]float64{"unbindable": 1}, func(t *testing.T) {
		ctx := testContext(t)
		const ns = "claimbinding-invalid"
		warm := warmMember(t, ctx, s, ns, "warm")
		commits := interceptCommits(t, s, func(a *claimbinding.Adoption) {
			a.Served.Status.SandboxStatus.PodIPs = []string{"not-an-ip"}
		})
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "invalid", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create with an invalid status: %v", err)
		}
		if err := commits.only(t); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.sandbox.podIPs") {
			t.Errorf("commit answered %v, want an Invalid error naming status.sandbox.podIPs", err)
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
		const ns, otherNS = "claimbinding-foreign", "claimbinding-foreign-other"
		own := warmMember(t, ctx, s, ns, "warm")
		foreign := warmMember(t, ctx, s, otherNS, "warm")
		commits := interceptCommits(t, s, func(a *claimbinding.Adoption) {
			adopted := a.Adopted.DeepCopy()
			adopted.Namespace, adopted.UID, adopted.ResourceVersion = foreign.Namespace, foreign.UID, foreign.ResourceVersion
			a.Candidate, a.Adopted = foreign, adopted
		})
		created, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "cross", "tmpl"), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create with a sandbox of another namespace: %v", err)
		}
		if err := commits.only(t); err == nil {
			t.Errorf("commit of a sandbox of another namespace succeeded")
		}
		expectUnbound(t, created)
		expectNotAdopted(t, ctx, s, otherNS, "warm", foreign.ResourceVersion)
		expectNotAdopted(t, ctx, s, ns, "warm", own.ResourceVersion)
	})
}

// commitLog records what the commits a test intercepted answered.
type commitLog struct {
	mu   sync.Mutex
	errs []error
}

// interceptCommits makes the server's binder pass each adoption through edit before committing
// it, until the test ends, and records what each commit answered.
func interceptCommits(t *testing.T, s *framework.Server, edit func(a *claimbinding.Adoption)) *commitLog {
	t.Helper()
	log := &commitLog{}
	t.Cleanup(s.ClaimBinder.InterceptCommits(func(ctx context.Context, a claimbinding.Adoption, commit func(context.Context, claimbinding.Adoption) error) error {
		edit(&a)
		err := commit(ctx, a)
		log.mu.Lock()
		defer log.mu.Unlock()
		log.errs = append(log.errs, err)
		return err
	}))
	return log
}

// only checks that exactly one commit was intercepted and returns what it answered.
func (l *commitLog) only(t *testing.T) error {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) != 1 {
		t.Fatalf("%d commits, want 1 (answers %v)", len(l.errs), l.errs)
	}
	return l.errs[0]
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
