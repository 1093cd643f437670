// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"fmt"
	"slices"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/adoption"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/warm"
)

func TestAdoptableBucket(t *testing.T) {
	cases := []struct {
		name     string
		sb       *agentsv1beta1.Sandbox
		want     bool
		starting bool
	}{
		{name: "Ready member of a pool", sb: warmMember("m", testPool), want: true},
		{name: "Ready member controlled by nobody", sb: warmMember("m", "")},
		{name: "not Ready: starting", sb: warmMember("m", testPool, sandboxReady("False", "DependenciesNotReady", "")), want: true, starting: true},
		{name: "no Ready condition: starting", sb: warmMember("m", testPool, func(sb *agentsv1beta1.Sandbox) { sb.Status.Conditions = nil }), want: true, starting: true},
		{name: "being deleted", sb: warmMember("m", testPool, sandboxDeleting)},
		{name: "no warm-pool label", sb: warmMember("m", testPool, func(sb *agentsv1beta1.Sandbox) {
			delete(sb.Labels, extensionsv1beta1.WarmPoolSandboxLabel)
		})},
		{name: "empty warm-pool label", sb: warmMember("m", testPool, func(sb *agentsv1beta1.Sandbox) {
			sb.Labels[extensionsv1beta1.WarmPoolSandboxLabel] = ""
		})},
		{name: "no template-ref hash label", sb: warmMember("m", testPool, func(sb *agentsv1beta1.Sandbox) {
			delete(sb.Labels, extensionsv1beta1.SandboxTemplateRefHashLabel)
		})},
		{name: "controlled by a claim", sb: warmMember("m", testPool, ownedByClaim(testClaim, testClaimUID))},
		{name: "controlled by something else", sb: warmMember("m", testPool, withOwner(metav1.OwnerReference{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: ptr.To(true),
		}))},
		{name: "a plain cold sandbox", sb: newSandbox("cold", ownedByClaim(testClaim, testClaimUID), sandboxReady("True", "DependenciesReady", ""))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.chooser.OnAdd(tc.sb, false)
			queue := f.chooser.Queue()
			ready, starting := queue.Len(testBucket), queue.Len(testBucket.StartingBucket())
			if got := ready+starting > 0; got != tc.want {
				t.Fatalf("queued = %v, want %v", got, tc.want)
			}
			if tc.want && (starting == 1) != tc.starting {
				t.Errorf("queued in the starting bucket = %v, want %v", starting == 1, tc.starting)
			}
		})
	}
}

// TestWarmQueueMaintenance feeds the sandbox handlers a sequence of events and checks what the
// warm queue holds and which claims were woken after each.
func TestWarmQueueMaintenance(t *testing.T) {
	nodeBucket := warm.Bucket{Namespace: testNS, TemplateRefHash: fnvHash("node")}
	type event struct {
		deleted   bool
		tombstone bool
		sb        *agentsv1beta1.Sandbox
	}
	changed := func(sb *agentsv1beta1.Sandbox) event { return event{sb: sb} }
	gone := func(sb *agentsv1beta1.Sandbox) event { return event{deleted: true, sb: sb} }
	goneTombstone := func(sb *agentsv1beta1.Sandbox) event { return event{deleted: true, tombstone: true, sb: sb} }
	cases := []struct {
		name      string
		events    []event
		want      map[warm.Bucket][]string
		wantWoken []string
	}{
		{
			name:   "Ready members queued in arrival order, once each",
			events: []event{changed(warmMember("m2", testPool)), changed(warmMember("m1", testPool)), changed(warmMember("m2", testPool))},
			want:   map[warm.Bucket][]string{testBucket: {"m2", "m1"}},
		},
		{
			name:   "a member not yet Ready is queued once it is",
			events: []event{changed(warmMember("m1", testPool, sandboxReady("False", "DependenciesNotReady", ""))), changed(warmMember("m1", testPool))},
			want:   map[warm.Bucket][]string{testBucket: {"m1"}},
		},
		{
			name:   "a member that stops being Ready leaves",
			events: []event{changed(warmMember("m1", testPool)), changed(warmMember("m1", testPool, sandboxReady("False", "DependenciesNotReady", "")))},
		},
		{
			name:      "a member adopted by a claim leaves and wakes the claim",
			events:    []event{changed(warmMember("m1", testPool)), changed(warmMember("m1", "", ownedByClaim(testClaim, testClaimUID), func(sb *agentsv1beta1.Sandbox) { delete(sb.Labels, extensionsv1beta1.WarmPoolSandboxLabel) }))},
			wantWoken: []string{testNS + "/" + testClaim},
		},
		{
			name:   "a member being deleted leaves",
			events: []event{changed(warmMember("m1", testPool)), changed(warmMember("m1", testPool, sandboxDeleting))},
		},
		{
			name:   "a deleted member leaves",
			events: []event{changed(warmMember("m1", testPool)), changed(warmMember("m2", testPool)), gone(warmMember("m1", testPool))},
			want:   map[warm.Bucket][]string{testBucket: {"m2"}},
		},
		{
			name:   "a member deleted while the watch was down (tombstone) leaves",
			events: []event{changed(warmMember("m1", testPool)), goneTombstone(warmMember("m1", testPool))},
		},
		{
			name: "a member relabelled to another template moves bucket",
			events: []event{changed(warmMember("m1", testPool)), changed(warmMember("m1", testPool, func(sb *agentsv1beta1.Sandbox) {
				sb.Labels[extensionsv1beta1.SandboxTemplateRefHashLabel] = fnvHash("node")
			}))},
			want: map[warm.Bucket][]string{nodeBucket: {"m1"}},
		},
		{
			name:   "members of other namespaces wait in their own buckets",
			events: []event{changed(warmMember("m1", testPool, inNamespace("elsewhere"))), changed(warmMember("m2", testPool))},
			want: map[warm.Bucket][]string{
				{Namespace: "elsewhere", TemplateRefHash: templateHash}: {"m1"},
				testBucket: {"m2"},
			},
		},
		{
			name:      "a claim's sandbox changing or going wakes the claim and queues nothing",
			events:    []event{changed(newSandbox(testClaim, ownedByClaim(testClaim, testClaimUID), sandboxReady("True", "DependenciesReady", ""))), gone(newSandbox("other", ownedByClaim("c2", "c2-uid")))},
			wantWoken: []string{testNS + "/" + testClaim, testNS + "/c2"},
		},
		{
			name:   "unowned sandboxes without pool labels are ignored",
			events: []event{changed(newSandbox("plain", sandboxReady("True", "DependenciesReady", ""))), gone(newSandbox("plain"))},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for _, e := range tc.events {
				switch {
				case e.tombstone:
					f.deleted(cache.DeletedFinalStateUnknown{Key: e.sb.Namespace + "/" + e.sb.Name, Obj: e.sb})
				case e.deleted:
					f.deleted(e.sb)
				default:
					f.changed(e.sb)
				}
			}
			// Objects of other types are ignored.
			f.changed(newClaim())
			f.deleted(newTemplate())

			buckets := []warm.Bucket{testBucket, nodeBucket, {Namespace: "elsewhere", TemplateRefHash: templateHash}}
			for _, b := range buckets {
				var got []string
				for range f.chooser.Queue().Len(b) {
					k, _ := f.chooser.Queue().Pop(b, nil)
					_, name, _ := cache.SplitMetaNamespaceKey(k)
					got = append(got, name)
				}
				if !slices.Equal(got, tc.want[b]) {
					t.Errorf("bucket %+v holds %q, want %q", b, got, tc.want[b])
				}
			}
			var woken []string
			for f.queue.Len() > 0 {
				k, _ := f.queue.Get()
				f.queue.Done(k)
				woken = append(woken, k)
			}
			slices.Sort(woken)
			want := slices.Clone(tc.wantWoken)
			slices.Sort(want)
			if !slices.Equal(woken, want) {
				t.Errorf("claims woken = %q, want %q", woken, want)
			}
		})
	}
}

func TestIndexes(t *testing.T) {
	f := newFixture(t,
		newClaim(),
		newClaim(named("c2", "c2-uid")),
		newClaim(named("c3", "c3-uid"), func(c *extensionsv1beta1.SandboxClaim) { c.Spec.TemplateRef.Name = "node" }),
		newSandbox("s1", ownedByClaim(testClaim, testClaimUID)),
		newSandbox("s2", ownedByClaim(testClaim, testClaimUID)),
		newSandbox("s3", ownedByClaim("c2", "c2-uid")),
		warmMember("m1", testPool),
	)
	keys, err := f.c.claimIndex.IndexKeys(byTemplate, testNS+"/"+testTemplate)
	f.must(err)
	slices.Sort(keys)
	if want := []string{testNS + "/c2", testNS + "/" + testClaim}; !slices.Equal(keys, want) {
		t.Errorf("claims of template %s = %q, want %q", testTemplate, keys, want)
	}
	var names []string
	for _, sb := range f.c.ownedSandboxes(testClaimUID) {
		names = append(names, sb.Name)
	}
	slices.Sort(names)
	if want := []string{"s1", "s2"}; !slices.Equal(names, want) {
		t.Errorf("sandboxes of %s = %q, want %q", testClaim, names, want)
	}
	if got := f.c.ownedSandboxes("nobody"); len(got) != 0 {
		t.Errorf("sandboxes of an unknown UID = %d, want 0", len(got))
	}
	if got, err := f.c.sandboxIndex.ByIndex(byController, string(poolOwnerRef(testPool).UID)); err != nil || len(got) != 1 {
		t.Errorf("the controller index should hold pool members under the pool's UID too, got %v, %v", got, err)
	}
	// A claim's sandboxes are those a SandboxClaim of that UID controls, not anything of that UID.
	if got := f.c.ownedSandboxes(poolOwnerRef(testPool).UID); len(got) != 0 {
		t.Errorf("a pool's members taken for a claim's sandboxes: %v", got)
	}
}

// TestSyncPodMetadataDrift: the claim's pod metadata is pushed to its sandbox in one update when it
// drifted, and never when it did not.
func TestSyncPodMetadataDrift(t *testing.T) {
	mine := ownedByClaim(testClaim, testClaimUID)
	desired := func(c *extensionsv1beta1.SandboxClaim) agentsv1beta1.PodMetadata {
		m, err := adoption.DesiredPodMetadata(c, newTemplate(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	withPodMeta := func(m agentsv1beta1.PodMetadata) func(*agentsv1beta1.Sandbox) {
		return func(sb *agentsv1beta1.Sandbox) { sb.Spec.PodTemplate.ObjectMeta = m }
	}
	withExtra := withExtraMeta(map[string]string{"owner": "alice"}, map[string]string{"cost-center": "1234"})
	cases := []struct {
		name       string
		claim      *extensionsv1beta1.SandboxClaim
		noTemplate bool
		podMeta    agentsv1beta1.PodMetadata
		want       *agentsv1beta1.PodMetadata // nil: no update
		wantReady  string
	}{
		{name: "in line: no update", claim: newClaim(), podMeta: desired(newClaim()), wantReady: extensionsv1beta1.ClaimReasonSandboxNotReady},
		{
			name: "claim metadata added after creation is pushed", claim: newClaim(withExtra), podMeta: desired(newClaim()),
			want: ptrMeta(desired(newClaim(withExtra))), wantReady: extensionsv1beta1.ClaimReasonSandboxNotReady,
		},
		{
			name: "a label edited on the sandbox is put back", claim: newClaim(),
			podMeta: func() agentsv1beta1.PodMetadata {
				m := desired(newClaim())
				m.Labels["app"] = "hacked"
				return m
			}(),
			want: ptrMeta(desired(newClaim())), wantReady: extensionsv1beta1.ClaimReasonSandboxNotReady,
		},
		{
			name: "template gone: the current metadata is kept plus the claim's", claim: newClaim(withExtra), noTemplate: true,
			podMeta: agentsv1beta1.PodMetadata{Labels: map[string]string{"app": "python",
				extensionsv1beta1.SandboxIDLabel: string(testClaimUID), extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash}},
			want: &agentsv1beta1.PodMetadata{
				Labels: map[string]string{"app": "python", "owner": "alice",
					extensionsv1beta1.SandboxIDLabel: string(testClaimUID), extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash},
				Annotations: map[string]string{"cost-center": "1234"},
			},
			wantReady: extensionsv1beta1.ClaimReasonSandboxNotReady,
		},
		{
			name:  "claim metadata now conflicting with the template: InvalidMetadata, sandbox untouched",
			claim: newClaim(withExtraMeta(map[string]string{"tier": "gold"}, nil)), podMeta: desired(newClaim()),
			wantReady: extensionsv1beta1.ClaimReasonInvalidMetadata,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{tc.claim, newSandbox(testClaim, mine, withPodMeta(tc.podMeta))}
			if !tc.noTemplate {
				objs = append(objs, newTemplate())
			}
			f := newFixture(t, objs...)
			f.mustSync(testClaim)
			ups := f.updatedSandboxes()
			switch {
			case tc.want == nil && len(ups) != 0:
				t.Errorf("sandbox updated to %+v, want no update", ups[0].Spec.PodTemplate.ObjectMeta)
			case tc.want != nil && len(ups) != 1:
				t.Errorf("writes = %q, want one sandbox update", f.writes())
			case tc.want != nil:
				if !apiequality.Semantic.DeepEqual(ups[0].Spec.PodTemplate.ObjectMeta, *tc.want) {
					t.Errorf("pod metadata = %+v, want %+v", ups[0].Spec.PodTemplate.ObjectMeta, *tc.want)
				}
				if ups[0].ResourceVersion != "11" {
					t.Errorf("update carries resourceVersion %q, want the cached 11", ups[0].ResourceVersion)
				}
			}
			if n := len(f.createdSandboxes()); n != 0 {
				t.Errorf("created %d sandboxes, want none", n)
			}
			st := f.lastStatus()
			if r := readyOf(t, st); r.Reason != tc.wantReady {
				t.Errorf("Ready reason = %s (%s), want %s", r.Reason, r.Message, tc.wantReady)
			}
			if st.Status.SandboxStatus.Name != testClaim {
				t.Errorf("status.sandbox.name = %q, want %q", st.Status.SandboxStatus.Name, testClaim)
			}
		})
	}
}

func ptrMeta(m agentsv1beta1.PodMetadata) *agentsv1beta1.PodMetadata { return &m }

// TestWriteStatusErrors: a stale cache (Conflict) or a claim gone meanwhile (NotFound) is not an
// error; anything else is, for a retry.
func TestWriteStatusErrors(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		wantErr bool
	}{
		{name: "conflict", err: apierrors.NewConflict(claimsGVR.GroupResource(), testClaim, fmt.Errorf("stale"))},
		{name: "not found", err: apierrors.NewNotFound(claimsGVR.GroupResource(), testClaim)},
		{name: "server error", err: apierrors.NewInternalError(fmt.Errorf("etcd unavailable")), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newClaim(), newTemplate())
			f.client.PrependReactor("update", "sandboxclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "status" {
					return false, nil, nil
				}
				return true, nil, tc.err
			})
			err := f.sync(testClaim)
			if (err != nil) != tc.wantErr {
				t.Errorf("sync error = %v, want error: %v", err, tc.wantErr)
			}
		})
	}
}

// TestSyncIgnoresBadKeysAndGoneClaims: nothing to do is not an error.
func TestSyncIgnoresBadKeysAndGoneClaims(t *testing.T) {
	f := newFixture(t, newTemplate())
	for _, key := range []string{testNS + "/missing", "a/b/c"} {
		if err := f.c.sync(t.Context(), key); err != nil {
			t.Errorf("sync(%q) = %v, want nil", key, err)
		}
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes = %q, want none", w)
	}
}

// TestSyncWaitsForSandboxCache: a bound claim synced before the sandbox cache has caught up with
// it writes nothing (no second sandbox, no status from the stale view) and is synced again later.
func TestSyncWaitsForSandboxCache(t *testing.T) {
	claim := newClaim(withClaimStatus(extensionsv1beta1.SandboxClaimStatus{SandboxStatus: extensionsv1beta1.SandboxStatus{Name: "pool-x1"}}))
	claim.ResourceVersion = "20"
	// The adopted member as the cache still has it: the pool's, at an older revision.
	member := warmMember("pool-x1", testPool, withRV("10"))
	f := newFixture(t, newTemplate(), claim, member)
	f.c.sharedRevisions = true
	f.warm(member)
	f.reset()

	f.mustSync(testClaim)
	if w := f.writes(); len(w) > 0 {
		t.Errorf("sync wrote %q before the sandbox cache caught up with the claim", w)
	}
	if reads := len(f.actionsOf("get", "sandboxes")); reads != 0 {
		t.Errorf("sync read %d sandboxes from the API, want none", reads)
	}
	if d, ok := f.queue.after[testNS+"/"+testClaim]; !ok || d != sandboxCacheRetry {
		t.Errorf("claim requeued after %v (queued: %v), want after %v", d, ok, sandboxCacheRetry)
	}
}
