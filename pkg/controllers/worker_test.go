// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// waitLimit only bounds a hung test; nothing waits for it to pass.
const waitLimit = 30 * time.Second

func TestEnqueue(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	cases := []struct {
		name string
		obj  any
		want string // "" for nothing queued
	}{
		{"namespaced object", pod, "ns/p"},
		{"cluster-scoped object", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, "n"},
		{"deletion tombstone", cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: pod}, "ns/gone"},
		{"not an object", 42, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := NewWorkLoop("enqueue-test", func(context.Context, string) error { return nil })
			defer l.Queue.ShutDown()
			l.Enqueue(tc.obj)
			if tc.want == "" {
				if l.Queue.Len() != 0 {
					t.Errorf("queue length = %d, want 0", l.Queue.Len())
				}
				return
			}
			if l.Queue.Len() != 1 {
				t.Fatalf("queue length = %d, want 1", l.Queue.Len())
			}
			if key, _ := l.Queue.Get(); key != tc.want {
				t.Errorf("queued %q, want %q", key, tc.want)
			}
		})
	}
}

type call struct {
	n        int
	key      string
	requeues int
}

// TestRunRetriesWithBackoffThenForgets: a failing sync is retried through the rate limiter (one
// requeue counted), and a success forgets the key's failures.
func TestRunRetriesWithBackoffThenForgets(t *testing.T) {
	calls := make(chan call, 10)
	var l *WorkLoop
	n := 0 // only the single worker touches it
	l = NewWorkLoop("retry-test", func(_ context.Context, key string) error {
		n++
		calls <- call{n, key, l.Queue.NumRequeues(key)}
		if n == 1 {
			return errors.New("transient")
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, 1)
	}()
	l.Queue.Add("ns/a")

	receive := func() call {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(waitLimit):
			t.Fatal("sync was not called")
			return call{}
		}
	}
	if c := receive(); c != (call{1, "ns/a", 0}) {
		t.Errorf("first call = %+v, want the key with no requeues", c)
	}
	if c := receive(); c != (call{2, "ns/a", 1}) {
		t.Errorf("second call = %+v, want the key requeued once by the rate limiter", c)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("Run did not return after the context was cancelled")
	}
	if got := l.Queue.NumRequeues("ns/a"); got != 0 {
		t.Errorf("requeues after a success = %d, want 0 (forgotten)", got)
	}
	select {
	case c := <-calls:
		t.Errorf("unexpected further call %+v", c)
	default:
	}
}

// TestRunDeduplicates: a key queued twice before a worker picks it up is synced once.
func TestRunDeduplicates(t *testing.T) {
	calls := make(chan string, 10)
	l := NewWorkLoop("dedup-test", func(_ context.Context, key string) error {
		calls <- key
		return nil
	})
	l.Queue.Add("ns/a")
	l.Queue.Add("ns/a")
	l.Queue.Add("ns/b")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, 1)
	}()
	got := map[string]int{}
	for range 2 {
		select {
		case k := <-calls:
			got[k]++
		case <-time.After(waitLimit):
			t.Fatal("sync was not called")
		}
	}
	cancel()
	<-done
	close(calls) // the worker has stopped: nothing sends any more
	for k := range calls {
		got[k]++
	}
	if got["ns/a"] != 1 || got["ns/b"] != 1 || len(got) != 2 {
		t.Errorf("syncs = %v, want each key once", got)
	}
}

// TestRunWaitsForCaches: without synced caches no key is handed to sync, and Run returns when
// the context ends.
func TestRunWaitsForCaches(t *testing.T) {
	synced := false
	l := NewWorkLoop("unsynced-test", func(context.Context, string) error {
		synced = true
		return nil
	})
	l.Queue.Add("ns/a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, 1, func() bool { return false })
	}()
	select {
	case <-done:
	case <-time.After(waitLimit):
		t.Fatal("Run did not return")
	}
	if synced {
		t.Error("sync ran before the caches had synced")
	}
}
