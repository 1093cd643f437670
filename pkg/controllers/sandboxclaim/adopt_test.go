// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/warm"
)

var testBucket = warm.Bucket{Namespace: testNS, TemplateRefHash: templateHash}

// failUpdates makes updates of the named sandboxes fail with the error made for them.
func failUpdates(f *fixture, errFor map[string]func(name string) error) {
	f.client.PrependReactor("update", "sandboxes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "" {
			return false, nil, nil
		}
		name := objName(a.(clienttesting.UpdateAction).GetObject())
		if mk, ok := errFor[name]; ok {
			return true, nil, mk(name)
		}
		return false, nil, nil
	})
}

func conflict(name string) error {
	return apierrors.NewConflict(sandboxesGVR.GroupResource(), name, fmt.Errorf("the object has been modified"))
}

func notFound(name string) error {
	return apierrors.NewNotFound(sandboxesGVR.GroupResource(), name)
}

func TestAdoptWarmMember(t *testing.T) {
	member := warmMember("fast-pool-abcde", testPool, withRV("42"))
	claim := newClaim(withExtraMeta(map[string]string{"owner": "alice"}, map[string]string{"cost-center": "1234"}))
	f := newFixture(t, claim, newTemplate(), member)
	f.warm(member)

	f.mustSync(testClaim)

	if got, want := f.writes(), []string{"update sandboxes fast-pool-abcde", "update sandboxclaims " + testClaim, "update sandboxclaims/status " + testClaim}; !slices.Equal(got, want) {
		t.Fatalf("writes = %q, want %q", got, want)
	}
	expectSandboxNameLabel(t, f, "fast-pool-abcde")
	up := f.updatedSandboxes()[0]
	if up.ResourceVersion != "42" {
		t.Errorf("adoption update carries resourceVersion %q, want the member's 42 (a conditional write)", up.ResourceVersion)
	}
	if want := []metav1.OwnerReference{claimOwnerRef(testClaim, testClaimUID)}; !apiequality.Semantic.DeepEqual(up.OwnerReferences, want) {
		t.Errorf("owner references = %+v, want only the claim as controller %+v", up.OwnerReferences, want)
	}
	wantLabels := map[string]string{
		extensionsv1beta1.SandboxIDLabel:              string(testClaimUID),
		extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash,
	}
	if !apiequality.Semantic.DeepEqual(up.Labels, wantLabels) {
		t.Errorf("sandbox labels = %v, want %v (warm-pool labels gone, claim-uid on)", up.Labels, wantLabels)
	}
	if got := up.Annotations[agentsv1beta1.SandboxPodNameAnnotation]; got != member.Name {
		t.Errorf("pod-name annotation = %q, want the member's name %q", got, member.Name)
	}
	if got := up.Annotations[agentsv1beta1.SandboxTemplateRefAnnotation]; got != testTemplate {
		t.Errorf("template-ref annotation = %q, want it kept", got)
	}
	expectAdoptedPodTemplate(t, up, member)

	st := f.lastStatus()
	checkReady(t, st, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready")
	if st.Status.SandboxStatus.Name != member.Name || !slices.Equal(st.Status.SandboxStatus.PodIPs, []string{"10.0.0.9"}) {
		t.Errorf("status.sandbox = %+v, want %s with its pod IPs", st.Status.SandboxStatus, member.Name)
	}
	events := f.events()
	if len(events) != 1 || !strings.HasPrefix(events[0], "Normal SandboxAdopted ") || !strings.Contains(events[0], "pool "+testPool) {
		t.Errorf("events = %q, want one SandboxAdopted naming pool %s", events, testPool)
	}
	if n := f.chooser.Queue().Len(testBucket); n != 0 {
		t.Errorf("warm queue holds %d after the adoption, want 0", n)
	}
}

// TestAdoptCandidates is the matrix of which queued members a claim takes.
func TestAdoptCandidates(t *testing.T) {
	const otherPool = "other-pool"
	type adoptCase struct {
		name   string
		policy *extensionsv1beta1.WarmPoolPolicy
		claim  func(*extensionsv1beta1.SandboxClaim)
		// queued go through the sandbox handler, in order; cached are only in the cache and API.
		queued []*agentsv1beta1.Sandbox
		// forced are put into the bucket directly, as if they had been adoptable when queued.
		forced     []*agentsv1beta1.Sandbox
		wantAdopt  string // name of the member adopted; "" for a cold create
		wantQueued []string
	}
	cases := []adoptCase{
		{
			name:      "default takes the oldest Ready member",
			queued:    []*agentsv1beta1.Sandbox{warmMember("m1", testPool), warmMember("m2", otherPool)},
			wantAdopt: "m1", wantQueued: []string{"m2"},
		},
		{
			name:      "a named pool takes only its own members; the others stay queued",
			policy:    ptr.To(extensionsv1beta1.WarmPoolPolicy(testPool)),
			queued:    []*agentsv1beta1.Sandbox{warmMember("o1", otherPool), warmMember("m1", testPool), warmMember("o2", otherPool)},
			wantAdopt: "m1", wantQueued: []string{"o1", "o2"},
		},
		{
			name:       "a named pool with no member of its own creates cold and leaves the others",
			policy:     ptr.To(extensionsv1beta1.WarmPoolPolicy(testPool)),
			queued:     []*agentsv1beta1.Sandbox{warmMember("o1", otherPool)},
			wantQueued: []string{"o1"},
		},
		{
			// What a claim by spec.warmPoolRef is once defaulted: warmpool names that pool.
			name:   "a claim by warmPoolRef takes only its pool's members",
			policy: ptr.To(extensionsv1beta1.WarmPoolPolicy(testPool)),
			claim: func(c *extensionsv1beta1.SandboxClaim) {
				c.Spec.WarmPoolRef = &extensionsv1beta1.SandboxWarmPoolRef{Name: testPool}
			},
			queued:     []*agentsv1beta1.Sandbox{warmMember("o1", otherPool), warmMember("m1", testPool)},
			wantAdopt:  "m1",
			wantQueued: []string{"o1"},
		},
		{
			name:   "a claim by warmPoolRef whose pool has no member starts cold",
			policy: ptr.To(extensionsv1beta1.WarmPoolPolicy(testPool)),
			claim: func(c *extensionsv1beta1.SandboxClaim) {
				c.Spec.WarmPoolRef = &extensionsv1beta1.SandboxWarmPoolRef{Name: testPool}
			},
			queued:     []*agentsv1beta1.Sandbox{warmMember("o1", otherPool)},
			wantQueued: []string{"o1"},
		},
		{
			// The template label is a 32-bit hash of the template's name: the pool says which
			// template made a member.
			name:      "a member of another template's pool whose name hashes alike is never adopted; it keeps its place",
			queued:    []*agentsv1beta1.Sandbox{warmMember("c1", collidingPool), warmMember("m1", testPool)},
			wantAdopt: "m1", wantQueued: []string{"c1"},
		},
		{
			name:       "a claim naming another template's pool whose name hashes alike starts cold",
			policy:     ptr.To(extensionsv1beta1.WarmPoolPolicy(collidingPool)),
			queued:     []*agentsv1beta1.Sandbox{warmMember("c1", collidingPool)},
			wantQueued: []string{"c1"},
		},
		{
			name:       "none never adopts",
			policy:     ptr.To(extensionsv1beta1.WarmPoolPolicyNone),
			queued:     []*agentsv1beta1.Sandbox{warmMember("m1", testPool)},
			wantQueued: []string{"m1"},
		},
		{
			name:      "a member that turned not-Ready after it was queued is skipped for the next one",
			forced:    []*agentsv1beta1.Sandbox{warmMember("m1", testPool, sandboxReady(metav1.ConditionFalse, "PodNotReady", "")), warmMember("m2", testPool)},
			wantAdopt: "m2",
		},
		{
			name:   "a member being deleted after it was queued is skipped",
			forced: []*agentsv1beta1.Sandbox{warmMember("m1", testPool, sandboxDeleting)},
		},
		{
			// The informer updates its cache before the handler moves the key to its new bucket,
			// so a worker can pop the stale key in between.
			name: "a member relabelled to another template after it was queued is skipped",
			forced: []*agentsv1beta1.Sandbox{warmMember("m1", testPool, func(sb *agentsv1beta1.Sandbox) {
				sb.Labels[extensionsv1beta1.SandboxTemplateRefHashLabel] = fnvHash("node")
			})},
		},
		{
			name:   "a member taken by another claim after it was queued is skipped",
			forced: []*agentsv1beta1.Sandbox{warmMember("m1", testPool, ownedByClaim("other-claim", "other-claim-uid"))},
		},
	}
	for _, u := range unofferable() {
		cases = append(cases, adoptCase{name: "a member " + u.Why + " is never adopted", queued: []*agentsv1beta1.Sandbox{u.Member}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := newClaim()
			claim.Spec.WarmPool = tc.policy
			if tc.claim != nil {
				tc.claim(claim)
			}
			f := newFixture(t, claim, newTemplate())
			for _, sb := range tc.queued {
				f.add(sb)
				f.warm(sb)
			}
			for _, sb := range tc.forced {
				f.add(sb)
				f.chooser.Queue().Add(testBucket, testNS+"/"+sb.Name)
			}

			f.mustSync(testClaim)

			var adopted []string
			for _, sb := range f.updatedSandboxes() {
				adopted = append(adopted, sb.Name)
			}
			created := f.createdSandboxes()
			st := f.lastStatus()
			reasons := f.eventReasons()
			if tc.wantAdopt != "" {
				if !slices.Equal(adopted, []string{tc.wantAdopt}) || len(created) != 0 {
					t.Fatalf("adopted %q and created %d, want only %s adopted; writes %q", adopted, len(created), tc.wantAdopt, f.writes())
				}
				if st.Status.SandboxStatus.Name != tc.wantAdopt {
					t.Errorf("status.sandbox.name = %q, want %q", st.Status.SandboxStatus.Name, tc.wantAdopt)
				}
				checkReady(t, st, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready")
				if !slices.Equal(reasons, []string{"SandboxAdopted"}) {
					t.Errorf("events = %q, want SandboxAdopted", reasons)
				}
			} else {
				if len(adopted) != 0 || len(created) != 1 || created[0].Name != testClaim {
					t.Fatalf("adopted %q and created %d, want one cold sandbox %s; writes %q", adopted, len(created), testClaim, f.writes())
				}
				if !slices.Equal(reasons, []string{"SandboxProvisioned"}) {
					t.Errorf("events = %q, want SandboxProvisioned", reasons)
				}
			}
			var queued []string
			for range f.chooser.Queue().Len(testBucket) {
				k, _ := f.chooser.Queue().Pop(testBucket, nil)
				queued = append(queued, strings.TrimPrefix(k, testNS+"/"))
			}
			if !slices.Equal(queued, tc.wantQueued) {
				t.Errorf("still queued = %q, want %q", queued, tc.wantQueued)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestAdoptWriteFailures: a lost race moves on to the next candidate, then to a cold sandbox;
// any other failure keeps the candidate for later and reports the error.
func TestAdoptWriteFailures(t *testing.T) {
	cases := []struct {
		name       string
		members    []string
		fail       map[string]func(string) error
		wantAdopt  string
		wantCreate bool
		wantErr    bool
		wantQueued int
	}{
		{
			name: "a conflict on the first candidate adopts the second", members: []string{"m1", "m2"},
			fail: map[string]func(string) error{"m1": conflict}, wantAdopt: "m2",
		},
		{
			name: "a candidate deleted meanwhile (NotFound) adopts the next", members: []string{"m1", "m2"},
			fail: map[string]func(string) error{"m1": notFound}, wantAdopt: "m2",
		},
		{
			name: "conflicts on every candidate end in a cold sandbox", members: []string{"m1", "m2"},
			fail: map[string]func(string) error{"m1": conflict, "m2": conflict}, wantCreate: true,
		},
		{
			name: "a server error keeps the candidate queued and fails the sync", members: []string{"m1", "m2"},
			fail: map[string]func(string) error{"m1": func(string) error {
				return apierrors.NewInternalError(fmt.Errorf("etcd unavailable"))
			}},
			wantErr: true, wantQueued: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newClaim(), newTemplate())
			for _, n := range tc.members {
				m := warmMember(n, testPool)
				f.add(m)
				f.warm(m)
			}
			failUpdates(f, tc.fail)

			err := f.sync(testClaim)
			if tc.wantErr != (err != nil) {
				t.Fatalf("sync error = %v, want error: %v", err, tc.wantErr)
			}
			// Every attempt is one update; the successful one is the last.
			attempts := f.updatedSandboxes()
			created := f.createdSandboxes()
			st := f.lastStatus()
			switch {
			case tc.wantAdopt != "":
				if len(attempts) == 0 || attempts[len(attempts)-1].Name != tc.wantAdopt || len(created) != 0 {
					t.Fatalf("writes %q, want %s adopted and nothing created", f.writes(), tc.wantAdopt)
				}
				if st.Status.SandboxStatus.Name != tc.wantAdopt {
					t.Errorf("status.sandbox.name = %q, want %q", st.Status.SandboxStatus.Name, tc.wantAdopt)
				}
			case tc.wantCreate:
				if len(created) != 1 || created[0].Name != testClaim {
					t.Fatalf("writes %q, want a cold sandbox %s", f.writes(), testClaim)
				}
				if len(attempts) != len(tc.members) {
					t.Errorf("%d adoption attempts, want one per member (%d)", len(attempts), len(tc.members))
				}
			case tc.wantErr:
				if len(created) != 0 {
					t.Errorf("created %d sandboxes after a server error, want none", len(created))
				}
				checkReady(t, st, metav1.ConditionFalse, extensionsv1beta1.ClaimReasonReconcilerError, "Error seen: *")
			}
			if n := f.chooser.Queue().Len(testBucket); n != tc.wantQueued {
				t.Errorf("warm queue holds %d, want %d", n, tc.wantQueued)
			}
		})
	}
}

// TestAdoptionExclusivity: N claims racing for M<N members end with M adoptions of distinct
// members and N-M cold sandboxes, every sandbox controlled by exactly one claim.
func TestAdoptionExclusivity(t *testing.T) {
	for _, nm := range [][2]int{{3, 2}, {5, 3}, {4, 1}, {2, 0}} {
		n, m := nm[0], nm[1]
		t.Run(fmt.Sprintf("%d claims %d members", n, m), func(t *testing.T) {
			f := newFixture(t, newTemplate())
			var claims []*extensionsv1beta1.SandboxClaim
			for i := range n {
				c := newClaim(named(fmt.Sprintf("claim-%d", i), types.UID(fmt.Sprintf("claim-uid-%d", i))))
				claims = append(claims, c)
				f.add(c)
			}
			for i := range m {
				sb := warmMember(fmt.Sprintf("fast-pool-%d", i), testPool)
				f.add(sb)
				f.warm(sb)
			}
			for _, c := range claims {
				f.mustSync(c.Name)
			}

			adopted := map[string]bool{}
			for _, sb := range f.updatedSandboxes() {
				if adopted[sb.Name] {
					t.Errorf("member %s adopted twice", sb.Name)
				}
				adopted[sb.Name] = true
			}
			if len(adopted) != m {
				t.Errorf("%d members adopted, want %d", len(adopted), m)
			}
			created := f.createdSandboxes()
			if len(created) != n-m {
				t.Errorf("%d cold sandboxes, want %d", len(created), n-m)
			}
			for _, sb := range created {
				if !strings.HasPrefix(sb.Name, "claim-") {
					t.Errorf("cold sandbox %s is not named after its claim", sb.Name)
				}
			}

			list, err := f.client.AgentsV1beta1().Sandboxes(testNS).List(context.Background(), metav1.ListOptions{})
			f.must(err)
			if len(list.Items) != n {
				t.Errorf("%d sandboxes in the cluster, want %d", len(list.Items), n)
			}
			perClaim := map[types.UID]int{}
			for i := range list.Items {
				ref := metav1.GetControllerOf(&list.Items[i])
				if ref == nil || ref.Kind != "SandboxClaim" {
					t.Errorf("sandbox %s is controlled by %v, want a claim", list.Items[i].Name, ref)
					continue
				}
				perClaim[ref.UID]++
			}
			for _, c := range claims {
				if perClaim[c.UID] != 1 {
					t.Errorf("claim %s controls %d sandboxes, want 1", c.Name, perClaim[c.UID])
				}
			}
			// Each claim's status names its own sandbox, and no two name the same.
			seen := map[string]string{}
			for _, st := range f.statusWrites() {
				if prev, ok := seen[st.Status.SandboxStatus.Name]; ok && prev != st.Name {
					t.Errorf("claims %s and %s both report sandbox %s", prev, st.Name, st.Status.SandboxStatus.Name)
				}
				seen[st.Status.SandboxStatus.Name] = st.Name
			}
			if len(seen) != n {
				t.Errorf("%d distinct sandboxes in claim statuses, want %d", len(seen), n)
			}
		})
	}
}

// TestAdoptStaleSandboxCache: the claim's status update can reach the claim cache before the
// adoption reaches the sandbox cache (two watches, no order between them). A sync in that window
// sees its status name a member the cache still shows as the pool's; it must not take a second
// member or make a cold sandbox, or the claim ends up with two.
func TestAdoptStaleSandboxCache(t *testing.T) {
	m1, m2 := warmMember("m1", testPool), warmMember("m2", testPool)
	f := newFixture(t, newClaim(), newTemplate(), m1, m2)
	f.warm(m1, m2)

	f.mustSync(testClaim)
	if ups := f.updatedSandboxes(); len(ups) != 1 || ups[0].Name != "m1" {
		t.Fatalf("first sync wrote %q, want m1 adopted", f.writes())
	}
	// Only the claim cache catches up.
	f.updateCache(f.lastStatus())
	f.reset()

	f.mustSync(testClaim)
	var others []string
	for _, sb := range f.updatedSandboxes() {
		if sb.Name != "m1" {
			others = append(others, "adopted "+sb.Name)
		}
	}
	for _, sb := range f.createdSandboxes() {
		others = append(others, "created "+sb.Name)
	}
	if len(others) > 0 {
		t.Fatalf("findSandbox skips status.sandbox.name=m1 because the cached m1 is still pool-controlled, and the "+
			"claim then %q: a second sandbox for one claim (writes %q)", others, f.writes())
	}
}

// TestAdoptWithoutTemplate: adoption needs only the template's name (the bucket is its hash), so
// per the seeds a Ready member is adopted even when the template is gone, its pod metadata then
// based on the member's own (seed 002, "SandboxClaim Reconciler": "A missing-template fallback
// merges directly into the existing sandbox's pod template"; seed 003: the template is fetched
// only to create from scratch or to merge metadata).
func TestAdoptWithoutTemplate(t *testing.T) {
	m1 := warmMember("m1", testPool)
	f := newFixture(t, newClaim(withExtraMeta(map[string]string{"owner": "alice"}, nil)), m1)
	f.warm(m1)
	f.mustSync(testClaim)

	ups := f.updatedSandboxes()
	if len(ups) == 0 {
		t.Fatalf("with the template gone, reconcileActive reports TemplateNotFound before trying the warm queue; "+
			"a Ready member of the template waits unused (Ready %+v)", readyOf(t, f.lastStatus()))
	}
	if len(ups) != 1 || ups[0].Name != "m1" || len(f.createdSandboxes()) != 0 {
		t.Fatalf("writes = %q, want m1 adopted", f.writes())
	}
	want := agentsv1beta1.PodMetadata{
		Labels: map[string]string{"app": "python", "tier": "sandbox", "owner": "alice",
			extensionsv1beta1.SandboxIDLabel: string(testClaimUID), extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash},
		Annotations: map[string]string{"team": "ml"},
	}
	if !apiequality.Semantic.DeepEqual(ups[0].Spec.PodTemplate.ObjectMeta, want) {
		t.Errorf("pod metadata = %+v, want %+v", ups[0].Spec.PodTemplate.ObjectMeta, want)
	}
	checkReady(t, f.lastStatus(), metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready")
}

// TestNamespaceOfEarlierObjects: objects recorded with the UID of an earlier namespace of the same
// name (deleted and created again while the server was away) are not served: such a claim makes
// and takes nothing, and such a warm member is not handed to a claim of the new namespace. A claim
// in a namespace being deleted makes and takes nothing either.
func TestNamespaceOfEarlierObjects(t *testing.T) {
	recorded := func(uid string) map[string]string {
		if uid == "" {
			return nil
		}
		return map[string]string{agentsv1beta1.NamespaceUIDAnnotation: uid}
	}
	for _, tc := range []struct {
		name                  string
		claimUID, memberUID   string
		terminating           bool
		wantAdopt, wantCreate bool
	}{
		{name: "claim and member of the namespace: adopted", claimUID: "ns-now", memberUID: "ns-now", wantAdopt: true},
		{name: "member of an earlier namespace: not offered, a cold sandbox instead", claimUID: "ns-now", memberUID: "ns-before", wantCreate: true},
		{name: "claim of an earlier namespace: nothing made or taken", claimUID: "ns-before", memberUID: "ns-now"},
		{name: "member stored before UIDs were recorded: adopted", claimUID: "ns-now", wantAdopt: true},
		{name: "namespace being deleted: nothing made or taken", claimUID: "ns-now", memberUID: "ns-now", terminating: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := newClaim(func(c *extensionsv1beta1.SandboxClaim) { c.Annotations = recorded(tc.claimUID) })
			member := warmMember("m1", testPool, func(sb *agentsv1beta1.Sandbox) {
				maps.Copy(sb.Annotations, recorded(tc.memberUID))
			})
			f := newFixture(t, claim, newTemplate())
			namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, UID: "ns-now"}}
			if tc.terminating {
				namespace.Status.Phase = corev1.NamespaceTerminating
			}
			f.must(f.namespaces.Add(namespace))
			f.add(member)
			f.warm(member)
			f.mustSync(testClaim)
			if adopted := len(f.updatedSandboxes()) == 1; adopted != tc.wantAdopt {
				t.Errorf("adopted = %v, want %v; writes %q", adopted, tc.wantAdopt, f.writes())
			}
			if created := len(f.createdSandboxes()) == 1; created != tc.wantCreate {
				t.Errorf("created = %v, want %v; writes %q", created, tc.wantCreate, f.writes())
			}
			if !tc.wantAdopt && !tc.wantCreate && len(f.writes()) != 0 {
				t.Errorf("writes %q, want none", f.writes())
			}
		})
	}
}

// TestAdoptStartingMember: with no Ready member left, a claim takes the oldest member still
// starting instead of a cold sandbox beside the pool; it becomes Ready with the member's pod.
func TestAdoptStartingMember(t *testing.T) {
	metrics.Register()
	notReady := sandboxReady(metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady, "Pod is not Ready")
	cases := []struct {
		name         string
		queued       []*agentsv1beta1.Sandbox
		wantAdopt    string
		wantReady    [2]string
		wantStarting []string // left in the starting bucket
		wantReadyQ   []string // left in the Ready bucket
	}{
		{
			name:         "no Ready member: the oldest starting one",
			queued:       []*agentsv1beta1.Sandbox{warmMember("s1", testPool, notReady), warmMember("s2", testPool, notReady)},
			wantAdopt:    "s1",
			wantReady:    [2]string{"False", agentsv1beta1.SandboxReasonDependenciesNotReady},
			wantStarting: []string{"s2"},
		},
		{
			name:      "a starting member with no readiness yet",
			queued:    []*agentsv1beta1.Sandbox{warmMember("s1", testPool, func(sb *agentsv1beta1.Sandbox) { sb.Status.Conditions = nil })},
			wantAdopt: "s1",
			wantReady: [2]string{"False", extensionsv1beta1.ClaimReasonSandboxNotReady},
		},
		{
			name:         "a Ready member before an older starting one",
			queued:       []*agentsv1beta1.Sandbox{warmMember("s1", testPool, notReady), warmMember("r1", testPool)},
			wantAdopt:    "r1",
			wantReady:    [2]string{"True", agentsv1beta1.SandboxReasonDependenciesReady},
			wantStarting: []string{"s1"},
		},
		{
			name: "a member that became Ready is in the Ready bucket",
			queued: []*agentsv1beta1.Sandbox{warmMember("s1", testPool, notReady), warmMember("s2", testPool, notReady),
				warmMember("s1", testPool)},
			wantAdopt:    "s1",
			wantReady:    [2]string{"True", agentsv1beta1.SandboxReasonDependenciesReady},
			wantStarting: []string{"s2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newClaim(), newTemplate())
			for _, sb := range tc.queued {
				if _, err := f.c.sandboxes.Sandboxes(testNS).Get(sb.Name); err == nil {
					f.updateCache(sb)
					f.must(f.client.Tracker().Update(sandboxesGVR, sb.DeepCopy(), testNS))
				} else {
					f.add(sb)
				}
				f.warm(sb)
			}
			startingBefore := claimCreations(t, metrics.LaunchWarm, testPool, "not_ready")
			f.mustSync(testClaim)

			if created := f.createdSandboxes(); len(created) != 0 {
				t.Fatalf("created a cold sandbox %s beside the pool; writes %q", created[0].Name, f.writes())
			}
			up := f.updatedSandboxes()
			if len(up) != 1 || up[0].Name != tc.wantAdopt || !metav1.IsControlledBy(up[0], newClaim()) {
				t.Fatalf("adopted %d sandboxes (writes %q), want %s", len(up), f.writes(), tc.wantAdopt)
			}
			st := f.lastStatus()
			checkReady(t, st, metav1.ConditionStatus(tc.wantReady[0]), tc.wantReady[1], "")
			if st.Status.SandboxStatus.Name != tc.wantAdopt {
				t.Errorf("status.sandbox.name = %q, want %q", st.Status.SandboxStatus.Name, tc.wantAdopt)
			}
			expectSandboxNameLabel(t, f, tc.wantAdopt)
			wasStarting := tc.wantReady[0] != "True"
			if got := claimCreations(t, metrics.LaunchWarm, testPool, "not_ready") - startingBefore; got != map[bool]float64{true: 1, false: 0}[wasStarting] {
				t.Errorf("pod_condition=not_ready counted %v times, want %v", got, wasStarting)
			}
			if ev := f.events(); len(ev) != 1 || strings.Contains(ev[0], "still starting") != wasStarting {
				t.Errorf("events = %q, want one SandboxAdopted saying whether the pod was still starting (%v)", ev, wasStarting)
			}
			for _, q := range []struct {
				bucket warm.Bucket
				want   []string
			}{{testBucket.StartingBucket(), tc.wantStarting}, {testBucket, tc.wantReadyQ}} {
				var left []string
				for range f.chooser.Queue().Len(q.bucket) {
					k, _ := f.chooser.Queue().Pop(q.bucket, nil)
					left = append(left, strings.TrimPrefix(k, testNS+"/"))
				}
				if !slices.Equal(left, q.want) {
					t.Errorf("left in %+v: %q, want %q", q.bucket, left, q.want)
				}
			}
		})
	}
}
