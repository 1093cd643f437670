// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package claimbinding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/claimtest"
)

// ---- binding fixtures ----

// creatingClaim is a claim as the registry hands it to the binder: UID, generation, creation
// time and finalizer set, not stored yet (no resourceVersion) and no status.
func creatingClaim(mods ...func(*extensionsv1beta1.SandboxClaim)) *extensionsv1beta1.SandboxClaim {
	return newClaim(append([]func(*extensionsv1beta1.SandboxClaim){func(c *extensionsv1beta1.SandboxClaim) {
		c.ResourceVersion = ""
	}}, mods...)...)
}

// commitCall is what one commit was handed, copied at the time of the call.
type commitCall struct {
	claim              *extensionsv1beta1.SandboxClaim
	candidate, adopted *agentsv1beta1.Sandbox
}

// commitSpy stands in for the registry's transaction: it records its calls and answers fail's
// error for the n-th call (from 0), nil when fail is nil or has none.
type commitSpy struct {
	calls []commitCall
	fail  func(n int, candidate *agentsv1beta1.Sandbox) error
}

func (s *commitSpy) commit(_ context.Context, claim *extensionsv1beta1.SandboxClaim, candidate, adopted *agentsv1beta1.Sandbox) error {
	s.calls = append(s.calls, commitCall{claim: claim.DeepCopy(), candidate: candidate.DeepCopy(), adopted: adopted.DeepCopy()})
	if s.fail != nil {
		return s.fail(len(s.calls)-1, candidate)
	}
	return nil
}

// candidates are the names of the candidates commit was handed, in order.
func (s *commitSpy) candidates() []string {
	var out []string
	for _, c := range s.calls {
		out = append(out, c.candidate.Name)
	}
	return out
}

func (f *fixture) bind(claim *extensionsv1beta1.SandboxClaim, spy *commitSpy) (bool, error) {
	return f.b.bindWith(context.Background(), claim, spy.commit)
}

// queued are the names waiting in the test bucket, in order; the queue is left as it was.
func (f *fixture) queued() []string {
	var keys, out []string
	for {
		k, ok := f.chooser.Queue().Pop(testBucket, nil)
		if !ok {
			break
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		f.chooser.Queue().Add(testBucket, k)
		out = append(out, strings.TrimPrefix(k, testNS+"/"))
	}
	return out
}

// warmCreations is the count of warm claim creations from pool, of members already Ready.
func warmCreations(t *testing.T, pool string) float64 {
	t.Helper()
	return claimCreations(t, metrics.LaunchWarm, pool, "ready")
}

// claimCreations is the count of claim creations with the given labels, by their seed names.
var claimCreations = claimtest.ClaimCreations

// warmStartups is the number of warm claim startup latencies observed.
func warmStartups(t *testing.T) uint64 {
	t.Helper()
	n, err := testutil.GetHistogramMetricCount(metrics.ClaimStartupLatency.WithLabelValues(metrics.LaunchWarm, testTemplate))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ---- tests ----

// TestBindPlainClaim: a plain claim and one Ready member: commit is called once with the
// claim Ready on the member and the member rewritten as the claim's; nothing is written by the
// controller itself, the cache is untouched, the adoption is recorded.
func TestBindPlainClaim(t *testing.T) {
	metrics.Register()
	member := warmMember("fast-pool-abcde", testPool, withRV("42"), withPodIPs("10.0.0.9", "fd00::9"))
	f := newBindFixture(t, newTemplate(), member)
	f.warm(member)
	claim := creatingClaim(withExtraMeta(map[string]string{"owner": "alice"}, map[string]string{"cost-center": "1234"}))
	given := claim.DeepCopy()
	creationsBefore, startupsBefore := warmCreations(t, testPool), warmStartups(t)

	spy := &commitSpy{}
	ok, err := f.bind(claim, spy)
	if !ok || err != nil {
		t.Fatalf("bindWith = %v, %v; want true, nil", ok, err)
	}
	if len(spy.calls) != 1 {
		t.Fatalf("commit called %d times (%q), want once", len(spy.calls), spy.candidates())
	}
	call := spy.calls[0]

	// The candidate is the member as cached: its resourceVersion is what the transaction checks.
	if !apiequality.Semantic.DeepEqual(call.candidate, member) {
		t.Errorf("candidate = %+v, want the cached member %+v", call.candidate, member)
	}

	adopted := call.adopted
	if adopted.Name != member.Name || adopted.UID != member.UID || adopted.ResourceVersion != "42" {
		t.Errorf("adopted = %s uid %s rv %s, want the member %s uid %s rv 42", adopted.Name, adopted.UID, adopted.ResourceVersion, member.Name, member.UID)
	}
	if !metav1.IsControlledBy(adopted, claim) {
		t.Errorf("adopted sandbox is controlled by %+v, want the claim", metav1.GetControllerOf(adopted))
	}
	if want := []metav1.OwnerReference{claimOwnerRef(testClaim, testClaimUID)}; !apiequality.Semantic.DeepEqual(adopted.OwnerReferences, want) {
		t.Errorf("owner references = %+v, want only the claim %+v", adopted.OwnerReferences, want)
	}
	for _, k := range []string{extensionsv1beta1.WarmPoolSandboxLabel, agentsv1beta1.SandboxPodTemplateHashLabel} {
		if v, ok := adopted.Labels[k]; ok {
			t.Errorf("adopted sandbox keeps warm-pool label %s=%s", k, v)
		}
	}
	if got := adopted.Labels[extensionsv1beta1.SandboxIDLabel]; got != string(testClaimUID) {
		t.Errorf("claim-uid label = %q, want %q", got, testClaimUID)
	}
	if got := adopted.Labels[extensionsv1beta1.SandboxTemplateRefHashLabel]; got != templateHash {
		t.Errorf("template-ref-hash label = %q, want %q", got, templateHash)
	}
	if got := adopted.Annotations[agentsv1beta1.SandboxPodNameAnnotation]; got != member.Name {
		t.Errorf("pod-name annotation = %q, want %q", got, member.Name)
	}
	expectAdoptedPodTemplate(t, adopted, member)

	served := call.claim
	if served.Name != claim.Name || served.UID != claim.UID || !apiequality.Semantic.DeepEqual(served.Spec, claim.Spec) {
		t.Errorf("commit got claim %s/%s with spec %+v, want the claim being created", served.Name, served.UID, served.Spec)
	}
	if served.Status.SandboxStatus.Name != member.Name || !slices.Equal(served.Status.SandboxStatus.PodIPs, []string{"10.0.0.9", "fd00::9"}) {
		t.Errorf("status.sandbox = %+v, want %s with its pod IPs", served.Status.SandboxStatus, member.Name)
	}
	checkReady(t, served, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready")
	if got := served.Labels[extensionsv1beta1.ClaimSandboxNameLabel]; got != member.Name {
		t.Errorf("served claim labels = %v, want %s=%s", served.Labels, extensionsv1beta1.ClaimSandboxNameLabel, member.Name)
	}
	if r := readyOf(t, served); r.ObservedGeneration != testGen {
		t.Errorf("Ready observedGeneration = %d, want the claim's generation %d", r.ObservedGeneration, testGen)
	}

	if !apiequality.Semantic.DeepEqual(claim, given) {
		t.Errorf("bindWith changed the claim it was given: %+v", claim)
	}
	cached, err := f.inf.Agents().V1beta1().Sandboxes().Lister().Sandboxes(testNS).Get(member.Name)
	f.must(err)
	if !apiequality.Semantic.DeepEqual(cached, member) {
		t.Errorf("the cached member changed: %+v", cached)
	}
	events := f.events()
	if len(events) != 1 || !strings.HasPrefix(events[0], "Normal SandboxAdopted ") ||
		!strings.Contains(events[0], member.Name) || !strings.Contains(events[0], "pool "+testPool) {
		t.Errorf("events = %q, want one SandboxAdopted naming %s and pool %s", events, member.Name, testPool)
	}
	if got := warmCreations(t, testPool) - creationsBefore; got != 1 {
		t.Errorf("warm creations counted %v times, want 1", got)
	}
	if got := warmStartups(t) - startupsBefore; got != 1 {
		t.Errorf("warm startup latency observed %d times, want 1", got)
	}
	if q := f.queued(); len(q) != 0 {
		t.Errorf("warm queue holds %q after the binding, want nothing", q)
	}
}

// TestBindCandidates is the matrix of which claims are served and with which member. A
// claim refused keeps every member for the next one: each refusal is followed by a plain claim,
// which must get the member.
func TestBindCandidates(t *testing.T) {
	metrics.Register()
	const otherPool = "other-pool"
	ready := warmMember // shorthand
	past, future, zero := -time.Second, time.Hour, time.Duration(0)
	type bindCase struct {
		name       string
		claim      []func(*extensionsv1beta1.SandboxClaim)
		noTemplate bool
		template   []func(*extensionsv1beta1.SandboxTemplate)
		unsynced   bool
		// queued go through the sandbox handler, in order; forced are put into the bucket
		// directly, as if they had been adoptable when queued; hidden are forced but not cached
		// (deleted since they were queued).
		queued, forced, hidden []*agentsv1beta1.Sandbox
		wantBound              string // the member committed; "" when bindWith reports false
		wantStarting           bool   // the member bound is still starting: the claim is stored not Ready
		wantQueued             []string
		thenPlainGets          string // after a refusal, the member a plain claim then gets
	}
	cases := []bindCase{
		{
			name:      "a plain claim takes the Ready member",
			queued:    []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantBound: "m1",
		},
		{
			name:      "the default policy takes the oldest member of any pool",
			queued:    []*agentsv1beta1.Sandbox{ready("m1", otherPool), ready("m2", testPool)},
			wantBound: "m1", wantQueued: []string{"m2"},
		},
		{
			name:      "an explicit default policy takes a member of the pool",
			claim:     []func(*extensionsv1beta1.SandboxClaim){warmpool(extensionsv1beta1.WarmPoolPolicyDefault)},
			queued:    []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantBound: "m1",
		},
		{
			name:      "a shutdownTime still ahead does not stop it",
			claim:     []func(*extensionsv1beta1.SandboxClaim){withLifecycle(&future, nil, nil)},
			queued:    []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantBound: "m1",
		},
		{
			name:      "pod metadata the template does not set is fine",
			claim:     []func(*extensionsv1beta1.SandboxClaim){withExtraMeta(map[string]string{"owner": "alice", "app": "python"}, nil)},
			queued:    []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantBound: "m1",
		},
		{
			name:       "without the template the member is still taken, as adopt does",
			noTemplate: true,
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantBound:  "m1",
		},

		// Refusals: false, no commit, the member kept.
		{
			name:       "refused while the informers are not synced",
			unsynced:   true,
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantQueued: []string{"m1"}, thenPlainGets: "m1",
		},
		{
			name:       `refused with spec.warmpool "none"`,
			claim:      []func(*extensionsv1beta1.SandboxClaim){warmpool(extensionsv1beta1.WarmPoolPolicyNone)},
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantQueued: []string{"m1"}, thenPlainGets: "m1",
		},
		{
			// Without its own check, "none" would be taken as the name of a pool.
			name:       `refused with spec.warmpool "none" even when a pool is named "none"`,
			claim:      []func(*extensionsv1beta1.SandboxClaim){warmpool(extensionsv1beta1.WarmPoolPolicyNone)},
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool), ready("n1", "none")},
			wantQueued: []string{"m1", "n1"}, thenPlainGets: "m1",
		},
		{
			name:      "spec.env the template allows takes the Ready member",
			claim:     []func(*extensionsv1beta1.SandboxClaim){withEnv(extensionsv1beta1.EnvVar{Name: "A", Value: "1"})},
			template:  []func(*extensionsv1beta1.SandboxTemplate){envPolicy(extensionsv1beta1.EnvVarsInjectionPolicyAllowed)},
			queued:    []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantBound: "m1",
		},
		{
			name: "spec.env with a named pool takes its member",
			claim: []func(*extensionsv1beta1.SandboxClaim){
				withEnv(extensionsv1beta1.EnvVar{Name: "A", Value: "1"}), warmpool(testPool),
			},
			template:  []func(*extensionsv1beta1.SandboxTemplate){envPolicy(extensionsv1beta1.EnvVarsInjectionPolicyAllowed)},
			queued:    []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantBound: "m1",
		},
		{
			// Ready means delivered: the controller runs the delivery and marks it Ready.
			name:  "spec.env delivered by the template is bound, not Ready",
			claim: []func(*extensionsv1beta1.SandboxClaim){withEnv(extensionsv1beta1.EnvVar{Name: "A", Value: "1"})},
			template: []func(*extensionsv1beta1.SandboxTemplate){envPolicy(extensionsv1beta1.EnvVarsInjectionPolicyAllowed), func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.EnvVarsDelivery = &extensionsv1beta1.EnvVarsDelivery{File: "/run/env"}
			}},
			queued:    []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantBound: "m1", wantStarting: true,
		},
		{
			name:       "refused with spec.env the template does not allow",
			claim:      []func(*extensionsv1beta1.SandboxClaim){withEnv(extensionsv1beta1.EnvVar{Name: "A", Value: "1"})},
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantQueued: []string{"m1"}, thenPlainGets: "m1",
		},
		{
			name:  "refused with spec.env for an init container, which a member ran already",
			claim: []func(*extensionsv1beta1.SandboxClaim){withEnv(extensionsv1beta1.EnvVar{Name: "A", Value: "1", ContainerName: "setup"})},
			template: []func(*extensionsv1beta1.SandboxTemplate){envPolicy(extensionsv1beta1.EnvVarsInjectionPolicyAllowed), func(t *extensionsv1beta1.SandboxTemplate) {
				t.Spec.EnvVarsInjectionContainers = []string{"setup"}
			}},
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantQueued: []string{"m1"}, thenPlainGets: "m1",
		},
		{
			name:       "refused with volume claim templates of its own, even when the template allows them",
			claim:      []func(*extensionsv1beta1.SandboxClaim){withVolumes(pvcTemplate("scratch", "1Gi"))},
			template:   []func(*extensionsv1beta1.SandboxTemplate){volumePolicy(extensionsv1beta1.VolumeClaimTemplatesPolicyAllowed)},
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantQueued: []string{"m1"}, thenPlainGets: "m1",
		},
		{
			name:       "refused when shutdownTime has passed",
			claim:      []func(*extensionsv1beta1.SandboxClaim){withLifecycle(&past, nil, nil)},
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantQueued: []string{"m1"}, thenPlainGets: "m1",
		},
		{
			name:       "refused when shutdownTime is now",
			claim:      []func(*extensionsv1beta1.SandboxClaim){withLifecycle(&zero, nil, ptr.To(extensionsv1beta1.ShutdownPolicyDelete))},
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantQueued: []string{"m1"}, thenPlainGets: "m1",
		},
		{
			// Refused before any member is popped: the queue keeps its order.
			name:       "refused when additionalPodMetadata changes a template label",
			claim:      []func(*extensionsv1beta1.SandboxClaim){withExtraMeta(map[string]string{"app": "node"}, nil)},
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool), ready("m2", testPool)},
			wantQueued: []string{"m1", "m2"}, thenPlainGets: "m1",
		},
		{
			name:       "refused when additionalPodMetadata changes a template annotation",
			claim:      []func(*extensionsv1beta1.SandboxClaim){withExtraMeta(nil, map[string]string{"team": "web"})},
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantQueued: []string{"m1"}, thenPlainGets: "m1",
		},
		{
			name:       "refused when additionalPodMetadata uses a restricted domain",
			claim:      []func(*extensionsv1beta1.SandboxClaim){withExtraMeta(map[string]string{"kubernetes.io/owner": "alice"}, nil)},
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantQueued: []string{"m1"}, thenPlainGets: "m1",
		},
		{
			name:       "without the template, refused when additionalPodMetadata changes the member's label",
			noTemplate: true,
			claim:      []func(*extensionsv1beta1.SandboxClaim){withExtraMeta(map[string]string{"app": "node"}, nil)},
			queued:     []*agentsv1beta1.Sandbox{ready("m1", testPool)},
			wantQueued: []string{"m1"}, thenPlainGets: "m1",
		},

		// No candidate.
		{name: "no member"},
		{
			name:      "a named pool takes only its own member; the others keep their place",
			claim:     []func(*extensionsv1beta1.SandboxClaim){warmpool(testPool)},
			queued:    []*agentsv1beta1.Sandbox{ready("o1", otherPool), ready("m1", testPool), ready("o2", otherPool)},
			wantBound: "m1", wantQueued: []string{"o1", "o2"},
		},
		{
			// The template label is a 32-bit hash of the template's name: the pool says which
			// template made a member.
			name:      "a member of another template's pool whose name hashes alike is never offered; it keeps its place",
			queued:    []*agentsv1beta1.Sandbox{ready("c1", collidingPool), ready("m1", testPool)},
			wantBound: "m1", wantQueued: []string{"c1"},
		},
		{
			name:       "a claim naming another template's pool whose name hashes alike is offered nothing",
			claim:      []func(*extensionsv1beta1.SandboxClaim){warmpool(collidingPool)},
			queued:     []*agentsv1beta1.Sandbox{ready("c1", collidingPool)},
			wantQueued: []string{"c1"},
		},
		{
			name:       "a named pool is never offered a member of another pool",
			claim:      []func(*extensionsv1beta1.SandboxClaim){warmpool(testPool)},
			queued:     []*agentsv1beta1.Sandbox{ready("o1", otherPool)},
			wantQueued: []string{"o1"}, thenPlainGets: "o1",
		},
		{
			name: "a member that turned not-Ready after it was queued is skipped for the next",
			forced: []*agentsv1beta1.Sandbox{
				ready("m1", testPool, sandboxReady(metav1.ConditionFalse, "PodNotReady", "")), ready("m2", testPool),
			},
			wantBound: "m2",
		},
		{
			name:      "a member being deleted after it was queued is skipped for the next",
			forced:    []*agentsv1beta1.Sandbox{ready("m1", testPool, sandboxDeleting), ready("m2", testPool)},
			wantBound: "m2",
		},
		{
			name:   "a member taken by another claim after it was queued is skipped",
			forced: []*agentsv1beta1.Sandbox{ready("m1", testPool, ownedByClaim("other-claim", "other-claim-uid"))},
		},
		{
			name:   "a member gone from the cache after it was queued is skipped",
			hidden: []*agentsv1beta1.Sandbox{ready("m1", testPool)},
		},
	}
	for _, u := range unofferable() {
		cases = append(cases, bindCase{name: "a member " + u.Why + " is never offered", queued: []*agentsv1beta1.Sandbox{u.Member}})
		// Still starting, it waits in the starting bucket, which the binding now offers too.
		starting := u.Member.DeepCopy()
		meta.SetStatusCondition(&starting.Status.Conditions, metav1.Condition{Type: string(agentsv1beta1.SandboxConditionReady), Status: metav1.ConditionFalse, Reason: "DependenciesNotReady"})
		cases = append(cases, bindCase{name: "a starting member " + u.Why + " is never offered", queued: []*agentsv1beta1.Sandbox{starting}})
	}
	for _, u := range starting() {
		cases = append(cases, bindCase{name: "a member " + u.Why + " is bound when no Ready one is left",
			queued: []*agentsv1beta1.Sandbox{u.Member}, wantBound: "m1", wantStarting: true})
	}
	cases = append(cases, bindCase{
		name:      "a Ready member before an older starting one",
		queued:    []*agentsv1beta1.Sandbox{starting()[0].Member, ready("r1", testPool)},
		wantBound: "r1",
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if !tc.unsynced {
				f.sync()
			}
			if !tc.noTemplate {
				f.add(newTemplate(tc.template...))
			}
			for _, sb := range tc.queued {
				f.add(sb)
				f.warm(sb)
			}
			for _, sb := range tc.forced {
				f.add(sb)
				f.chooser.Queue().Add(testBucket, testNS+"/"+sb.Name)
			}
			for _, sb := range tc.hidden {
				f.chooser.Queue().Add(testBucket, testNS+"/"+sb.Name)
			}
			claim := creatingClaim(tc.claim...)
			before := warmCreations(t, testPool) + warmCreations(t, otherPool) + warmCreations(t, "") +
				claimCreations(t, metrics.LaunchWarm, testPool, metrics.PodNotReady)

			spy := &commitSpy{}
			ctx := context.Background()
			if tc.unsynced {
				// Caches that stay unsynced are waited for until the request gives up.
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
			}
			ok, err := f.b.bindWith(ctx, claim, spy.commit)
			if err != nil {
				t.Fatalf("bindWith error = %v, want none", err)
			}
			if ok != (tc.wantBound != "") {
				t.Fatalf("bindWith = %v, want %v (commit got %q)", ok, tc.wantBound != "", spy.candidates())
			}
			events := f.eventReasons()
			counted := warmCreations(t, testPool) + warmCreations(t, otherPool) + warmCreations(t, "") +
				claimCreations(t, metrics.LaunchWarm, testPool, metrics.PodNotReady) - before
			if tc.wantBound != "" {
				if got := spy.candidates(); !slices.Equal(got, []string{tc.wantBound}) {
					t.Fatalf("commit got %q, want only %s", got, tc.wantBound)
				}
				call := spy.calls[0]
				if !metav1.IsControlledBy(call.adopted, claim) {
					t.Errorf("adopted %s is controlled by %+v, want the claim", call.adopted.Name, metav1.GetControllerOf(call.adopted))
				}
				if call.claim.Status.SandboxStatus.Name != tc.wantBound {
					t.Errorf("status.sandbox.name = %q, want %q", call.claim.Status.SandboxStatus.Name, tc.wantBound)
				}
				if tc.wantStarting {
					if meta.IsStatusConditionTrue(call.claim.Status.Conditions, string(agentsv1beta1.SandboxConditionReady)) {
						t.Errorf("claim stored Ready with a member still starting: %+v", call.claim.Status.Conditions)
					}
				} else {
					checkReady(t, call.claim, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready")
				}
				if !slices.Equal(events, []string{"SandboxAdopted"}) {
					t.Errorf("events = %q, want SandboxAdopted", events)
				}
				if counted != 1 {
					t.Errorf("warm creations counted %v, want 1", counted)
				}
			} else {
				if len(spy.calls) != 0 {
					t.Fatalf("commit got %q, want no call", spy.candidates())
				}
				if len(events) != 0 {
					t.Errorf("events = %q, want none", events)
				}
				if counted != 0 {
					t.Errorf("warm creations counted %v, want none", counted)
				}
			}
			if got := f.queued(); !slices.Equal(got, tc.wantQueued) {
				t.Errorf("still queued = %q, want %q", got, tc.wantQueued)
			}

			if tc.thenPlainGets == "" {
				return
			}
			if tc.unsynced {
				// The informers list the fake API, which holds none of the objects added by hand.
				f.sync()
				for _, sb := range tc.queued {
					f.add(sb)
					f.warm(sb)
				}
			}
			next := creatingClaim(named("next-claim", "next-claim-uid"))
			spy = &commitSpy{}
			ok, err = f.bind(next, spy)
			if !ok || err != nil || !slices.Equal(spy.candidates(), []string{tc.thenPlainGets}) {
				t.Errorf("a plain claim after the refusal: bindWith = %v, %v with commit of %q; want %s bound",
					ok, err, spy.candidates(), tc.thenPlainGets)
			}
		})
	}
}

// TestBindCommitFailures: a Conflict from commit (the candidate moved on since cached)
// tries the next candidate, at most maxBindAttempts in all, and never the same one twice; any
// other error gives the candidate back to the queue and is returned.
func TestBindCommitFailures(t *testing.T) {
	metrics.Register()
	serverErr := apierrors.NewInternalError(fmt.Errorf("etcd unavailable"))
	claimExists := storage.NewKeyExistsError("/registry/extensions.agents.x-k8s.io/sandboxclaims/default/my-claim", 0)
	conflictErr := func(_ int, c *agentsv1beta1.Sandbox) error {
		return apierrors.NewConflict(agentsv1beta1.Resource("sandboxes"), c.Name, errors.New("changed since it was chosen"))
	}
	// failing answers conflict for the candidates named in conflicts, other for the one named
	// failWith, and nil for the rest.
	failing := func(conflicts []string, failWith string, other error) func(int, *agentsv1beta1.Sandbox) error {
		return func(n int, c *agentsv1beta1.Sandbox) error {
			switch {
			case slices.Contains(conflicts, c.Name):
				return conflictErr(n, c)
			case c.Name == failWith:
				return other
			}
			return nil
		}
	}
	cases := []struct {
		name       string
		members    []string
		fail       func(int, *agentsv1beta1.Sandbox) error
		wantBound  bool
		wantErr    error
		wantCalls  []string
		wantQueued []string
		// rewarm are fed again through the sandbox handler after the call, as the informer does
		// when the cache catches up; then a claim with a succeeding commit must get thenGets.
		rewarm   []string
		thenGets string
	}{
		{
			name:      "a conflict on the first candidate commits the second",
			members:   []string{"m1", "m2"},
			fail:      failing([]string{"m1"}, "", nil),
			wantBound: true, wantCalls: []string{"m1", "m2"},
		},
		{
			name:      "a conflict on the only candidate is not retried in this call",
			members:   []string{"m1"},
			fail:      failing([]string{"m1"}, "", nil),
			wantCalls: []string{"m1"},
			// Its newer version, once cached, queues it again.
			rewarm: []string{"m1"}, thenGets: "m1",
		},
		{
			name:       "conflicts on every candidate stop after maxBindAttempts",
			members:    []string{"m1", "m2", "m3", "m4", "m5"},
			fail:       failing([]string{"m1", "m2", "m3", "m4", "m5"}, "", nil),
			wantCalls:  []string{"m1", "m2", "m3", "m4"},
			wantQueued: []string{"m5"}, thenGets: "m5",
		},
		{
			name:       "a server error returns the error and gives the candidate back",
			members:    []string{"m1"},
			fail:       failing(nil, "m1", serverErr),
			wantErr:    serverErr,
			wantCalls:  []string{"m1"},
			wantQueued: []string{"m1"}, thenGets: "m1",
		},
		{
			name:       "the claim's name already taken returns the error and gives the candidate back",
			members:    []string{"m1"},
			fail:       failing(nil, "m1", claimExists),
			wantErr:    claimExists,
			wantCalls:  []string{"m1"},
			wantQueued: []string{"m1"}, thenGets: "m1",
		},
		{
			name:       "a server error after a conflict gives back only the second candidate",
			members:    []string{"m1", "m2"},
			fail:       failing([]string{"m1"}, "m2", serverErr),
			wantErr:    serverErr,
			wantCalls:  []string{"m1", "m2"},
			wantQueued: []string{"m2"}, thenGets: "m2",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newBindFixture(t, newTemplate())
			members := map[string]*agentsv1beta1.Sandbox{}
			for _, n := range tc.members {
				m := warmMember(n, testPool)
				members[n] = m
				f.add(m)
				f.warm(m)
			}
			claim := creatingClaim()
			before := warmCreations(t, testPool)

			spy := &commitSpy{fail: tc.fail}
			ok, err := f.bind(claim, spy)
			if ok != tc.wantBound || err != tc.wantErr {
				t.Fatalf("bindWith = %v, %v; want %v, %v", ok, err, tc.wantBound, tc.wantErr)
			}
			if got := spy.candidates(); !slices.Equal(got, tc.wantCalls) {
				t.Errorf("commit got %q, want %q", got, tc.wantCalls)
			}
			events := f.eventReasons()
			counted := warmCreations(t, testPool) - before
			if tc.wantBound {
				last := spy.calls[len(spy.calls)-1]
				if last.claim.Status.SandboxStatus.Name != last.candidate.Name || !metav1.IsControlledBy(last.adopted, claim) {
					t.Errorf("last commit: status names %q, adopted %s controlled by %+v; want both the candidate %s and the claim",
						last.claim.Status.SandboxStatus.Name, last.adopted.Name, metav1.GetControllerOf(last.adopted), last.candidate.Name)
				}
				if !slices.Equal(events, []string{"SandboxAdopted"}) || counted != 1 {
					t.Errorf("events %q, %v creations counted; want one SandboxAdopted, counted once", events, counted)
				}
			} else if len(events) != 0 || counted != 0 {
				t.Errorf("events %q, %v creations counted; want none", events, counted)
			}
			if got := f.queued(); !slices.Equal(got, tc.wantQueued) {
				t.Errorf("still queued = %q, want %q", got, tc.wantQueued)
			}

			if tc.thenGets == "" {
				return
			}
			for _, n := range tc.rewarm {
				newer := members[n].DeepCopy()
				newer.ResourceVersion = "12"
				f.updateCache(newer)
				f.warm(newer)
			}
			next := creatingClaim(named("next-claim", "next-claim-uid"))
			spy = &commitSpy{}
			ok, err = f.bind(next, spy)
			if !ok || err != nil || !slices.Equal(spy.candidates(), []string{tc.thenGets}) {
				t.Errorf("the next claim: bindWith = %v, %v with commit of %q; want %s bound", ok, err, spy.candidates(), tc.thenGets)
			}
		})
	}
}

// TestBindExclusive: claims created one after the other with a succeeding commit never
// get the same member, and once the members are gone they are refused.
func TestBindExclusive(t *testing.T) {
	f := newBindFixture(t, newTemplate())
	for _, n := range []string{"m1", "m2"} {
		m := warmMember(n, testPool)
		f.add(m)
		f.warm(m)
	}
	var got []string
	for i := range 3 {
		spy := &commitSpy{}
		ok, err := f.bind(creatingClaim(named(fmt.Sprintf("claim-%d", i), types.UID(fmt.Sprintf("claim-uid-%d", i)))), spy)
		if err != nil {
			t.Fatalf("claim-%d: %v", i, err)
		}
		if ok != (i < 2) {
			t.Errorf("claim-%d: bindWith = %v, want %v", i, ok, i < 2)
		}
		got = append(got, spy.candidates()...)
	}
	if !slices.Equal(got, []string{"m1", "m2"}) {
		t.Errorf("members committed = %q, want m1 then m2, each once", got)
	}
}

// TestBindWaitsForCaches: a claim created while the chooser's caches are still filling
// (a replica just started) waits for them and is bound, instead of being stored unserved.
func TestBindWaitsForCaches(t *testing.T) {
	f := newFixture(t, newTemplate(), warmMember("m1", testPool))
	time.AfterFunc(100*time.Millisecond, f.start)

	spy := &commitSpy{}
	ok, err := f.bind(creatingClaim(), spy)
	if err != nil || !ok {
		t.Fatalf("bindWith = %v, %v; want bound once the caches synced", ok, err)
	}
	if got := spy.candidates(); !slices.Equal(got, []string{"m1"}) {
		t.Errorf("commit got %q, want m1", got)
	}
}
