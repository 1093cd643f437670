// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwake

import (
	"context"
	"errors"
	"net/http"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
)

// fakeSandboxes holds one Sandbox. Updates wait for release, then apply their transform to it;
// every watch gets the events the test sends.
type fakeSandboxes struct {
	mu       sync.Mutex
	sb       *agents.Sandbox
	updates  atomic.Int32
	release  chan struct{}
	watchers []*watch.FakeWatcher
	watching chan struct{}
}

func (f *fakeSandboxes) Get(context.Context, string, *metav1.GetOptions) (runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sb.DeepCopy(), nil
}

func (f *fakeSandboxes) Update(ctx context.Context, _ string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, _ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	f.updates.Add(1)
	<-f.release
	f.mu.Lock()
	defer f.mu.Unlock()
	obj, err := objInfo.UpdatedObject(ctx, f.sb.DeepCopy())
	if err != nil {
		return nil, false, err
	}
	next := obj.(*agents.Sandbox)
	next.Generation++
	next.ResourceVersion = "2"
	f.sb = next
	return next.DeepCopy(), false, nil
}

func (f *fakeSandboxes) Watch(context.Context, *metainternalversion.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := watch.NewFakeWithChanSize(10, false)
	f.watchers = append(f.watchers, w)
	f.watching <- struct{}{}
	return w, nil
}

// becomeReady makes the Sandbox Ready for its current generation and tells every watch.
func (f *fakeSandboxes) becomeReady() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sb.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady", ObservedGeneration: f.sb.Generation}}
	for _, w := range f.watchers {
		w.Modify(f.sb.DeepCopy())
	}
}

func suspended() *agents.Sandbox {
	return &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sb", UID: "uid", Generation: 4, ResourceVersion: "1"},
		Spec:       agents.SandboxSpec{Replicas: ptr.To[int32](0), OperatingMode: agents.OperatingModeSuspended},
		Status: agents.SandboxStatus{Conditions: []metav1.Condition{
			// Left from before the suspend: must not count as Ready for the resumed pod.
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady", ObservedGeneration: 3},
		}},
	}
}

func newTestWaker(f *fakeSandboxes, timeout time.Duration) *Waker {
	return New(Config{Sandboxes: f, Controllers: trust.NewControllerIdentity(),
		Options: Options{WakeTimeout: timeout, ActivityInterval: time.Second}})
}

// TestWakeResumesOnce: callers that come while a Sandbox is being resumed share the one resume
// write and the one watch, and all of them get the Sandbox once it is Ready for the resumed
// generation.
func TestWakeResumesOnce(t *testing.T) {
	const callers = 10
	f := &fakeSandboxes{sb: suspended(), release: make(chan struct{}), watching: make(chan struct{}, callers)}
	w := newTestWaker(f, time.Minute)
	errs := make(chan error, callers)
	wake := func() {
		out, err := w.Wake(context.Background(), suspended())
		if err == nil && ptr.Deref(out.Spec.Replicas, 0) != 1 {
			t.Errorf("woken Sandbox has replicas %v", out.Spec.Replicas)
		}
		errs <- err
	}
	// The first caller's write is held until every other caller has joined it.
	go wake()
	waitFor(t, "the first resume write", func() bool { return f.updates.Load() == 1 })
	for range callers - 1 {
		go wake()
	}
	waitFor(t, "the other callers to join the resume", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		r := w.resuming["uid"]
		return r != nil && r.joined == callers-1
	})
	close(f.release)
	<-f.watching
	waitFor(t, "every caller to wait on the one watch", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		wt := w.waits[waitKey{"uid", 5}]
		return wt != nil && wt.callers == callers
	})
	f.becomeReady()
	for range callers {
		if err := <-errs; err != nil {
			t.Errorf("Wake: %v", err)
		}
	}
	if n := f.updates.Load(); n != 1 {
		t.Errorf("%d resume writes for %d callers, want 1", n, callers)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.watchers); n != 1 {
		t.Errorf("%d watches for %d callers, want 1", n, callers)
	}
	if f.sb.Spec.OperatingMode != agents.OperatingModeRunning {
		t.Errorf("operatingMode = %q, want Running", f.sb.Spec.OperatingMode)
	}
}

// waitFor waits, a bounded time, for a condition other goroutines make true.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		goruntime.Gosched()
	}
}

// TestWakeReadyReturnsAtOnce: a Ready Sandbox is returned without a read, write or watch.
func TestWakeReadyReturnsAtOnce(t *testing.T) {
	f := &fakeSandboxes{release: make(chan struct{}), watching: make(chan struct{})}
	sb := suspended()
	sb.Spec.Replicas = ptr.To[int32](1)
	sb.Status.Conditions[0].ObservedGeneration = 4
	out, err := newTestWaker(f, time.Minute).Wake(context.Background(), sb)
	if err != nil || out != sb {
		t.Fatalf("Wake = %v, %v; want the Sandbox itself", out, err)
	}
	if f.updates.Load() != 0 || len(f.watchers) != 0 {
		t.Errorf("a Ready Sandbox cost %d writes and %d watches", f.updates.Load(), len(f.watchers))
	}
}

// TestWakeTimeout: a Sandbox not Ready within the wake timeout is a 503 with Retry-After.
func TestWakeTimeout(t *testing.T) {
	f := &fakeSandboxes{sb: suspended(), release: make(chan struct{}), watching: make(chan struct{}, 1)}
	close(f.release)
	_, err := newTestWaker(f, 50*time.Millisecond).Wake(context.Background(), suspended())
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusServiceUnavailable {
		t.Fatalf("Wake past the timeout = %v, want a 503", err)
	}
	if d := status.Status().Details; d == nil || d.RetryAfterSeconds <= 0 {
		t.Errorf("503 without Retry-After: %+v", status.Status())
	}
}

// TestWaitersBounded: past the waiters of a sandbox, or of the server, a caller gets a 429 with
// Retry-After at once, and a place freed is taken again.
func TestWaitersBounded(t *testing.T) {
	starting := func(uid string) *agents.Sandbox {
		sb := suspended()
		sb.UID = types.UID(uid)
		sb.Spec.Replicas = ptr.To[int32](1)
		sb.Spec.OperatingMode = agents.OperatingModeRunning
		sb.Status.Conditions = nil
		return sb
	}
	f := &fakeSandboxes{sb: starting("a"), release: make(chan struct{}), watching: make(chan struct{}, 10)}
	w := New(Config{Sandboxes: f, Controllers: trust.NewControllerIdentity(), Options: Options{
		WakeTimeout: time.Minute, ActivityInterval: time.Second, MaxWaitersPerSandbox: 2, MaxWaiters: 3}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 3)
	for _, uid := range []string{"a", "a", "b"} {
		go func() {
			_, err := w.Wake(ctx, starting(uid))
			ended <- err
		}()
	}
	waitFor(t, "three waiters", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.waiters == 3
	})
	for _, tc := range []struct{ uid, why string }{{"a", "per sandbox"}, {"c", "per server"}} {
		start := time.Now()
		_, err := w.Wake(context.Background(), starting(tc.uid))
		var status apierrors.APIStatus
		if !errors.As(err, &status) || status.Status().Code != http.StatusTooManyRequests ||
			status.Status().Details == nil || status.Status().Details.RetryAfterSeconds <= 0 {
			t.Errorf("%s: Wake past the bound = %v, want a 429 with Retry-After", tc.why, err)
		}
		if time.Since(start) > time.Second {
			t.Errorf("%s: the 429 took %s", tc.why, time.Since(start))
		}
	}
	<-f.watching
	<-f.watching
	f.mu.Lock()
	if n := len(f.watchers); n != 2 {
		t.Errorf("%d watches for waiters on two sandboxes, want 2", n)
	}
	f.mu.Unlock()
	cancel()
	for range 3 {
		<-ended
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiters != 0 || len(w.waitersOf) != 0 || len(w.waits) != 0 {
		t.Errorf("after the callers left: %d waiters, %v by sandbox, %d watches", w.waiters, w.waitersOf, len(w.waits))
	}
}

// TestSharedWatchKeepsGenerationsApart: a caller that needs a newer generation (a warm sandbox
// suspended and resumed again, or changed by the claim that adopted it, while others still wait
// on the old one) is not answered by the Ready of the older pod: it waits on a watch of its own.
func TestSharedWatchKeepsGenerationsApart(t *testing.T) {
	at := func(generation int64) *agents.Sandbox {
		sb := suspended()
		sb.Generation = generation
		sb.Spec.Replicas = ptr.To[int32](1)
		sb.Status.Conditions = nil
		return sb
	}
	f := &fakeSandboxes{sb: at(4), release: make(chan struct{}), watching: make(chan struct{}, 2)}
	w := newTestWaker(f, time.Minute)
	older, newer := make(chan error, 1), make(chan error, 1)
	go func() { _, err := w.Wake(context.Background(), at(4)); older <- err }()
	<-f.watching
	go func() { _, err := w.Wake(context.Background(), at(5)); newer <- err }()
	<-f.watching
	f.becomeReady()
	if err := <-older; err != nil {
		t.Fatalf("the caller of generation 4: %v", err)
	}
	select {
	case err := <-newer:
		t.Fatalf("the caller of generation 5 was answered by generation 4's Ready: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	f.mu.Lock()
	f.sb.Generation = 5
	f.watchers = f.watchers[1:] // the older caller's watch has ended
	f.mu.Unlock()
	f.becomeReady()
	if err := <-newer; err != nil {
		t.Fatalf("the caller of generation 5: %v", err)
	}
}

// TestWakeRefusesGone: a Sandbox being deleted or past its shutdownTime is not resumed.
func TestWakeRefusesGone(t *testing.T) {
	deleting := suspended()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	expired := suspended()
	expired.Spec.ShutdownTime = &metav1.Time{Time: time.Now().Add(-time.Minute)}
	for name, sb := range map[string]*agents.Sandbox{"being deleted": deleting, "expired": expired} {
		t.Run(name, func(t *testing.T) {
			f := &fakeSandboxes{sb: sb, release: make(chan struct{}), watching: make(chan struct{}, 1)}
			_, err := newTestWaker(f, time.Minute).Wake(context.Background(), sb)
			if !apierrors.IsGone(err) {
				t.Errorf("Wake = %v, want 410 Gone", err)
			}
			if f.updates.Load() != 0 {
				t.Error("resumed anyway")
			}
		})
	}
}

func (f *fakeSandboxes) New() runtime.Object { return &agents.Sandbox{} }
