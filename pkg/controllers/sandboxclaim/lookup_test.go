// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/adoption"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

func TestFindSandboxOrder(t *testing.T) {
	mine := ownedByClaim(testClaim, testClaimUID)
	// A claim of the same name deleted and recreated has another UID.
	predecessor := ownedByClaim(testClaim, "old-claim-uid")
	other := ownedByClaim("other-claim", "other-claim-uid")
	byStatus := withClaimStatus(extensionsv1beta1.SandboxClaimStatus{SandboxStatus: extensionsv1beta1.SandboxStatus{Name: "by-status"}})
	byLabel := withClaimLabel(extensionsv1beta1.ClaimSandboxNameLabel, "by-label")

	cases := []struct {
		name      string
		claimMods []func(*extensionsv1beta1.SandboxClaim)
		sandboxes []*agentsv1beta1.Sandbox
		want      string   // name of the sandbox found; "" for none
		wantErr   []string // substrings of a ReconcilerError
	}{
		{
			name:      "status name first",
			claimMods: []func(*extensionsv1beta1.SandboxClaim){byStatus, byLabel},
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox("by-status", mine), newSandbox("by-label", mine), newSandbox(testClaim, mine)},
			want:      "by-status",
		},
		{
			name:      "assignment label when the status names nothing",
			claimMods: []func(*extensionsv1beta1.SandboxClaim){byLabel},
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox("by-label", mine), newSandbox(testClaim, mine)},
			want:      "by-label",
		},
		{
			name:      "assignment label when the status names a sandbox that is gone",
			claimMods: []func(*extensionsv1beta1.SandboxClaim){byStatus, byLabel},
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox("by-label", mine), newSandbox("by-index", mine)},
			want:      "by-label",
		},
		{
			name:      "assignment label when the status names a sandbox of another claim",
			claimMods: []func(*extensionsv1beta1.SandboxClaim){byStatus, byLabel},
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox("by-status", other), newSandbox("by-label", mine), newSandbox("by-index", mine)},
			want:      "by-label",
		},
		{
			name:      "controller index when status and label name foreign sandboxes",
			claimMods: []func(*extensionsv1beta1.SandboxClaim){byStatus, byLabel},
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox("by-status", other), newSandbox("by-label"), newSandbox("by-index", mine)},
			want:      "by-index",
		},
		{
			name:      "controller index finds an adopted sandbox before the status says so",
			sandboxes: []*agentsv1beta1.Sandbox{warmMember("pool-x1", "", mine)},
			want:      "pool-x1",
		},
		{
			name:      "claim name when nothing else points anywhere",
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox(testClaim, mine)},
			want:      testClaim,
		},
		{
			name:      "a foreign sandbox named in the status is not used",
			claimMods: []func(*extensionsv1beta1.SandboxClaim){byStatus},
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox("by-status", other)},
			want:      "",
		},
		{
			name:      "an unowned sandbox named by the label is not used",
			claimMods: []func(*extensionsv1beta1.SandboxClaim){byLabel},
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox("by-label")},
			want:      "",
		},
		{
			name:      "a sandbox of another claim named by the label (a tenant can write it) is not used",
			claimMods: []func(*extensionsv1beta1.SandboxClaim){byLabel},
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox("by-label", other)},
			want:      "",
		},
		{
			name:      "a sandbox of another claim in the index of nobody",
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox("elsewhere", other)},
			want:      "",
		},
		{
			name: "nothing at all",
			want: "",
		},
		{
			name:      "the claim's name taken by another claim's sandbox",
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox(testClaim, other)},
			wantErr:   []string{"a Sandbox named " + testClaim + " exists and is not controlled by this claim"},
		},
		{
			name:      "the claim's name taken by the sandbox of a predecessor with the same name",
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox(testClaim, predecessor)},
			wantErr:   []string{"not controlled by this claim"},
		},
		{
			name:      "the claim's name taken by an unowned sandbox",
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox(testClaim)},
			wantErr:   []string{"not controlled by this claim"},
		},
		{
			name:      "the claim's name taken by a warm member",
			sandboxes: []*agentsv1beta1.Sandbox{warmMember(testClaim, testPool)},
			wantErr:   []string{"belongs to a warm pool"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := newClaim(tc.claimMods...)
			var objs []runtime.Object
			for _, sb := range tc.sandboxes {
				objs = append(objs, sb)
			}
			f := newFixture(t, objs...)
			got, err := f.c.findSandbox(context.Background(), claim)
			if tc.wantErr != nil {
				var ce *adoption.ClaimError
				if !errors.As(err, &ce) || ce.Reason != extensionsv1beta1.ClaimReasonReconcilerError {
					t.Fatalf("findSandbox = %v, %v; want a ReconcilerError", got, err)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("findSandbox: %v", err)
			}
			gotName := ""
			if got != nil {
				gotName = got.Name
			}
			if gotName != tc.want {
				t.Errorf("findSandbox found %q, want %q", gotName, tc.want)
			}
		})
	}
}

// TestSyncLookup runs whole syncs over the lookup outcomes: a sandbox found is kept, a foreign one
// is never used and a foreign one holding the claim's name blocks creation.
func TestSyncLookup(t *testing.T) {
	other := ownedByClaim("other-claim", "other-claim-uid")
	cases := []struct {
		name       string
		claim      *extensionsv1beta1.SandboxClaim
		sandboxes  []*agentsv1beta1.Sandbox
		wantWrites []string
		wantReady  [3]string // status, reason, message (prefix with *)
		wantName   string
	}{
		{
			name: "a foreign sandbox in the status is replaced by a cold one named after the claim",
			claim: newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone),
				withClaimStatus(extensionsv1beta1.SandboxClaimStatus{SandboxStatus: extensionsv1beta1.SandboxStatus{Name: "foreign"}})),
			sandboxes:  []*agentsv1beta1.Sandbox{newSandbox("foreign", other)},
			wantWrites: []string{"create sandboxes " + testClaim, "update sandboxclaims " + testClaim, "update sandboxclaims/status " + testClaim},
			wantReady:  [3]string{"False", extensionsv1beta1.ClaimReasonSandboxNotReady, "Sandbox " + testClaim + " reports no readiness yet"},
			wantName:   testClaim,
		},
		{
			name:       "a sandbox of another claim with the claim's name: ReconcilerError and no create",
			claim:      newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone)),
			sandboxes:  []*agentsv1beta1.Sandbox{newSandbox(testClaim, other)},
			wantWrites: []string{"update sandboxclaims/status " + testClaim},
			wantReady:  [3]string{"False", extensionsv1beta1.ClaimReasonReconcilerError, "a Sandbox named " + testClaim + " exists and is not controlled by this claim"},
		},
		{
			name:       "a warm member with the claim's name: ReconcilerError, neither adopted nor replaced",
			claim:      newClaim(),
			sandboxes:  []*agentsv1beta1.Sandbox{warmMember(testClaim, testPool)},
			wantWrites: []string{"update sandboxclaims/status " + testClaim},
			wantReady:  [3]string{"False", extensionsv1beta1.ClaimReasonReconcilerError, "a Sandbox named " + testClaim + " exists and belongs to a warm pool"},
		},
		{
			name:  "an owned sandbox found by the index is mirrored without writes to it, and named in the claim's label",
			claim: newClaim(),
			sandboxes: []*agentsv1beta1.Sandbox{newSandbox("adopted", ownedByClaim(testClaim, testClaimUID),
				sandboxReady(metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"),
				func(sb *agentsv1beta1.Sandbox) {
					sb.Spec.PodTemplate.ObjectMeta = agentsv1beta1.PodMetadata{
						Labels: map[string]string{"app": "python", "tier": "sandbox",
							extensionsv1beta1.SandboxIDLabel: string(testClaimUID), extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash},
						Annotations: map[string]string{"team": "ml"},
					}
				})},
			wantWrites: []string{"update sandboxclaims " + testClaim, "update sandboxclaims/status " + testClaim},
			wantReady:  [3]string{"True", agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"},
			wantName:   "adopted",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.claim, newTemplate())
			for _, sb := range tc.sandboxes {
				f.add(sb)
				f.warm(sb)
			}
			if err := f.sync(testClaim); err != nil {
				t.Fatalf("sync: %v (a claim error the user must fix is not retried)", err)
			}
			if got := f.writes(); strings.Join(got, "\n") != strings.Join(tc.wantWrites, "\n") {
				t.Errorf("writes = %q, want %q", got, tc.wantWrites)
			}
			st := f.lastStatus()
			checkReady(t, st, metav1.ConditionStatus(tc.wantReady[0]), tc.wantReady[1], tc.wantReady[2])
			if st.Status.SandboxStatus.Name != tc.wantName {
				t.Errorf("status.sandbox.name = %q, want %q", st.Status.SandboxStatus.Name, tc.wantName)
			}
		})
	}
}

// TestFindSandboxFromCaughtUpCache: with claims and sandboxes in one etcd, a status naming a
// sandbox the cache does not show as the claim's is settled by how far the sandbox cache got
// against the claim's resourceVersion, without a read from the API; otherwise the API is asked.
func TestFindSandboxFromCaughtUpCache(t *testing.T) {
	mine := ownedByClaim(testClaim, testClaimUID)
	byStatus := withClaimStatus(extensionsv1beta1.SandboxClaimStatus{SandboxStatus: extensionsv1beta1.SandboxStatus{Name: "by-status"}})
	claimAt := func(rv string) func(*extensionsv1beta1.SandboxClaim) {
		return func(c *extensionsv1beta1.SandboxClaim) { c.ResourceVersion = rv }
	}
	cases := []struct {
		name            string
		sharedRevisions bool
		claimRV         string
		cacheRV         string // of the last sandbox the cache saw: how far it got
		inAPI           bool   // the named sandbox, the claim's, is in the API but not the cache
		waited          time.Duration
		wantBehind      bool
		wantFound       bool
		wantAPIReads    int
	}{
		{name: "cache behind the claim: wait for the sandbox's event", sharedRevisions: true, claimRV: "20", cacheRV: "10", inAPI: true, wantBehind: true},
		{name: "cache behind the claim, waited a while: wait on", sharedRevisions: true, claimRV: "20", cacheRV: "10", inAPI: true, waited: sandboxCacheRetry - time.Millisecond, wantBehind: true},
		{name: "cache still behind after the retry: the API is asked", sharedRevisions: true, claimRV: "20", cacheRV: "10", inAPI: true, waited: sandboxCacheRetry, wantFound: true, wantAPIReads: 1},
		{name: "cache caught up: the cache's answer stands", sharedRevisions: true, claimRV: "20", cacheRV: "20"},
		{name: "cache ahead of the claim: the cache's answer stands", sharedRevisions: true, claimRV: "20", cacheRV: "35"},
		{name: "different etcd clusters: the API is asked", claimRV: "20", cacheRV: "10", inAPI: true, wantFound: true, wantAPIReads: 1},
		{name: "a claim without a resourceVersion: the API is asked", sharedRevisions: true, cacheRV: "10", inAPI: true, wantFound: true, wantAPIReads: 1},
		{name: "a cache that does not say how far it got: the API is asked", sharedRevisions: true, claimRV: "20", inAPI: true, wantFound: true, wantAPIReads: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.c.sharedRevisions = tc.sharedRevisions
			if tc.inAPI {
				f.addAPI(newSandbox("by-status", mine))
			}
			// An unrelated sandbox moves the cache to cacheRV.
			f.addCache(newSandbox("unrelated", withRV(tc.cacheRV)))
			claim := newClaim(byStatus, claimAt(tc.claimRV))
			if tc.waited > 0 {
				f.c.cacheWaitSince.Store(claim.UID, testNow.Add(-tc.waited))
			}
			f.reset()

			got, err := f.c.findSandbox(context.Background(), claim)
			if behind := errors.Is(err, errSandboxCacheBehind); behind != tc.wantBehind {
				t.Fatalf("findSandbox error = %v, want the cache reported behind: %v", err, tc.wantBehind)
			}
			if err != nil && !tc.wantBehind {
				t.Fatalf("findSandbox: %v", err)
			}
			if (got != nil) != tc.wantFound {
				t.Errorf("findSandbox found %v, want found: %v", got, tc.wantFound)
			}
			if reads := len(f.actionsOf("get", "sandboxes")); reads != tc.wantAPIReads {
				t.Errorf("findSandbox read %d sandboxes from the API, want %d", reads, tc.wantAPIReads)
			}
		})
	}
}
