// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwarmpool

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// TestRefillWait: a pool waits refillHold after the last adoption before refilling, and never
// longer than refillHoldMax after the first one of a burst.
func TestRefillWait(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakePassiveClock(start)
	c := &Controller{clock: clk, adoptions: map[string]adoptionBurst{}}
	const key = "ns/pool"

	if got := c.refillWait(key); got != 0 {
		t.Fatalf("no adoption: wait %s, want none", got)
	}
	c.noteAdoption(key)
	if got := c.refillWait(key); got != refillHold {
		t.Fatalf("right after an adoption: wait %s, want %s", got, refillHold)
	}
	// A steady stream of adoptions, one every half second, pushes the refill back up to the cap.
	for at := 500 * time.Millisecond; at < 2*refillHoldMax; at += 500 * time.Millisecond {
		clk.SetTime(start.Add(at))
		c.noteAdoption(key)
		want := min(refillHold, refillHoldMax-at)
		if want < 0 {
			want = 0
		}
		if got := c.refillWait(key); got != want {
			t.Fatalf("adoption at +%s: wait %s, want %s", at, got, want)
		}
		if want == 0 {
			break
		}
	}
	// Once refilling may go on, the burst is forgotten: the next adoption starts a new one.
	if _, ok := c.adoptions[key]; ok {
		t.Fatal("the burst is still recorded after its refill was let through")
	}
	c.noteAdoption(key)
	if got := c.refillWait(key); got != refillHold {
		t.Fatalf("a new burst: wait %s, want %s", got, refillHold)
	}
}
