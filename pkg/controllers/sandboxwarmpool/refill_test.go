// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwarmpool

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// adoptAt plays claims taking members of a pool of ready Ready members, one every interval from
// start for as long as lasts, and returns, at each adoption, how long the refill still waits.
func adoptAt(c *Controller, clk *testingclock.FakePassiveClock, key string, start time.Time, ready int, interval, lasts time.Duration) []time.Duration {
	var waits []time.Duration
	for at := time.Duration(0); at < lasts && ready > 0; at += interval {
		clk.SetTime(start.Add(at))
		c.noteAdoption(key)
		ready--
		waits = append(waits, c.refillWait(key, ready))
	}
	return waits
}

// TestRefillWaitBurst: a burst of claims against a pool with plenty of Ready members holds the
// refill for as long as claims keep coming, refillHold past the last, with no fixed cap; the next
// burst is counted afresh.
func TestRefillWaitBurst(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakePassiveClock(start)
	c := &Controller{clock: clk, adoptions: map[string]adoptionBurst{}}
	const key = "ns/pool"

	if got := c.refillWait(key, 3000); got != 0 {
		t.Fatalf("no adoption: wait %s, want none", got)
	}
	// 3,000 claims at 100/s from a pool of 3,000: 30 s of claims, held until the pool's last
	// refillLead of claims (500 members, a hair more as the first adoption counts too) is reached.
	waits := adoptAt(c, clk, key, start, 3000, 10*time.Millisecond, 30*time.Second)
	for i, wait := range waits {
		ready := 3000 - i - 1
		switch {
		case ready >= 510 && wait != refillHold:
			t.Fatalf("adoption %d, %d Ready left: wait %s, want %s", i+1, ready, wait, refillHold)
		case ready < 500 && wait != 0:
			t.Fatalf("adoption %d, %d Ready left (below the low-water mark): wait %s, want none", i+1, ready, wait)
		}
	}
	if _, ok := c.adoptions[key]; !ok {
		t.Fatal("the burst is forgotten while its claims still come")
	}
	// The claims stop with the pool still well stocked: the refill waits refillHold, then goes.
	clk.SetTime(start.Add(time.Minute))
	c.adoptions[key] = adoptionBurst{first: start, last: start.Add(time.Minute), adoptions: 10}
	clk.SetTime(start.Add(time.Minute + refillHold/2))
	if got := c.refillWait(key, 2990); got != refillHold/2 {
		t.Fatalf("half a hold after the last adoption: wait %s, want %s", got, refillHold/2)
	}
	clk.SetTime(start.Add(time.Minute + refillHold))
	if got := c.refillWait(key, 2990); got != 0 {
		t.Fatalf("a hold after the last adoption: wait %s, want none", got)
	}
	if _, ok := c.adoptions[key]; ok {
		t.Fatal("the burst is still recorded after its refill was let through")
	}
	c.noteAdoption(key)
	if got := c.refillWait(key, 2989); got != refillHold {
		t.Fatalf("a new burst: wait %s, want %s", got, refillHold)
	}
}

// TestRefillWaitShortBurst: a burst shorter than refillSustain (300 claims at 130/s from a pool
// of 300, the warm benchmark's burst) is served from the members without a refill beside it,
// however far below the low-water mark they fall, until the last member is taken.
func TestRefillWaitShortBurst(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakePassiveClock(start)
	c := &Controller{clock: clk, adoptions: map[string]adoptionBurst{}}
	const key = "ns/pool"

	waits := adoptAt(c, clk, key, start, 300, time.Second/130, refillSustain)
	if len(waits) != 300 {
		t.Fatalf("%d adoptions played, want 300", len(waits))
	}
	for i, wait := range waits[:299] {
		if wait != refillHold {
			t.Fatalf("adoption %d, %d Ready left: wait %s, want %s", i+1, 300-i-1, wait, refillHold)
		}
	}
	if got := waits[299]; got != 0 {
		t.Fatalf("the pool's last member taken: wait %s, want none", got)
	}
}

// TestRefillWaitSteadyStream: claims at 30/s from a pool of 200 (issue 13's churn) must not
// starve the pool: the refill goes on once the claims have kept coming for refillSustain and the
// Ready members cover less than refillLead of them, with more than half the pool still Ready, and
// keeps going while they stay that low.
func TestRefillWaitSteadyStream(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakePassiveClock(start)
	c := &Controller{clock: clk, adoptions: map[string]adoptionBurst{}}
	const key = "ns/pool"

	waits := adoptAt(c, clk, key, start, 200, time.Second/30, 10*time.Second)
	first := -1
	for i, wait := range waits {
		if wait == 0 && first < 0 {
			first = i
		}
		if first >= 0 && wait != 0 {
			t.Fatalf("adoption %d: the refill waits %s again with %d Ready left", i+1, wait, 200-i-1)
		}
	}
	if first < 0 {
		t.Fatal("a steady stream of 30 claims/s held the refill of a pool of 200 until it ran dry")
	}
	if at := time.Duration(first) * (time.Second / 30); at > refillSustain+time.Second/30 {
		t.Fatalf("the refill of a pool of 200 under 30 claims/s started %s into the stream, after %d claims", at, first+1)
	}
	if ready := 200 - first - 1; ready <= 100 {
		t.Fatalf("the refill of a pool of 200 under 30 claims/s started with %d Ready left", ready)
	}
}

// TestForgetPoolDropsItsBurst: a pool deleted during a burst leaves no burst behind, so a new pool
// of the same name refills at once.
func TestForgetPoolDropsItsBurst(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := &Controller{clock: clk, adoptions: map[string]adoptionBurst{}, exp: newExpectations(clk), missing: map[string]string{}}
	const key = "ns/pool"
	c.noteAdoption(key)
	c.forget(key)
	if got := c.refillWait(key, 100); got != 0 {
		t.Fatalf("after the pool was forgotten: wait %s, want none", got)
	}
}
