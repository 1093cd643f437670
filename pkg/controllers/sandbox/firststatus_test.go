// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	agentsfake "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
)

// TestFirstStatusHeldWhilePodStarts: the first status of a new Sandbox waits up to the delay for
// the pod the controller just created, so a fast start is one status write (Ready) instead of
// two; a pod still starting when the delay is over gets its not-ready status then.
func TestFirstStatusHeldWhilePodStarts(t *testing.T) {
	const delay = time.Second
	key := testNS + "/" + testName

	t.Run("a pod Ready within the delay: one status write, Ready", func(t *testing.T) {
		f := newFixture(t, world{sandbox: newSandbox(), firstStatusDelay: delay})
		if err := f.sync(); err != nil {
			t.Fatal(err)
		}
		if got, want := f.writes(), []string{"create pods"}; !slices.Equal(got, want) {
			t.Fatalf("first sync writes = %q, want %q (status held back)", got, want)
		}
		if n := len(f.queue.after); n != 1 || f.queue.after[0].key != key || f.queue.after[0].d != delay {
			t.Fatalf("requeues = %+v, want %s after %s", f.queue.after, key, delay)
		}
		makeReady(t, f)
		f.refreshCaches()
		if err := f.sync(); err != nil {
			t.Fatal(err)
		}
		if got, want := f.writes(), []string{"update sandboxes/status"}; !slices.Equal(got, want) {
			t.Fatalf("second sync writes = %q, want %q", got, want)
		}
		if c := findCond(f.status().Conditions, readyType); c == nil || c.Status != metav1.ConditionTrue {
			t.Fatalf("Ready = %+v, want True", c)
		}
	})

	t.Run("a pod still starting after the delay: the not-ready status is written", func(t *testing.T) {
		f := newFixture(t, world{sandbox: newSandbox(), firstStatusDelay: delay})
		if err := f.sync(); err != nil {
			t.Fatal(err)
		}
		f.refreshCaches()
		f.c.now = func() time.Time { return testNow.Add(delay) }
		if err := f.sync(); err != nil {
			t.Fatal(err)
		}
		if got, want := f.writes(), []string{"update sandboxes/status"}; !slices.Equal(got, want) {
			t.Fatalf("writes after the delay = %q, want %q", got, want)
		}
		if c := findCond(f.status().Conditions, readyType); c == nil || c.Status != metav1.ConditionFalse {
			t.Fatalf("Ready = %+v, want False while the pod starts", c)
		}
	})

	t.Run("an error is written at once", func(t *testing.T) {
		f := newFixture(t, world{sandbox: newSandbox(), firstStatusDelay: delay,
			cached: []runtime.Object{newPod(testName, ownedByOther)}})
		if err := f.sync(); err == nil {
			t.Fatal("want the ownership conflict")
		}
		if got := f.writes(); !slices.Contains(got, "update sandboxes/status") {
			t.Fatalf("writes = %q, want the ReconcilerError status at once", got)
		}
	})
}

// makeReady turns the fake cluster's pod of the test Sandbox Running and Ready with an IP.
func makeReady(t *testing.T, f *fixture) {
	t.Helper()
	pod, err := f.kube.CoreV1().Pods(testNS).Get(t.Context(), testName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	readyPod("10.0.0.9")(pod)
	if _, err := f.kube.CoreV1().Pods(testNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestStatusNotWrittenAgainFromStaleCache: a sync from a cache that has not yet seen the
// controller's own status write does not write that status again (it could only conflict), and
// once the cache shows the write, a change is written as usual.
func TestStatusNotWrittenAgainFromStaleCache(t *testing.T) {
	// The API answers a status write with a new resourceVersion, as the server does.
	bumpResourceVersion := func(_ *kubefake.Clientset, client *agentsfake.Clientset) {
		client.PrependReactor("update", "sandboxes", func(a clienttesting.Action) (bool, runtime.Object, error) {
			sb := a.(clienttesting.UpdateAction).GetObject().(*agentsv1beta1.Sandbox).DeepCopy()
			sb.ResourceVersion = "11"
			return true, sb, client.Tracker().Update(a.GetResource(), sb, a.GetNamespace())
		})
	}
	f := newFixture(t, world{sandbox: newSandbox(), cached: []runtime.Object{newPod(testName, owned, readyPod("10.0.0.9"))},
		reactors: bumpResourceVersion})
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.writes(), []string{"update sandboxes/status"}; !slices.Equal(got, want) {
		t.Fatalf("first sync writes = %q, want %q", got, want)
	}
	// The cache still holds the Sandbox at resourceVersion 10, without the Ready status.
	f.client.ClearActions()
	f.c.now = func() time.Time { return testNow.Add(time.Second) } // a later transition time
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.writes(); len(got) != 0 {
		t.Fatalf("sync from the stale cache writes %q, want nothing", got)
	}

	f.refreshCaches() // now at resourceVersion 11, Ready
	pod, err := f.kube.CoreV1().Pods(testNS).Get(t.Context(), testName, metav1.GetOptions{})
	f.must(err)
	pod.Status.Phase = corev1.PodSucceeded
	_, err = f.kube.CoreV1().Pods(testNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
	f.must(err)
	f.refreshCaches()
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.writes(), []string{"update sandboxes/status"}; !slices.Equal(got, want) {
		t.Fatalf("after the pod finished, writes = %q, want %q", got, want)
	}
}

// TestCreatedSuspendedNeedsNoStatusWrite: a Sandbox created suspended is stored with its status
// (the server's create strategy), so the controller has nothing to make and nothing to write.
func TestCreatedSuspendedNeedsNoStatusWrite(t *testing.T) {
	created := metav1.NewTime(testNow.Add(-time.Second))
	ready, suspended := agentsv1beta1.SuspendedConditions(testGen)
	ready.LastTransitionTime, suspended.LastTransitionTime = created, created
	f := newFixture(t, world{sandbox: newSandbox(func(sb *agentsv1beta1.Sandbox) {
		sb.Spec.Replicas = ptr.To[int32](0)
		sb.Status.Conditions = []metav1.Condition{ready, suspended}
	})})
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.writes(); len(got) != 0 {
		t.Fatalf("writes = %q, want none", got)
	}
}
