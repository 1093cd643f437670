// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/adoption"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// TestSandboxNameLabel: the label names the sandbox the claim controls while it is active, and
// nothing else.
func TestSandboxNameLabel(t *testing.T) {
	mine := ownedByClaim(testClaim, testClaimUID)
	other := ownedByClaim("other-claim", "other-claim-uid")
	labelled := func(v string) func(*extensionsv1beta1.SandboxClaim) {
		return withClaimLabel(extensionsv1beta1.ClaimSandboxNameLabel, v)
	}
	long := strings.Repeat("a", 64)
	cases := []struct {
		name      string
		claim     *extensionsv1beta1.SandboxClaim
		sbName    string
		sbMods    []func(*agentsv1beta1.Sandbox)
		noSandbox bool
		err       error
		expired   bool
		want      string
		wantWrite bool
	}{
		{name: "bound, no label yet", claim: newClaim(), sbName: "pool-x1", sbMods: []func(*agentsv1beta1.Sandbox){mine}, want: "pool-x1", wantWrite: true},
		{name: "bound, label in place", claim: newClaim(labelled("pool-x1")), sbName: "pool-x1", sbMods: []func(*agentsv1beta1.Sandbox){mine}, want: "pool-x1"},
		{name: "a label set by the tenant is corrected", claim: newClaim(labelled("someone-else")), sbName: "pool-x1", sbMods: []func(*agentsv1beta1.Sandbox){mine}, want: "pool-x1", wantWrite: true},
		{name: "a sandbox the claim does not control is not named", claim: newClaim(labelled("theirs")), sbName: "theirs", sbMods: []func(*agentsv1beta1.Sandbox){other}, want: "", wantWrite: true},
		{name: "a name too long for a label value is not recorded", claim: newClaim(), sbName: long, sbMods: []func(*agentsv1beta1.Sandbox){mine}, want: ""},
		{name: "expired: the sandbox is being deleted", claim: newClaim(labelled("pool-x1")), sbName: "pool-x1", sbMods: []func(*agentsv1beta1.Sandbox){mine}, expired: true, want: "", wantWrite: true},
		{name: "no sandbox and no error", claim: newClaim(labelled("gone")), noSandbox: true, want: "", wantWrite: true},
		{name: "a failed sync leaves the label", claim: newClaim(labelled("pool-x1")), noSandbox: true, err: errors.New("boom")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sb *agentsv1beta1.Sandbox
			if !tc.noSandbox {
				sb = newSandbox(tc.sbName, tc.sbMods...)
			}
			got, write := adoption.SandboxNameLabel(tc.claim, sb, tc.err, tc.expired)
			if write != tc.wantWrite || (write && got != tc.want) {
				t.Errorf("sandboxNameLabel = %q, %v; want %q, %v", got, write, tc.want, tc.wantWrite)
			}
		})
	}
}

// TestSyncLabelsClaimWithItsOwnSandbox: a claim whose label a tenant pointed at another claim's
// sandbox gets its own sandbox, and the label then names that one; the other is left alone.
func TestSyncLabelsClaimWithItsOwnSandbox(t *testing.T) {
	theirs := newSandbox("theirs", ownedByClaim("other-claim", "other-claim-uid"))
	f := newFixture(t, newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone), withClaimLabel(extensionsv1beta1.ClaimSandboxNameLabel, "theirs")), newTemplate(), theirs)
	f.mustSync(testClaim)
	if got, want := f.writes(), []string{"create sandboxes " + testClaim, "update sandboxclaims " + testClaim, "update sandboxclaims/status " + testClaim}; !slices.Equal(got, want) {
		t.Fatalf("writes = %q, want %q", got, want)
	}
	expectSandboxNameLabel(t, f, testClaim)
}
