// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwake

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// clock is a hand-moved time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time               { return c.t }
func (c *clock) step(d time.Duration)         { c.t = c.t.Add(d) }
func (c *clock) at(d time.Duration) time.Time { return start.Add(d) }

var start = time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC)

// recorder is an activityWriter that keeps what it was asked to write.
type recorder struct{ writes []time.Time }

func (r *recorder) write(_ context.Context, _, _ string, _ types.UID, at time.Time) error {
	r.writes = append(r.writes, at)
	return nil
}

// TestActivityWritesAtMostOncePerInterval: a long connection and many short requests to one
// sandbox cost one write at their start and then one per interval, whatever the number of
// requests; the end of the traffic is written once, and a quiet sandbox is not written at all.
func TestActivityWritesAtMostOncePerInterval(t *testing.T) {
	c := &clock{t: start}
	r := &recorder{}
	a := newActivity(5*time.Second, c.now, r.write)
	ctx := context.Background()

	a.flush(ctx)
	if len(r.writes) != 0 {
		t.Fatalf("no traffic, writes = %v", r.writes)
	}

	closeConn := a.begin("ns", "sb", "uid")
	a.flush(ctx) // the first activity is written at once
	// 100 short requests over 12 s, flushing every half second as a busy loop would.
	for i := 0; i < 24; i++ {
		for j := 0; j < 4; j++ {
			a.begin("ns", "sb", "uid")()
		}
		c.step(500 * time.Millisecond)
		a.flush(ctx)
	}
	want := []time.Time{c.at(0), c.at(5 * time.Second), c.at(10 * time.Second)}
	if !slices.Equal(r.writes, want) {
		t.Fatalf("writes during 12s of traffic = %v, want %v", r.writes, want)
	}

	// The connection closes at 12 s: written once its interval is over, at the time it closed.
	closeConn()
	closeConn() // a second call counts nothing
	closedAt := c.now()
	c.step(3 * time.Second)
	a.flush(ctx)
	want = append(want, closedAt)
	if !slices.Equal(r.writes, want) {
		t.Fatalf("writes after the close = %v, want %v", r.writes, want)
	}
	for i := 0; i < 10; i++ {
		c.step(5 * time.Second)
		a.flush(ctx)
	}
	if !slices.Equal(r.writes, want) {
		t.Errorf("writes once quiet = %v, want no more than %v", r.writes, want)
	}
	if n := len(a.entries); n != 0 {
		t.Errorf("%d sandboxes still tracked once quiet", n)
	}
}

// TestActivityPerSandbox: each sandbox has its own interval.
func TestActivityPerSandbox(t *testing.T) {
	c := &clock{t: start}
	var got []string
	a := newActivity(5*time.Second, c.now, func(_ context.Context, _, name string, _ types.UID, _ time.Time) error {
		got = append(got, name)
		return nil
	})
	a.begin("ns", "a", "uid-a")()
	a.begin("ns", "b", "uid-b")()
	a.flush(context.Background())
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("written = %v, want a and b once each", got)
	}
}

// TestActivityFirstRequestKicks: the first request after a quiet interval asks the loop to write
// at once rather than on its next tick.
func TestActivityFirstRequestKicks(t *testing.T) {
	c := &clock{t: start}
	written := make(chan time.Time, 10)
	a := newActivity(time.Hour, c.now, func(_ context.Context, _, _ string, _ types.UID, at time.Time) error {
		written <- at
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.run(ctx)
	a.begin("ns", "sb", "uid")()
	select {
	case at := <-written:
		if !at.Equal(start) {
			t.Errorf("wrote %v, want %v", at, start)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("first activity not written with a one-hour tick")
	}
}
