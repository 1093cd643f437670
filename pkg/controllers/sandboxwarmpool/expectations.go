// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwarmpool

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// ExpectationsTimeout is how long a pool waits for the informer to show the creates and deletes
// it issued before it acts again anyway (a lost watch event must not stall a pool for good).
const ExpectationsTimeout = 5 * time.Minute

// expectations remember, per pool key, the member creates and deletes issued and not yet observed
// by the Sandbox informer, as kube-controller-manager's ControllerExpectations do. While a pool has
// some, its cache is known to be behind its own writes, and acting on it would create or delete
// the same members twice.
//
// Creates are counted: members are named by the server, so they are not known in advance.
// Deletes are tracked by UID, so that the update that marks a member deleting and the final
// delete event count once.
type expectations struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu    sync.Mutex
	pools map[string]*expectation
}

type expectation struct {
	creates int
	deletes sets.Set[types.UID]
	since   time.Time
}

func newExpectations(clk clock.PassiveClock) *expectations {
	return &expectations{clock: clk, ttl: ExpectationsTimeout, pools: map[string]*expectation{}}
}

// expect records the creates and deletes a pool is about to issue. It is called before the
// writes, so that an informer event arriving before the call returns is not missed.
func (e *expectations) expect(key string, creates int, deletes []types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pools[key] = &expectation{creates: creates, deletes: sets.New(deletes...), since: e.clock.Now()}
}

// created lowers the creates a pool waits for: one was observed, or was not made after all.
func (e *expectations) created(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.pools[key]; x != nil && x.creates > 0 {
		x.creates--
	}
}

// deleted drops uid from the deletes a pool waits for: it was observed, or was not made after all.
func (e *expectations) deleted(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.pools[key]; x != nil {
		x.deletes.Delete(uid)
	}
}

// satisfied says whether a pool may act on its cache: it waits for nothing, or waited too long.
// When it may not, wait is how long until its expectations expire.
func (e *expectations) satisfied(key string) (ok bool, wait time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.pools[key]
	if x == nil || x.creates <= 0 && x.deletes.Len() == 0 {
		return true, 0
	}
	left := x.since.Add(e.ttl).Sub(e.clock.Now())
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// forget drops what a pool waits for, when it is gone.
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pools, key)
}
