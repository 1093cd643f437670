// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

const otherFinalizer = "example.com/keep"

func withFinalizers(f ...string) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.Finalizers = f }
}

func TestSyncFinalizer(t *testing.T) {
	gone := func(sb *agentsv1beta1.Sandbox) {
		withService(ptr.To(true))(sb)
		withVCT("data", "cache")(sb)
		withFinalizers(otherFinalizer, Finalizer)(sb)
		deleting(sb)
	}
	children := func(o ownerKind, podMods ...func(*corev1.Pod)) []runtime.Object {
		return []runtime.Object{newPod(testName, o, podMods...), newService(o), newPVC("data", o), newPVC("cache", o)}
	}
	withoutPod := func(objs []runtime.Object) []runtime.Object { return objs[1:] }
	wantDeletes := func(resource string, want map[string]types.UID) func(t *testing.T, f *fixture) {
		return func(t *testing.T, f *fixture) {
			t.Helper()
			if got := deletes(&f.kube.Fake, resource); !maps.Equal(got, want) {
				t.Errorf("%s deletes = %v, want %v", resource, got, want)
			}
		}
	}
	all := func(checks ...func(*testing.T, *fixture)) func(*testing.T, *fixture) {
		return func(t *testing.T, f *fixture) {
			for _, c := range checks {
				c(t, f)
			}
		}
	}
	claimsDeleted := wantDeletes("persistentvolumeclaims", map[string]types.UID{"data-sb": "data-pvc-uid", "cache-sb": "cache-pvc-uid"})
	finalizersLeft := func(want ...string) func(*testing.T, *fixture) {
		return func(t *testing.T, f *fixture) {
			sb := written[*agentsv1beta1.Sandbox](t, &f.client.Fake, "update", "sandboxes")
			if !slices.Equal(sb.Finalizers, want) {
				t.Errorf("finalizers = %q, want %q", sb.Finalizers, want)
			}
		}
	}
	runSyncCases(t, []syncCase{
		{
			name:       "a Sandbox without the finalizer gets it in one update and nothing else happens",
			sandbox:    newSandbox(withFinalizers(otherFinalizer), withService(ptr.To(true)), withVCT("data")),
			wantWrites: []string{"update sandboxes"},
			check:      finalizersLeft(otherFinalizer, Finalizer),
		},
		{
			name:       "a Sandbox without any finalizer gets ours",
			sandbox:    newSandbox(withFinalizers()),
			wantWrites: []string{"update sandboxes"},
			check:      finalizersLeft(Finalizer),
		},
		{
			name:       "deleted with its pod cached: pod, Service and claims deleted, finalizer kept",
			sandbox:    newSandbox(gone),
			cached:     children(owned, readyPod("10.0.0.5")),
			wantWrites: []string{"delete pods", "delete services", "delete persistentvolumeclaims", "delete persistentvolumeclaims"},
			check: all(wantDeletes("pods", map[string]types.UID{testName: "sb-pod-uid"}),
				wantDeletes("services", map[string]types.UID{testName: "svc-uid"}), claimsDeleted),
		},
		{
			name:       "deleted, pod still terminating: not deleted again, finalizer kept",
			sandbox:    newSandbox(gone),
			cached:     []runtime.Object{newPod(testName, owned, terminating)},
			wantWrites: nil,
			steady:     true,
		},
		{
			name:       "deleted, pod gone: Service and claims deleted, our finalizer removed, others kept",
			sandbox:    newSandbox(gone),
			cached:     withoutPod(children(owned)),
			wantWrites: []string{"delete services", "delete persistentvolumeclaims", "delete persistentvolumeclaims", "update sandboxes"},
			check: all(wantDeletes("services", map[string]types.UID{testName: "svc-uid"}), claimsDeleted,
				finalizersLeft(otherFinalizer)),
		},
		{
			name:       "deleted, nothing left: finalizer removed",
			sandbox:    newSandbox(gone),
			wantWrites: []string{"update sandboxes"},
			check:      finalizersLeft(otherFinalizer),
			steady:     true,
		},
		{
			name:       "deleted, children controlled by others: none deleted, finalizer removed",
			sandbox:    newSandbox(gone),
			cached:     children(ownedByOther, readyPod("10.0.0.5")),
			wantWrites: []string{"update sandboxes"},
			check:      finalizersLeft(otherFinalizer),
		},
		{
			name:       "deleted, unowned children: none deleted, finalizer removed",
			sandbox:    newSandbox(gone),
			cached:     children(unowned, readyPod("10.0.0.5")),
			wantWrites: []string{"update sandboxes"},
			check:      finalizersLeft(otherFinalizer),
		},
		{
			name:    "deleted, a claim already terminating is not deleted again",
			sandbox: newSandbox(gone),
			cached: []runtime.Object{newPVC("data", owned, func(c *corev1.PersistentVolumeClaim) {
				c.DeletionTimestamp = &metav1.Time{Time: testNow}
			}), newPVC("cache", owned)},
			wantWrites: []string{"delete persistentvolumeclaims", "update sandboxes"},
			check:      wantDeletes("persistentvolumeclaims", map[string]types.UID{"cache-sb": "cache-pvc-uid"}),
		},
		{
			name:       "deleted, the pod named by the pod-name annotation is the one deleted",
			sandbox:    newSandbox(gone, withAnnotation(podNameAnnot, "warm-1")),
			cached:     []runtime.Object{newPod("warm-1", owned)},
			wantWrites: []string{"delete pods"},
			check:      wantDeletes("pods", map[string]types.UID{"warm-1": "warm-1-pod-uid"}),
		},
		{
			name:       "deleted without our finalizer: nothing to do",
			sandbox:    newSandbox(gone, withFinalizers(otherFinalizer)),
			cached:     children(owned, readyPod("10.0.0.5")),
			wantWrites: nil,
		},
		{
			name:       "deleted and expired: finalized, not expired",
			sandbox:    newSandbox(gone, withShutdown(-1, deletePolicy)),
			wantWrites: []string{"update sandboxes"},
			check:      finalizersLeft(otherFinalizer),
		},
	})
}

// TestFinalizeSequence deletes a Sandbox and follows it until the finalizer is gone.
func TestFinalizeSequence(t *testing.T) {
	sb := newSandbox(withVCT("data"), withService(ptr.To(true)), deleting)
	f := newFixture(t, world{sandbox: sb, cached: []runtime.Object{newPod(testName, owned), newService(owned), newPVC("data", owned)}})
	f.must(f.sync())
	if got, want := f.writes(), []string{"delete pods", "delete services", "delete persistentvolumeclaims"}; !slices.Equal(got, want) {
		t.Fatalf("first sync writes = %q, want %q", got, want)
	}
	f.refreshCaches()
	f.must(f.sync())
	if got, want := f.writes(), []string{"update sandboxes"}; !slices.Equal(got, want) {
		t.Fatalf("second sync writes = %q, want %q", got, want)
	}
	f.refreshCaches()
	if fins := f.cachedSandbox().Finalizers; len(fins) != 0 {
		t.Errorf("finalizers = %q, want none", fins)
	}
	f.must(f.sync())
	if got := f.writes(); len(got) != 0 {
		t.Errorf("third sync writes = %q, want nothing", got)
	}
}

// TestSyncKeys: keys of Sandboxes that are not (or no longer) there are done without error.
func TestSyncKeys(t *testing.T) {
	f := newFixture(t, world{})
	for _, key := range []string{testNS + "/missing", "a/b/c"} {
		if err := f.c.sync(context.Background(), key); err != nil {
			t.Errorf("sync(%q) = %v, want nil", key, err)
		}
	}
	if got := f.writes(); len(got) != 0 {
		t.Errorf("writes = %q, want nothing", got)
	}
}
