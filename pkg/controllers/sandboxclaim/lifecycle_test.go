// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"maps"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/adoption"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

func TestExpiryDeletesClaim(t *testing.T) {
	past := ptr.To(-time.Minute)
	cases := []struct {
		name   string
		claim  *extensionsv1beta1.SandboxClaim
		gone   bool // the claim is already gone from the API
		extras []runtime.Object
	}{
		{name: "Delete at shutdownTime", claim: newClaim(withLifecycle(past, nil, ptr.To(extensionsv1beta1.ShutdownPolicyDelete)))},
		{name: "DeleteForeground at shutdownTime", claim: newClaim(withLifecycle(past, nil, ptr.To(extensionsv1beta1.ShutdownPolicyDeleteForeground)))},
		{
			name: "Delete after the TTL of Finished",
			claim: newClaim(withLifecycle(nil, ptr.To[int32](60), ptr.To(extensionsv1beta1.ShutdownPolicyDelete)),
				withClaimStatus(extensionsv1beta1.SandboxClaimStatus{Conditions: []metav1.Condition{{
					Type: "Finished", Status: "True", Reason: "PodSucceeded", LastTransitionTime: metav1.NewTime(testNow.Add(-2 * time.Minute)),
				}}})),
		},
		{
			name:   "Delete leaves the owned sandbox to the claim's finalizer",
			claim:  newClaim(withLifecycle(past, nil, ptr.To(extensionsv1beta1.ShutdownPolicyDelete))),
			extras: []runtime.Object{newSandbox(testClaim, ownedByClaim(testClaim, testClaimUID))},
		},
		{name: "a claim already gone is not an error", claim: newClaim(withLifecycle(past, nil, ptr.To(extensionsv1beta1.ShutdownPolicyDelete))), gone: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, append([]runtime.Object{newTemplate()}, tc.extras...)...)
			if tc.gone {
				f.addCache(tc.claim)
			} else {
				f.add(tc.claim)
			}
			if err := f.sync(testClaim); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got, want := f.writes(), []string{"delete sandboxclaims " + testClaim}; !slices.Equal(got, want) {
				t.Fatalf("writes = %q, want %q", got, want)
			}
			if got := f.deletes("sandboxclaims"); got[testClaim] != testClaimUID {
				t.Errorf("claim delete precondition UID = %q, want %q", got[testClaim], testClaimUID)
			}
			if ev := f.eventReasons(); !slices.Equal(ev, []string{"ClaimExpired"}) {
				t.Errorf("events = %q, want ClaimExpired", ev)
			}
		})
	}
}

func TestExpiryRetain(t *testing.T) {
	mine := ownedByClaim(testClaim, testClaimUID)
	cases := []struct {
		name        string
		claim       *extensionsv1beta1.SandboxClaim
		sandboxes   []*agentsv1beta1.Sandbox
		wantDeletes map[string]types.UID
	}{
		{
			name:        "explicit Retain deletes the owned sandbox",
			claim:       newClaim(withLifecycle(ptr.To(-time.Minute), nil, ptr.To(extensionsv1beta1.ShutdownPolicyRetain))),
			sandboxes:   []*agentsv1beta1.Sandbox{newSandbox(testClaim, mine, sandboxReady("True", "DependenciesReady", "ok"))},
			wantDeletes: map[string]types.UID{testClaim: testClaim + "-uid"},
		},
		{
			name:        "Retain is the default policy",
			claim:       newClaim(withLifecycle(ptr.To(-time.Minute), nil, nil)),
			sandboxes:   []*agentsv1beta1.Sandbox{newSandbox(testClaim, mine)},
			wantDeletes: map[string]types.UID{testClaim: testClaim + "-uid"},
		},
		{
			name: "an adopted sandbox found through the status is deleted",
			claim: newClaim(withLifecycle(ptr.To(-time.Minute), nil, nil),
				withClaimStatus(extensionsv1beta1.SandboxClaimStatus{SandboxStatus: extensionsv1beta1.SandboxStatus{Name: "pool-x"}})),
			sandboxes:   []*agentsv1beta1.Sandbox{newSandbox("pool-x", mine)},
			wantDeletes: map[string]types.UID{"pool-x": "pool-x-uid"},
		},
		{
			name:      "a sandbox already being deleted is not deleted again",
			claim:     newClaim(withLifecycle(ptr.To(-time.Minute), nil, nil)),
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox(testClaim, mine, sandboxDeleting)},
		},
		{
			name:      "a foreign sandbox with the claim's name is left alone",
			claim:     newClaim(withLifecycle(ptr.To(-time.Minute), nil, nil)),
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox(testClaim, ownedByClaim("other", "other-uid"))},
		},
		{
			name:  "no sandbox left",
			claim: newClaim(withLifecycle(ptr.To(-time.Minute), nil, nil)),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.claim, newTemplate())
			for _, sb := range tc.sandboxes {
				f.add(sb)
			}
			f.mustSync(testClaim)

			if got := f.deletes("sandboxes"); !maps.Equal(got, tc.wantDeletes) && len(got)+len(tc.wantDeletes) > 0 {
				t.Errorf("sandbox deletes (name: UID precondition) = %v, want %v", got, tc.wantDeletes)
			}
			if n := len(f.actionsOf("delete", "sandboxclaims")) + len(f.createdSandboxes()) + len(f.updatedSandboxes()); n != 0 {
				t.Errorf("writes = %q, want the claim kept and nothing made", f.writes())
			}
			st := f.lastStatus()
			checkReady(t, st, metav1.ConditionFalse, extensionsv1beta1.ClaimReasonClaimExpired, "Claim expired; sandbox cleanup initiated")
			if st.Status.SandboxStatus.Name != "" || st.Status.SandboxStatus.PodIPs != nil {
				t.Errorf("status.sandbox = %+v, want it cleared", st.Status.SandboxStatus)
			}
			if ev := f.eventReasons(); !slices.Equal(ev, []string{"ClaimExpired"}) {
				t.Errorf("events = %q, want one ClaimExpired", ev)
			}

			// The sandbox disappears and the claim is synced again: no event, no write.
			f.applyWrites()
			f.mustSync(testClaim)
			if ev := f.events(); len(ev) != 0 {
				t.Errorf("second sync recorded %q, want the event only once", ev)
			}
			if n := len(f.actionsOf("delete", "sandboxclaims")) + len(f.createdSandboxes()) + len(f.actionsOf("update", "sandboxclaims/status")); n != 0 {
				t.Errorf("second sync wrote %q", f.writes())
			}
		})
	}
}

// TestTTLAfterFinishedTwoPasses: the pass that mirrors Finished sees the TTL already over and
// requeues at once; the next pass applies the policy.
func TestTTLAfterFinishedTwoPasses(t *testing.T) {
	for _, policy := range []extensionsv1beta1.ShutdownPolicy{extensionsv1beta1.ShutdownPolicyRetain, extensionsv1beta1.ShutdownPolicyDelete} {
		t.Run(string(policy), func(t *testing.T) {
			sb := newSandbox(testClaim, ownedByClaim(testClaim, testClaimUID),
				withSandboxCond(metav1.Condition{Type: "Finished", Status: "True", Reason: "PodSucceeded",
					LastTransitionTime: metav1.NewTime(testNow.Add(-10 * time.Minute))}))
			f := newFixture(t, newClaim(withLifecycle(nil, ptr.To[int32](60), ptr.To(policy)), withClaimLabel(extensionsv1beta1.ClaimSandboxNameLabel, testClaim)), newTemplate(), sb)
			want, err := adoption.DesiredPodMetadata(newClaim(), newTemplate(), nil)
			f.must(err)
			sb.Spec.PodTemplate.ObjectMeta = want
			f.updateCache(sb)

			f.mustSync(testClaim)
			if got := f.writes(); !slices.Equal(got, []string{"update sandboxclaims/status " + testClaim}) {
				t.Fatalf("first pass wrote %q, want the mirrored Finished only", got)
			}
			if f.queue.Len() != 1 {
				t.Fatalf("first pass queued %d, want the claim again at once", f.queue.Len())
			}
			f.applyWrites()

			f.mustSync(testClaim)
			switch policy {
			case extensionsv1beta1.ShutdownPolicyRetain:
				if got := f.deletes("sandboxes"); got[testClaim] != testClaim+"-uid" || len(got) != 1 {
					t.Errorf("second pass deleted %v, want the sandbox", got)
				}
				checkReady(t, f.lastStatus(), metav1.ConditionFalse, extensionsv1beta1.ClaimReasonClaimExpired, "")
			default:
				if got := f.writes(); !slices.Equal(got, []string{"delete sandboxclaims " + testClaim}) {
					t.Errorf("second pass wrote %q, want the claim deleted", got)
				}
			}
		})
	}
}

func TestFinalize(t *testing.T) {
	mine := ownedByClaim(testClaim, testClaimUID)
	deleteForeground := withLifecycle(nil, nil, ptr.To(extensionsv1beta1.ShutdownPolicyDeleteForeground))
	deletePolicy := withLifecycle(nil, nil, ptr.To(extensionsv1beta1.ShutdownPolicyDelete))
	cases := []struct {
		name        string
		claim       *extensionsv1beta1.SandboxClaim
		sandboxes   []*agentsv1beta1.Sandbox
		apiGone     []string // owned sandboxes the API no longer has
		wantDeletes map[string]types.UID
		// wantFinalizers is the finalizer list of the claim update; nil for no update.
		wantFinalizers []string
	}{
		{
			name:        "Delete: owned sandboxes deleted and the finalizer removed at once",
			claim:       newClaim(claimDeleting, deletePolicy),
			sandboxes:   []*agentsv1beta1.Sandbox{newSandbox(testClaim, mine), newSandbox("pool-x", mine), newSandbox("foreign", ownedByClaim("other", "other-uid"))},
			wantDeletes: map[string]types.UID{testClaim: testClaim + "-uid", "pool-x": "pool-x-uid"}, wantFinalizers: []string{},
		},
		{
			name:        "Retain (default) behaves as Delete on claim deletion",
			claim:       newClaim(claimDeleting),
			sandboxes:   []*agentsv1beta1.Sandbox{newSandbox(testClaim, mine)},
			wantDeletes: map[string]types.UID{testClaim: testClaim + "-uid"}, wantFinalizers: []string{},
		},
		{
			name:           "other finalizers are kept",
			claim:          newClaim(claimDeleting, withFinalizers("example.com/keep", extensionsv1beta1.ClaimSandboxFinalizer)),
			wantFinalizers: []string{"example.com/keep"},
		},
		{
			name:           "no sandbox: the finalizer goes",
			claim:          newClaim(claimDeleting, deleteForeground),
			wantFinalizers: []string{},
		},
		{
			name:        "DeleteForeground keeps the finalizer while the sandbox is in the cache",
			claim:       newClaim(claimDeleting, deleteForeground),
			sandboxes:   []*agentsv1beta1.Sandbox{newSandbox(testClaim, mine)},
			wantDeletes: map[string]types.UID{testClaim: testClaim + "-uid"},
		},
		{
			name:      "DeleteForeground waits for a sandbox already being deleted without deleting again",
			claim:     newClaim(claimDeleting, deleteForeground),
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox(testClaim, mine, sandboxDeleting)},
		},
		{
			name:        "a foreground deletion of the claim waits like DeleteForeground",
			claim:       newClaim(claimDeleting, withFinalizers(metav1.FinalizerDeleteDependents, extensionsv1beta1.ClaimSandboxFinalizer)),
			sandboxes:   []*agentsv1beta1.Sandbox{newSandbox(testClaim, mine)},
			wantDeletes: map[string]types.UID{testClaim: testClaim + "-uid"},
		},
		{
			name:        "a sandbox already gone from the API does not block",
			claim:       newClaim(claimDeleting, deletePolicy),
			sandboxes:   []*agentsv1beta1.Sandbox{newSandbox(testClaim, mine)},
			apiGone:     []string{testClaim},
			wantDeletes: map[string]types.UID{testClaim: testClaim + "-uid"}, wantFinalizers: []string{},
		},
		{
			name:      "without our finalizer a deleting claim is left alone",
			claim:     newClaim(claimDeleting, withFinalizers("example.com/keep")),
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox(testClaim, mine)},
		},
		{
			name:           "a live claim without the finalizer gets it, and nothing else happens",
			claim:          newClaim(withFinalizers()),
			wantFinalizers: []string{extensionsv1beta1.ClaimSandboxFinalizer},
		},
		{
			name:           "a live claim's other finalizers are kept when ours is added",
			claim:          newClaim(withFinalizers("example.com/keep")),
			wantFinalizers: []string{"example.com/keep", extensionsv1beta1.ClaimSandboxFinalizer},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.claim, newTemplate())
			for _, sb := range tc.sandboxes {
				if slices.Contains(tc.apiGone, sb.Name) {
					f.addCache(sb)
				} else {
					f.add(sb)
				}
			}
			f.mustSync(testClaim)

			if got := f.deletes("sandboxes"); !maps.Equal(got, tc.wantDeletes) && len(got)+len(tc.wantDeletes) > 0 {
				t.Errorf("sandbox deletes (name: UID precondition) = %v, want %v", got, tc.wantDeletes)
			}
			ups := f.updatedClaims()
			switch {
			case tc.wantFinalizers == nil && len(ups) != 0:
				t.Errorf("claim updated with finalizers %q, want no update", ups[0].Finalizers)
			case tc.wantFinalizers != nil && len(ups) != 1:
				t.Errorf("%d claim updates, want one with finalizers %q; writes %q", len(ups), tc.wantFinalizers, f.writes())
			case tc.wantFinalizers != nil:
				if got := ups[0].Finalizers; !slices.Equal(got, tc.wantFinalizers) && len(got)+len(tc.wantFinalizers) > 0 {
					t.Errorf("claim finalizers = %q, want %q", got, tc.wantFinalizers)
				}
			}
			if n := len(f.createdSandboxes()) + len(f.updatedSandboxes()) + len(f.statusWrites()) + len(f.actionsOf("delete", "sandboxclaims")); n != 0 {
				t.Errorf("writes = %q, want no create, adoption, status or claim delete", f.writes())
			}
		})
	}
}

// TestFinalizeForegroundReleasesWhenSandboxGone: the claim under DeleteForeground loses its
// finalizer once its sandbox has left the cache.
func TestFinalizeForegroundReleasesWhenSandboxGone(t *testing.T) {
	sb := newSandbox(testClaim, ownedByClaim(testClaim, testClaimUID))
	claim := newClaim(claimDeleting, withLifecycle(nil, nil, ptr.To(extensionsv1beta1.ShutdownPolicyDeleteForeground)))
	f := newFixture(t, claim, newTemplate(), sb)

	f.mustSync(testClaim)
	if got := f.writes(); !slices.Equal(got, []string{"delete sandboxes " + testClaim}) {
		t.Fatalf("first pass wrote %q, want the sandbox deleted and the claim kept", got)
	}
	f.reset()

	// The sandbox is being deleted (its own finalizer holds it): still waiting, no new delete.
	deleting := sb.DeepCopy()
	sandboxDeleting(deleting)
	f.updateCache(deleting)
	f.mustSync(testClaim)
	if got := f.writes(); len(got) != 0 {
		t.Fatalf("while the sandbox is going, wrote %q, want nothing", got)
	}

	// Gone: the finalizer goes.
	f.deleteCache(deleting)
	f.mustSync(testClaim)
	ups := f.updatedClaims()
	if len(ups) != 1 || slices.Contains(ups[0].Finalizers, extensionsv1beta1.ClaimSandboxFinalizer) {
		t.Fatalf("writes = %q, want one claim update without the finalizer", f.writes())
	}
}

// TestFinalizerUpdateConflictIsRetriedLater: a conflict on the finalizer write is left to the
// next event of the claim, not reported as a failure.
func TestFinalizerUpdateConflictIsRetriedLater(t *testing.T) {
	f := newFixture(t, newClaim(withFinalizers()), newTemplate())
	f.client.PrependReactor("update", "sandboxclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, conflict(testClaim)
	})
	if err := f.sync(testClaim); err != nil {
		t.Fatalf("sync: %v, want nil on a conflict", err)
	}
}

// TestFinalizeStaleSandboxCache: a claim deleted right after its sandbox was made or adopted may
// be finalized before the sandbox cache shows the sandbox as the claim's. Nothing garbage-collects
// the aggregated API, so if the finalizer goes without the sandbox, the sandbox stays forever.
func TestFinalizeStaleSandboxCache(t *testing.T) {
	cases := []struct {
		name   string
		claim  *extensionsv1beta1.SandboxClaim
		api    *agentsv1beta1.Sandbox // the sandbox as the API has it
		cached *agentsv1beta1.Sandbox // as the cache still has it; nil for not at all
	}{
		{
			name:  "cold sandbox not in the cache yet",
			claim: newClaim(claimDeleting),
			api:   newSandbox(testClaim, ownedByClaim(testClaim, testClaimUID)),
		},
		{
			name: "adopted member still the pool's in the cache",
			claim: newClaim(claimDeleting, withClaimStatus(extensionsv1beta1.SandboxClaimStatus{
				SandboxStatus: extensionsv1beta1.SandboxStatus{Name: "m1"}})),
			api:    warmMember("m1", "", ownedByClaim(testClaim, testClaimUID)),
			cached: warmMember("m1", testPool),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.claim, newTemplate())
			f.addAPI(tc.api)
			if tc.cached != nil {
				f.addCache(tc.cached)
			}
			f.mustSync(testClaim)
			deleted := f.deletes("sandboxes")[tc.api.Name] != ""
			released := false
			for _, c := range f.updatedClaims() {
				released = released || !slices.Contains(c.Finalizers, extensionsv1beta1.ClaimSandboxFinalizer)
			}
			if released && !deleted {
				t.Fatalf("finalize looks for owned sandboxes in the cache only (byController index): the finalizer "+
					"is removed while sandbox %s, controlled by the claim in the API, is neither deleted nor waited for; "+
					"it is left behind (writes %q)", tc.api.Name, f.writes())
			}
		})
	}
}
