// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
