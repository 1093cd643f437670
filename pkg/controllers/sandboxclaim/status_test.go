// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"errors"
	"slices"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/adoption"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
)

var finishedAt = metav1.NewTime(testNow.Add(-30 * time.Second))

func finished(status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: "Finished", Status: status, Reason: reason, Message: "pod " + reason,
		ObservedGeneration: 9, LastTransitionTime: finishedAt}
}

func TestComputeStatus(t *testing.T) {
	ready := sandboxReady(metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready")
	// The claim's Finished as an earlier sync wrote it, for the claim's generation.
	onClaim := finished(metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded)
	onClaim.ObservedGeneration = testGen
	claimFinished := withClaimStatus(extensionsv1beta1.SandboxClaimStatus{
		Conditions:    []metav1.Condition{onClaim},
		SandboxStatus: extensionsv1beta1.SandboxStatus{Name: "stale", PodIPs: []string{"10.9.9.9"}},
	})
	type cond struct {
		status          metav1.ConditionStatus
		reason, message string
	}
	cases := []struct {
		name         string
		claimMods    []func(*extensionsv1beta1.SandboxClaim)
		sb           *agentsv1beta1.Sandbox
		err          error
		expired      bool
		wantReady    cond
		wantFinished *cond
		wantSandbox  extensionsv1beta1.SandboxStatus
	}{
		{
			name:        "Ready True mirrored with reason and message",
			sb:          newSandbox("sb", ready, withPodIPs("10.0.0.1", "fd00::1")),
			wantReady:   cond{metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"},
			wantSandbox: extensionsv1beta1.SandboxStatus{Name: "sb", PodIPs: []string{"10.0.0.1", "fd00::1"}},
		},
		{
			name:        "Ready False mirrored with reason and message",
			sb:          newSandbox("sb", sandboxReady(metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady, "Pod is Pending")),
			wantReady:   cond{metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady, "Pod is Pending"},
			wantSandbox: extensionsv1beta1.SandboxStatus{Name: "sb"},
		},
		{
			name: "a pod the cluster's quota refused: PodCreationForbidden mirrored with the cluster's message",
			sb: newSandbox("sb", sandboxReady(metav1.ConditionFalse, agentsv1beta1.SandboxReasonPodCreationForbidden,
				`pods "sb" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1`)),
			wantReady: cond{metav1.ConditionFalse, agentsv1beta1.SandboxReasonPodCreationForbidden,
				`pods "sb" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1`},
			wantSandbox: extensionsv1beta1.SandboxStatus{Name: "sb"},
		},
		{
			name: "a child name taken by an object the sandbox does not control: OwnershipConflict mirrored naming it",
			sb: newSandbox("sb", sandboxReady(metav1.ConditionFalse, agentsv1beta1.SandboxReasonOwnershipConflict,
				`PersistentVolumeClaim "data-sb" already exists and has no controller: it was not made for this object and is left as it is`)),
			wantReady: cond{metav1.ConditionFalse, agentsv1beta1.SandboxReasonOwnershipConflict,
				`PersistentVolumeClaim "data-sb" already exists and has no controller: it was not made for this object and is left as it is`},
			wantSandbox: extensionsv1beta1.SandboxStatus{Name: "sb"},
		},
		{
			name:        "a sandbox without Ready: SandboxNotReady",
			sb:          newSandbox("sb"),
			wantReady:   cond{metav1.ConditionFalse, extensionsv1beta1.ClaimReasonSandboxNotReady, "Sandbox sb reports no readiness yet"},
			wantSandbox: extensionsv1beta1.SandboxStatus{Name: "sb"},
		},
		{
			name:        "a sandbox that expired on its own: SandboxExpired with its message",
			sb:          newSandbox("sb", sandboxReady(metav1.ConditionFalse, agentsv1beta1.SandboxReasonExpired, "Sandbox expired at 12:00")),
			wantReady:   cond{metav1.ConditionFalse, extensionsv1beta1.ClaimReasonSandboxExpired, "Sandbox expired at 12:00"},
			wantSandbox: extensionsv1beta1.SandboxStatus{Name: "sb"},
		},
		{
			name:      "no sandbox and no error: SandboxMissing and the old reference cleared",
			claimMods: []func(*extensionsv1beta1.SandboxClaim){claimFinished},
			wantReady: cond{metav1.ConditionFalse, extensionsv1beta1.ClaimReasonSandboxMissing, "The claim has no sandbox"},
		},
		{
			name:      "a claim error gives its own reason",
			err:       adoption.TemplateNotFound(testNS, testTemplate),
			wantReady: cond{metav1.ConditionFalse, extensionsv1beta1.ClaimReasonTemplateNotFound, "SandboxTemplate default/python not found"},
		},
		{
			name:        "a claim error wins over a Ready sandbox, which stays referenced",
			sb:          newSandbox("sb", ready),
			err:         adoption.InvalidMetadata("bad"),
			wantReady:   cond{metav1.ConditionFalse, extensionsv1beta1.ClaimReasonInvalidMetadata, "bad"},
			wantSandbox: extensionsv1beta1.SandboxStatus{Name: "sb"},
		},
		{
			name:      "any other error: ReconcilerError",
			err:       errors.New("boom"),
			wantReady: cond{metav1.ConditionFalse, extensionsv1beta1.ClaimReasonReconcilerError, "Error seen: boom"},
		},
		{
			name:      "expired: ClaimExpired and no sandbox reference even if it still exists",
			sb:        newSandbox("sb", ready, withPodIPs("10.0.0.1")),
			expired:   true,
			wantReady: cond{metav1.ConditionFalse, extensionsv1beta1.ClaimReasonClaimExpired, "Claim expired; sandbox cleanup initiated"},
		},
		{
			name: "Finished mirrored from the sandbox",
			sb: newSandbox("sb", sandboxReady(metav1.ConditionFalse, agentsv1beta1.SandboxReasonPodSucceeded, "done"),
				withSandboxCond(finished(metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded))),
			wantReady:    cond{metav1.ConditionFalse, agentsv1beta1.SandboxReasonPodSucceeded, "done"},
			wantFinished: &cond{metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded, "pod " + agentsv1beta1.SandboxReasonPodSucceeded},
			wantSandbox:  extensionsv1beta1.SandboxStatus{Name: "sb"},
		},
		{
			name:        "Finished removed when the sandbox has none",
			claimMods:   []func(*extensionsv1beta1.SandboxClaim){claimFinished},
			sb:          newSandbox("sb", ready),
			wantReady:   cond{metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"},
			wantSandbox: extensionsv1beta1.SandboxStatus{Name: "sb"},
		},
		{
			name:         "Finished kept on an expired claim whose sandbox is gone",
			claimMods:    []func(*extensionsv1beta1.SandboxClaim){claimFinished},
			expired:      true,
			wantReady:    cond{metav1.ConditionFalse, extensionsv1beta1.ClaimReasonClaimExpired, "Claim expired; sandbox cleanup initiated"},
			wantFinished: &cond{metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded, "pod " + agentsv1beta1.SandboxReasonPodSucceeded},
		},
		{
			name:         "Finished of an expired claim follows its sandbox while it exists",
			claimMods:    []func(*extensionsv1beta1.SandboxClaim){claimFinished},
			sb:           newSandbox("sb", withSandboxCond(finished(metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodFailed))),
			expired:      true,
			wantReady:    cond{metav1.ConditionFalse, extensionsv1beta1.ClaimReasonClaimExpired, "Claim expired; sandbox cleanup initiated"},
			wantFinished: &cond{metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodFailed, "pod " + agentsv1beta1.SandboxReasonPodFailed},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := newClaim(tc.claimMods...)
			adoption.ComputeStatus(claim, tc.sb, tc.err, tc.expired)

			r := readyOf(t, claim)
			if got := (cond{r.Status, r.Reason, r.Message}); got != tc.wantReady {
				t.Errorf("Ready = %+v, want %+v", got, tc.wantReady)
			}
			if r.ObservedGeneration != testGen {
				t.Errorf("Ready observedGeneration = %d, want %d", r.ObservedGeneration, testGen)
			}
			fin := meta.FindStatusCondition(claim.Status.Conditions, "Finished")
			switch {
			case tc.wantFinished == nil && fin != nil:
				t.Errorf("Finished = %+v, want none", fin)
			case tc.wantFinished != nil && fin == nil:
				t.Errorf("no Finished, want %+v", tc.wantFinished)
			case tc.wantFinished != nil:
				if got := (cond{fin.Status, fin.Reason, fin.Message}); got != *tc.wantFinished {
					t.Errorf("Finished = %+v, want %+v", got, *tc.wantFinished)
				}
				if fin.ObservedGeneration != testGen {
					t.Errorf("Finished observedGeneration = %d, want the claim's %d", fin.ObservedGeneration, testGen)
				}
				if !fin.LastTransitionTime.Equal(&finishedAt) {
					t.Errorf("Finished lastTransitionTime = %v, want the sandbox's %v (the TTL counts from it)", fin.LastTransitionTime, finishedAt)
				}
			}
			if len(claim.Status.Conditions) != 1+btoi(fin != nil) {
				t.Errorf("conditions = %+v, want only Ready and Finished", claim.Status.Conditions)
			}
			if !apiequality.Semantic.DeepEqual(claim.Status.SandboxStatus, tc.wantSandbox) {
				t.Errorf("status.sandbox = %+v, want %+v", claim.Status.SandboxStatus, tc.wantSandbox)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestComputeStatusKeepsTransitionTime: an unchanged Ready keeps its transition time, a changed
// one moves it.
func TestComputeStatusKeepsTransitionTime(t *testing.T) {
	old := metav1.NewTime(testNow.Add(-time.Hour))
	claim := newClaim(withClaimStatus(extensionsv1beta1.SandboxClaimStatus{Conditions: []metav1.Condition{{
		Type: "Ready", Status: metav1.ConditionFalse, Reason: extensionsv1beta1.ClaimReasonSandboxNotReady,
		Message: "Sandbox sb reports no readiness yet", ObservedGeneration: testGen, LastTransitionTime: old,
	}}}))
	adoption.ComputeStatus(claim, newSandbox("sb"), nil, false)
	if r := readyOf(t, claim); !r.LastTransitionTime.Equal(&old) {
		t.Errorf("unchanged Ready moved its transition time to %v", r.LastTransitionTime)
	}
	adoption.ComputeStatus(claim, newSandbox("sb", sandboxReady(metav1.ConditionTrue, "DependenciesReady", "ok")), nil, false)
	if r := readyOf(t, claim); r.LastTransitionTime.Equal(&old) {
		t.Errorf("Ready turned True but kept the old transition time")
	}
}

// TestSyncStatusSteadyState: after a sync's writes reach the caches, the next sync with nothing
// changed writes nothing and records no event.
func TestSyncStatusSteadyState(t *testing.T) {
	cases := []struct {
		name  string
		setup func(f *fixture)
	}{
		{name: "cold sandbox", setup: func(f *fixture) {
			f.add(newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone)))
			f.add(newTemplate())
		}},
		{name: "adopted member", setup: func(f *fixture) {
			f.add(newClaim())
			f.add(newTemplate())
			m := warmMember("m1", testPool)
			f.add(m)
			f.warm(m)
		}},
		{name: "template missing", setup: func(f *fixture) {
			f.add(newClaim())
		}},
		{name: "claim name taken", setup: func(f *fixture) {
			f.add(newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone)))
			f.add(newTemplate())
			f.add(newSandbox(testClaim, ownedByClaim("other", "other-uid")))
		}},
		{name: "retained after expiry", setup: func(f *fixture) {
			f.add(newClaim(withLifecycle(ptr.To(-time.Minute), nil, nil)))
			f.add(newTemplate())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.setup(f)
			f.mustSync(testClaim)
			if len(f.statusWrites()) != 1 {
				t.Fatalf("first sync wrote %q, want one status write", f.writes())
			}
			f.applyWrites()
			f.mustSync(testClaim)
			if w := f.writes(); len(w) != 0 {
				t.Errorf("second sync wrote %q, want nothing", w)
			}
			if ev := f.events(); len(ev) != 0 {
				t.Errorf("second sync recorded %q, want no event", ev)
			}
		})
	}
}

// applyWrites makes the caches hold what the recorded writes made, as the informers would once
// they saw the events, and forgets the actions and events.
func (f *fixture) applyWrites() {
	f.t.Helper()
	for _, sb := range f.createdSandboxes() {
		f.addCache(sb)
	}
	for _, sb := range f.updatedSandboxes() {
		f.updateCache(sb)
	}
	for name := range f.deletes("sandboxes") {
		f.deleteCache(newSandbox(name))
	}
	// A status write follows the claim's metadata writes of the same sync and carries them.
	for _, c := range f.updatedClaims() {
		f.updateCache(c)
	}
	if ws := f.statusWrites(); len(ws) > 0 {
		f.updateCache(ws[len(ws)-1])
	}
	f.reset()
}

// claimedSandbox is a copy of sb as the sandbox controller would have it for claim: with the pod
// metadata the claim wants, so that only the status is at stake.
func (f *fixture) claimedSandbox(claim *extensionsv1beta1.SandboxClaim, sb *agentsv1beta1.Sandbox) *agentsv1beta1.Sandbox {
	f.t.Helper()
	sb = sb.DeepCopy()
	want, err := adoption.DesiredPodMetadata(claim, newTemplate(), nil)
	f.must(err)
	sb.Spec.PodTemplate.ObjectMeta = want
	return sb
}

// TestSyncStatusFollowsSandbox: the claim's status follows the sandbox's changes one write each.
func TestSyncStatusFollowsSandbox(t *testing.T) {
	mine := ownedByClaim(testClaim, testClaimUID)
	steps := []struct {
		name       string
		sb         *agentsv1beta1.Sandbox
		generation int64
		wantWrite  bool
		wantReady  [2]string
		wantFin    bool
		wantIPs    []string
	}{
		{name: "created, no readiness", sb: newSandbox(testClaim, mine), wantWrite: true,
			wantReady: [2]string{"False", extensionsv1beta1.ClaimReasonSandboxNotReady}},
		{name: "becomes Ready with an IP", sb: newSandbox(testClaim, mine, sandboxReady("True", "DependenciesReady", "Pod is Ready"), withPodIPs("10.0.0.5")),
			wantWrite: true, wantReady: [2]string{"True", "DependenciesReady"}, wantIPs: []string{"10.0.0.5"}},
		{name: "unchanged", sb: newSandbox(testClaim, mine, sandboxReady("True", "DependenciesReady", "Pod is Ready"), withPodIPs("10.0.0.5")),
			wantReady: [2]string{"True", "DependenciesReady"}, wantIPs: []string{"10.0.0.5"}},
		{name: "claim spec changed: observedGeneration moves", generation: testGen + 1,
			sb:        newSandbox(testClaim, mine, sandboxReady("True", "DependenciesReady", "Pod is Ready"), withPodIPs("10.0.0.5")),
			wantWrite: true, wantReady: [2]string{"True", "DependenciesReady"}, wantIPs: []string{"10.0.0.5"}},
		{name: "finishes", sb: newSandbox(testClaim, mine, sandboxReady("False", "PodSucceeded", "done"),
			withSandboxCond(finished("True", agentsv1beta1.SandboxReasonPodSucceeded))),
			wantWrite: true, wantReady: [2]string{"False", "PodSucceeded"}, wantFin: true},
		{name: "Finished gone from the sandbox", sb: newSandbox(testClaim, mine, sandboxReady("False", "DependenciesNotReady", "restarting")),
			wantWrite: true, wantReady: [2]string{"False", "DependenciesNotReady"}},
	}
	claim := newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone), withClaimLabel(extensionsv1beta1.ClaimSandboxNameLabel, testClaim))
	f := newFixture(t, claim, newTemplate())
	f.addAPI(steps[0].sb)
	for i, st := range steps {
		sb := f.claimedSandbox(claim, st.sb)
		if i == 0 {
			f.addCache(sb)
		} else {
			f.updateCache(sb)
		}
		if st.generation != 0 {
			cached, err := f.c.claims.SandboxClaims(testNS).Get(testClaim)
			f.must(err)
			cached = cached.DeepCopy()
			cached.Generation = st.generation
			f.updateCache(cached)
		}
		f.mustSync(testClaim)
		ws := f.statusWrites()
		if st.wantWrite != (len(ws) == 1) || len(f.writes()) != len(ws) {
			t.Fatalf("step %q: writes %q, want a status write: %v and nothing else", st.name, f.writes(), st.wantWrite)
		}
		if !st.wantWrite {
			f.reset()
			continue
		}
		got := ws[0]
		checkReady(t, got, metav1.ConditionStatus(st.wantReady[0]), st.wantReady[1], "")
		if fin := meta.FindStatusCondition(got.Status.Conditions, "Finished"); (fin != nil) != st.wantFin {
			t.Errorf("step %q: Finished = %+v, want present: %v", st.name, fin, st.wantFin)
		}
		if got.Status.SandboxStatus.Name != testClaim || !slices.Equal(got.Status.SandboxStatus.PodIPs, st.wantIPs) {
			t.Errorf("step %q: status.sandbox = %+v, want %s with %v", st.name, got.Status.SandboxStatus, testClaim, st.wantIPs)
		}
		f.applyWrites()
	}
}

func TestTimeLeft(t *testing.T) {
	in := func(d time.Duration) *time.Duration { return &d }
	finishedAgo := func(d time.Duration, status metav1.ConditionStatus) func(*extensionsv1beta1.SandboxClaim) {
		return func(c *extensionsv1beta1.SandboxClaim) {
			c.Status.Conditions = []metav1.Condition{{Type: "Finished", Status: status, Reason: "PodSucceeded",
				LastTransitionTime: metav1.NewTime(testNow.Add(-d))}}
		}
	}
	cases := []struct {
		name        string
		mods        []func(*extensionsv1beta1.SandboxClaim)
		wantExpired bool
		wantLeft    time.Duration
	}{
		{name: "no lifecycle"},
		{name: "only a policy", mods: mods(withLifecycle(nil, nil, ptr.To(extensionsv1beta1.ShutdownPolicyDelete)))},
		{name: "shutdownTime in the future", mods: mods(withLifecycle(in(5*time.Minute), nil, nil)), wantLeft: 5 * time.Minute},
		{name: "shutdownTime now", mods: mods(withLifecycle(in(0), nil, nil)), wantExpired: true},
		{name: "shutdownTime past", mods: mods(withLifecycle(in(-time.Second), nil, nil)), wantExpired: true},
		{name: "TTL without Finished", mods: mods(withLifecycle(nil, ptr.To[int32](120), nil))},
		{name: "TTL with Finished=False", mods: mods(withLifecycle(nil, ptr.To[int32](120), nil), finishedAgo(30*time.Second, metav1.ConditionFalse))},
		{name: "TTL running after Finished", mods: mods(withLifecycle(nil, ptr.To[int32](120), nil), finishedAgo(30*time.Second, metav1.ConditionTrue)), wantLeft: 90 * time.Second},
		{name: "TTL over after Finished", mods: mods(withLifecycle(nil, ptr.To[int32](10), nil), finishedAgo(30*time.Second, metav1.ConditionTrue)), wantExpired: true},
		{name: "TTL 0 expires on finish", mods: mods(withLifecycle(nil, ptr.To[int32](0), nil), finishedAgo(0, metav1.ConditionTrue)), wantExpired: true},
		{name: "Finished without TTL does not expire", mods: mods(withLifecycle(in(time.Hour), nil, nil), finishedAgo(2*time.Hour, metav1.ConditionTrue)), wantLeft: time.Hour},
		{name: "earlier shutdownTime wins over TTL", mods: mods(withLifecycle(in(5*time.Second), ptr.To[int32](120), nil), finishedAgo(30*time.Second, metav1.ConditionTrue)), wantLeft: 5 * time.Second},
		{name: "earlier TTL wins over shutdownTime", mods: mods(withLifecycle(in(5*time.Minute), ptr.To[int32](120), nil), finishedAgo(30*time.Second, metav1.ConditionTrue)), wantLeft: 90 * time.Second},
		{name: "past shutdownTime expires despite a running TTL", mods: mods(withLifecycle(in(-time.Minute), ptr.To[int32](120), nil), finishedAgo(30*time.Second, metav1.ConditionTrue)), wantExpired: true},
		{name: "shutdownTime while the TTL waits for Finished", mods: mods(withLifecycle(in(5*time.Minute), ptr.To[int32](120), nil)), wantLeft: 5 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expired, left := adoption.TimeLeft(testNow, newClaim(tc.mods...))
			if expired != tc.wantExpired || left != tc.wantLeft {
				t.Errorf("timeLeft = %v, %v; want %v, %v", expired, left, tc.wantExpired, tc.wantLeft)
			}
		})
	}
}

func mods(m ...func(*extensionsv1beta1.SandboxClaim)) []func(*extensionsv1beta1.SandboxClaim) {
	return m
}

// TestSyncRequeuesAtExpiry: an active claim is looked at again when it expires, and at once when
// the Finished condition mirrored now has already used up its TTL.
func TestSyncRequeuesAtExpiry(t *testing.T) {
	mine := ownedByClaim(testClaim, testClaimUID)
	cases := []struct {
		name      string
		claim     *extensionsv1beta1.SandboxClaim
		sb        *agentsv1beta1.Sandbox
		wantAfter time.Duration // 0: no delayed add
		wantNow   bool
	}{
		{name: "no lifecycle: no timer", claim: newClaim(), sb: newSandbox(testClaim, mine)},
		{name: "shutdownTime in an hour", claim: newClaim(withLifecycle(ptr.To(time.Hour), nil, nil)), sb: newSandbox(testClaim, mine), wantAfter: time.Hour},
		{
			name:  "Finished mirrored now starts the TTL",
			claim: newClaim(withLifecycle(nil, ptr.To[int32](120), nil)),
			sb:    newSandbox(testClaim, mine, withSandboxCond(finished("True", "PodSucceeded"))), wantAfter: 90 * time.Second,
		},
		{
			name:  "Finished mirrored now has already used up the TTL",
			claim: newClaim(withLifecycle(nil, ptr.To[int32](10), nil)),
			sb:    newSandbox(testClaim, mine, withSandboxCond(finished("True", "PodSucceeded"))), wantNow: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.claim, newTemplate(), tc.sb)
			f.mustSync(testClaim)
			key := testNS + "/" + testClaim
			if got, ok := f.queue.after[key]; ok != (tc.wantAfter != 0) || got != tc.wantAfter {
				t.Errorf("delayed requeue = %v (set: %v), want %v", got, ok, tc.wantAfter)
			}
			if got := f.queue.Len(); got != btoi(tc.wantNow) {
				t.Errorf("immediate requeues = %d, want %d", got, btoi(tc.wantNow))
			}
		})
	}
}

// TestReadyObservedOnce: the claim startup latency is observed once per claim, by the status write
// that made it Ready, not again by a sync from a cache that has not seen that write yet.
func TestReadyObservedOnce(t *testing.T) {
	metrics.Register()
	f := newFixture(t)
	// The API answers a status write with a new resourceVersion, as the server does.
	f.client.PrependReactor("update", "sandboxclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		claim := a.(clienttesting.UpdateAction).GetObject().(*extensionsv1beta1.SandboxClaim).DeepCopy()
		claim.ResourceVersion = "written"
		return true, claim, f.client.Tracker().Update(a.GetResource(), claim, a.GetNamespace())
	})
	f.add(newClaim())
	f.add(newTemplate())
	m := warmMember("m1", testPool)
	f.add(m)
	f.warm(m)
	observed := func() uint64 {
		n, err := testutil.GetHistogramMetricCount(metrics.ClaimStartupLatency.WithLabelValues(metrics.LaunchWarm, testTemplate))
		f.must(err)
		return n
	}
	before := observed()

	f.mustSync(testClaim)
	if got := observed() - before; got != 1 {
		t.Fatalf("after the adoption: %d observations, want 1", got)
	}
	// The sandbox cache shows the adoption; the claim cache does not show the Ready status yet.
	for _, sb := range f.updatedSandboxes() {
		f.updateCache(sb)
	}
	f.reset()
	f.mustSync(testClaim)
	if n := len(f.statusWrites()); n != 0 {
		t.Errorf("sync from the stale claim cache wrote the status %d times, want none", n)
	}
	if got := observed() - before; got != 1 {
		t.Errorf("after a sync from the stale claim cache: %d observations, want 1", got)
	}
}

// TestReadyAgainNotObserved: a claim whose sandbox turns Ready, then not Ready (its pod restarted),
// then Ready again has one startup, not two: the second would measure the claim's age.
func TestReadyAgainNotObserved(t *testing.T) {
	metrics.Register()
	mine := ownedByClaim(testClaim, testClaimUID)
	claim := newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone), withClaimLabel(extensionsv1beta1.ClaimSandboxNameLabel, testClaim))
	f := newFixture(t, claim, newTemplate())
	observed := func() uint64 {
		n, err := testutil.GetHistogramMetricCount(metrics.ClaimStartupLatency.WithLabelValues(metrics.LaunchCold, testTemplate))
		f.must(err)
		return n
	}
	before := observed()
	ready := sandboxReady("True", "DependenciesReady", "Pod is Ready")
	restarting := sandboxReady("False", "DependenciesNotReady", "Pod is Pending")
	for i, step := range []struct {
		name string
		sb   *agentsv1beta1.Sandbox
		want uint64
	}{
		{"starting", newSandbox(testClaim, mine, restarting), 0},
		{"Ready", newSandbox(testClaim, mine, ready, withPodIPs("10.0.0.5")), 1},
		{"its pod restarted", newSandbox(testClaim, mine, restarting), 1},
		{"Ready again", newSandbox(testClaim, mine, ready, withPodIPs("10.0.0.6")), 1},
	} {
		sb := f.claimedSandbox(claim, step.sb)
		if i == 0 {
			f.add(sb)
		} else {
			f.updateCache(sb)
		}
		f.mustSync(testClaim)
		if n := len(f.statusWrites()); n != 1 {
			t.Fatalf("step %q: %d status writes, want 1", step.name, n)
		}
		if got := observed() - before; got != step.want {
			t.Fatalf("step %q: %d startups observed, want %d", step.name, got, step.want)
		}
		f.applyWrites()
	}
}
