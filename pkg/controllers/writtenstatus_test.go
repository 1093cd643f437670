// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestWritten(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewWrittenStatus(func(a, b string) bool { return a == b })
	c.now = func() time.Time { return now }

	if c.Written("a", "1", "ready") {
		t.Fatal("nothing written yet, but Written says so")
	}
	c.Wrote("a", "5", "ready")
	if !c.Written("a", "4", "ready") {
		t.Error("the same status against a cache behind the write: want it known as written")
	}
	if c.Written("a", "4", "not-ready") {
		t.Error("a different status against a cache behind the write: want it written")
	}
	if c.Written("b", "4", "ready") {
		t.Error("another object: want its status written")
	}
	if c.Written("a", "5", "ready") {
		t.Error("the cache shows the write: want the cache trusted again")
	}
	if c.Written("a", "4", "ready") {
		t.Error("the entry was dropped once the cache caught up, but Written still says written")
	}

	c.Wrote("a", "7", "ready")
	now = now.Add(trustFor)
	if c.Written("a", "6", "ready") {
		t.Errorf("a write %s old is still trusted over the cache", trustFor)
	}

	c.Wrote("a", "9", "ready")
	c.Forget(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: &metav1.ObjectMeta{UID: "a"}})
	if c.Written("a", "8", "ready") {
		t.Error("an object deleted (seen as a tombstone) is still known as written")
	}
}

func TestSameConditions(t *testing.T) {
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady", ObservedGeneration: 2,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	later := ready
	later.LastTransitionTime = metav1.NewTime(ready.LastTransitionTime.Add(time.Second))
	otherGeneration := ready
	otherGeneration.ObservedGeneration = 3
	finished := metav1.Condition{Type: "Finished", Status: metav1.ConditionTrue, Reason: "PodSucceeded"}
	cases := []struct {
		name string
		a, b []metav1.Condition
		want bool
	}{
		{"only the transition time differs", []metav1.Condition{ready}, []metav1.Condition{later}, true},
		{"the observed generation differs", []metav1.Condition{ready}, []metav1.Condition{otherGeneration}, false},
		{"one condition more", []metav1.Condition{ready}, []metav1.Condition{ready, finished}, false},
		{"both empty", nil, []metav1.Condition{}, true},
	}
	for _, tc := range cases {
		if got := SameConditions(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SameConditions = %v, want %v", tc.name, got, tc.want)
		}
	}
}
