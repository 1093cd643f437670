// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwake

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// activityWriter records that a sandbox saw traffic at a time.
type activityWriter func(ctx context.Context, namespace, name string, uid types.UID, at time.Time) error

// activity counts the proxied requests and connections of each sandbox in this replica and turns
// them into at most one status.lastActivityTime write per sandbox per interval: at once for the
// first activity after a quiet interval (so an idle deadline about to pass is pushed back without
// delay), then about every interval while requests or connections last, and once more for the end
// of the last one.
type activity struct {
	interval time.Duration
	now      func() time.Time
	write    activityWriter

	mu      sync.Mutex
	entries map[types.UID]*activityEntry
	// kick asks the flush loop to look now, for a first activity.
	kick chan struct{}
}

type activityEntry struct {
	namespace, name string
	// open is the number of requests and connections in progress.
	open int
	// last is when one last began or ended.
	last time.Time
	// wroteAt is when this replica last wrote the sandbox's activity; written is the time it wrote.
	wroteAt, written time.Time
}

func newActivity(interval time.Duration, now func() time.Time, write activityWriter) *activity {
	return &activity{interval: interval, now: now, write: write, entries: map[types.UID]*activityEntry{}, kick: make(chan struct{}, 1)}
}

// begin counts a request or connection to the sandbox until the returned func is called (once;
// later calls do nothing).
func (a *activity) begin(namespace, name string, uid types.UID) (end func()) {
	a.mu.Lock()
	now := a.now()
	e := a.entries[uid]
	if e == nil {
		e = &activityEntry{namespace: namespace, name: name}
		a.entries[uid] = e
	}
	e.open++
	e.last = now
	due := now.Sub(e.wroteAt) >= a.interval
	a.mu.Unlock()
	if due {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			e.open--
			e.last = a.now()
			a.mu.Unlock()
		})
	}
}

// activityWrite is one write flush decided on.
type activityWrite struct {
	namespace, name string
	uid             types.UID
	at              time.Time
}

// due takes the writes to make now: for each sandbox with activity not yet written and no write in
// the last interval, now while requests or connections are open, else the end of the last one.
// Sandboxes with nothing left to write are forgotten once their interval is over.
func (a *activity) due() []activityWrite {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	var out []activityWrite
	for uid, e := range a.entries {
		if now.Sub(e.wroteAt) < a.interval {
			continue
		}
		switch {
		case e.open > 0:
			out = append(out, activityWrite{e.namespace, e.name, uid, now})
			e.wroteAt, e.written = now, now
		case e.last.After(e.written):
			out = append(out, activityWrite{e.namespace, e.name, uid, e.last})
			e.wroteAt, e.written = now, e.last
		default:
			delete(a.entries, uid)
		}
	}
	return out
}

// flush writes what is due. A failed write is logged and not retried: the next one is at most an
// interval away while the traffic lasts.
func (a *activity) flush(ctx context.Context) {
	for _, w := range a.due() {
		if err := a.write(ctx, w.namespace, w.name, w.uid, w.at); err != nil {
			klog.FromContext(ctx).V(2).Info("Writing sandbox activity failed", "sandbox", klog.KRef(w.namespace, w.name), "err", err)
		}
	}
}

// run flushes every half interval, and at once on a first activity, until ctx is done.
func (a *activity) run(ctx context.Context) {
	tick := time.NewTicker(a.interval / 2)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-a.kick:
		}
		a.flush(ctx)
	}
}
