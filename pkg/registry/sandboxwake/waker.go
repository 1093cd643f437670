// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandboxwake resumes suspended Sandboxes for the proxy subresources and records their
// traffic, so that an idle timeout (spec.idleTimeout, enforced by the sandbox controller) suspends
// only a Sandbox nobody uses. It writes through the Sandbox registry in this process, as the
// controllers' identity.
package sandboxwake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
)

// retryAfterSeconds is what a request that timed out waiting for a sandbox is told: the pod is
// most likely still starting.
const retryAfterSeconds = 5

// Sandboxes is the part of the Sandbox registry the Waker uses.
type Sandboxes interface {
	rest.Getter
	rest.Updater
	rest.Watcher
}

// Config is what a Waker needs from the server.
type Config struct {
	// Sandboxes is the Sandbox registry (spec writes and watches), Status its status subresource.
	Sandboxes Sandboxes
	Status    rest.Updater
	// Controllers is the identity the Waker's writes are made as.
	Controllers *trust.ControllerIdentity
	Options
}

// Waker wakes suspended Sandboxes and records proxied traffic.
type Waker struct {
	sandboxes   Sandboxes
	status      rest.Updater
	controllers *trust.ControllerIdentity
	timeout     time.Duration
	now         func() time.Time
	activity    *activity

	maxWaitersPerSandbox, maxWaiters int

	mu sync.Mutex
	// resuming holds the resume in progress of each Sandbox, by UID, that callers share.
	resuming map[types.UID]*resume
	// waits holds the watch in progress for each Sandbox and generation, that callers share.
	waits map[waitKey]*waiting
	// waitersOf counts the callers waiting for each Sandbox, waiters all of them.
	waitersOf map[types.UID]int
	waiters   int
}

// waitKey names what a shared watch waits for: the Sandbox Ready for a generation of at least
// minGeneration. A caller that needs a later generation (a Sandbox resumed again, or adopted and
// changed by a claim, while an older watch runs) gets a watch of its own, never an answer about
// the pod from before.
type waitKey struct {
	uid           types.UID
	minGeneration int64
}

// waiting is one watch that every caller waiting on its key shares; it stops when the last of
// them leaves.
type waiting struct {
	callers int
	cancel  context.CancelFunc
	done    chan struct{}
	out     *agents.Sandbox
	err     error
}

// resume is one resume write that every concurrent caller for the Sandbox waits on.
type resume struct {
	// joined counts the callers that found it in progress and wait on it.
	joined int
	done   chan struct{}
	out    *agents.Sandbox
	err    error
}

// New returns a Waker; Run starts its activity writes.
func New(c Config) *Waker {
	w := &Waker{
		sandboxes:   c.Sandboxes,
		status:      c.Status,
		controllers: c.Controllers,
		timeout:     c.WakeTimeout,
		now:         time.Now,
		resuming:    map[types.UID]*resume{},
		waits:       map[waitKey]*waiting{},
		waitersOf:   map[types.UID]int{},

		maxWaitersPerSandbox: c.MaxWaitersPerSandbox,
		maxWaiters:           c.MaxWaiters,
	}
	w.activity = newActivity(c.ActivityInterval, func() time.Time { return w.now() }, w.writeActivity)
	return w
}

// Run writes activity until ctx is done.
func (w *Waker) Run(ctx context.Context) {
	w.activity.run(ctx)
}

// Begin records that a proxied request or connection to the sandbox has started; the returned
// func records its end.
func (w *Waker) Begin(sb *agents.Sandbox) (end func()) {
	return w.activity.begin(sb.Namespace, sb.Name, sb.UID)
}

// Wake returns the Sandbox once its pod is Ready: at once when it already is. A suspended one is
// resumed (one write, however many callers wait), then watched until the controller reports it
// Ready, within the wake timeout and the caller's context. Past the timeout: a 503 with
// Retry-After. A Sandbox being deleted or past its shutdownTime is not woken: 410 Gone.
func (w *Waker) Wake(ctx context.Context, sb *agents.Sandbox) (*agents.Sandbox, error) {
	if running(sb) && ready(sb, 0) {
		return sb, nil
	}
	if err := w.wakeable(sb); err != nil {
		return nil, err
	}
	leave, err := w.admit(sb)
	if err != nil {
		return nil, err
	}
	defer leave()
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	target := sb
	if !running(sb) {
		var err error
		if target, err = w.resume(ctx, sb); err != nil {
			return nil, w.timedOut(ctx, sb, err)
		}
	}
	out, err := w.waitShared(ctx, target)
	return out, w.timedOut(ctx, sb, err)
}

// admit counts a caller that will wait for sb, within the bounds per Sandbox and per server: each
// waiter holds a request (and its connection) open for up to the wake timeout, which API priority
// and fairness does not count for long-running requests. Past a bound: 429 with Retry-After.
func (w *Waker) admit(sb *agents.Sandbox) (leave func(), err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.maxWaitersPerSandbox > 0 && w.waitersOf[sb.UID] >= w.maxWaitersPerSandbox:
		return nil, apierrors.NewTooManyRequests(fmt.Sprintf(
			"%d requests already wait for sandbox %s/%s to be Ready", w.waitersOf[sb.UID], sb.Namespace, sb.Name), retryAfterSeconds)
	case w.maxWaiters > 0 && w.waiters >= w.maxWaiters:
		return nil, apierrors.NewTooManyRequests(fmt.Sprintf(
			"%d requests already wait for sandboxes to be Ready on this server", w.waiters), retryAfterSeconds)
	}
	w.waitersOf[sb.UID]++
	w.waiters++
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.waiters--
		if w.waitersOf[sb.UID]--; w.waitersOf[sb.UID] <= 0 {
			delete(w.waitersOf, sb.UID)
		}
	}, nil
}

// waitShared waits, within ctx, for sb to be Ready for its generation on the one watch every
// caller waiting for the same shares (waitReady): a thousand callers cost one watch.
func (w *Waker) waitShared(ctx context.Context, sb *agents.Sandbox) (*agents.Sandbox, error) {
	key := waitKey{sb.UID, sb.Generation}
	w.mu.Lock()
	wt := w.waits[key]
	if wt == nil {
		// The watch has no deadline of its own: it ends when it has an answer or when its last
		// caller, each within its own timeout, leaves.
		watchCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		wt = &waiting{cancel: cancel, done: make(chan struct{})}
		w.waits[key] = wt
		go func() {
			wt.out, wt.err = w.waitReady(watchCtx, sb)
			w.mu.Lock()
			if w.waits[key] == wt {
				delete(w.waits, key)
			}
			w.mu.Unlock()
			cancel()
			close(wt.done)
		}()
	}
	wt.callers++
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if wt.callers--; wt.callers == 0 {
			wt.cancel()
			if w.waits[key] == wt {
				delete(w.waits, key)
			}
		}
	}()
	select {
	case <-wt.done:
		if wt.out != nil {
			return wt.out.DeepCopy(), wt.err
		}
		return nil, wt.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// wakeable refuses a Sandbox that will not run again.
func (w *Waker) wakeable(sb *agents.Sandbox) error {
	switch {
	case sb.DeletionTimestamp != nil:
		return apierrors.NewGone(fmt.Sprintf("sandbox %s/%s is being deleted", sb.Namespace, sb.Name))
	case sb.Spec.ShutdownTime != nil && !w.now().Before(sb.Spec.ShutdownTime.Time):
		return apierrors.NewGone(fmt.Sprintf("sandbox %s/%s passed its shutdownTime and does not run again", sb.Namespace, sb.Name))
	}
	return nil
}

// resume sets replicas 1 on a suspended Sandbox and returns it as stored. Callers for the same
// Sandbox in this replica share one write; across replicas the write is made on the latest object
// and changes nothing once another replica (or a user) has resumed it.
func (w *Waker) resume(ctx context.Context, sb *agents.Sandbox) (*agents.Sandbox, error) {
	w.mu.Lock()
	r, inProgress := w.resuming[sb.UID]
	if inProgress {
		r.joined++
	} else {
		r = &resume{done: make(chan struct{})}
		w.resuming[sb.UID] = r
	}
	w.mu.Unlock()
	if !inProgress {
		// Not cut short by the first caller going away: the others wait on it too.
		writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
		r.out, r.err = w.writeRunning(writeCtx, sb)
		cancel()
		w.mu.Lock()
		delete(w.resuming, sb.UID)
		w.mu.Unlock()
		close(r.done)
	}
	select {
	case <-r.done:
		return r.out, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// writeRunning is the resume write itself.
func (w *Waker) writeRunning(ctx context.Context, sb *agents.Sandbox) (*agents.Sandbox, error) {
	ctx = w.asControllers(ctx, sb.Namespace)
	setRunning := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		cur, ok := old.(*agents.Sandbox)
		if !ok {
			return nil, fmt.Errorf("not a Sandbox: %T", old)
		}
		if cur.UID != sb.UID {
			return nil, apierrors.NewNotFound(agents.Resource("sandboxes"), sb.Name)
		}
		if err := w.wakeable(cur); err != nil {
			return nil, err
		}
		cur = cur.DeepCopy()
		cur.Spec.Replicas = ptr.To[int32](1)
		cur.Spec.OperatingMode = agents.OperatingModeRunning
		return cur, nil
	}
	obj, _, err := w.sandboxes.Update(ctx, sb.Name, rest.DefaultUpdatedObjectInfo(nil, setRunning),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return obj.(*agents.Sandbox), nil
}

// waitReady watches the Sandbox from the version given until it is Ready for a generation no older
// than that one, so a Ready condition left from before a suspend is not taken for the new pod.
func (w *Waker) waitReady(ctx context.Context, sb *agents.Sandbox) (*agents.Sandbox, error) {
	minGeneration := sb.Generation
	ctx = w.asControllers(ctx, sb.Namespace)
	from := sb.ResourceVersion
	for {
		out, retry, err := w.watchUntilReady(ctx, sb, from, minGeneration)
		if !retry {
			return out, err
		}
		// The watch ended or could not start at that version: start again from the latest.
		obj, err := w.sandboxes.Get(ctx, sb.Name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		cur := obj.(*agents.Sandbox)
		if done, err := w.settled(cur, sb.UID, minGeneration); done {
			return cur, err
		}
		from = cur.ResourceVersion
	}
}

// watchUntilReady is one watch of waitReady; retry says it ended without an answer.
func (w *Waker) watchUntilReady(ctx context.Context, sb *agents.Sandbox, from string, minGeneration int64) (out *agents.Sandbox, retry bool, err error) {
	wi, err := w.sandboxes.Watch(ctx, &metainternalversion.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", sb.Name),
		ResourceVersion: from,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, true, nil
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil, true, nil
			}
			switch ev.Type {
			case watch.Error:
				return nil, true, nil
			case watch.Deleted:
				return nil, false, apierrors.NewNotFound(agents.Resource("sandboxes"), sb.Name)
			case watch.Added, watch.Modified:
				obj := ev.Object
				// The watch cache hands out its objects wrapped with their serializations.
				if cacheable, ok := obj.(runtime.CacheableObject); ok {
					obj = cacheable.GetObject()
				}
				cur, ok := obj.(*agents.Sandbox)
				if !ok {
					continue
				}
				if done, err := w.settled(cur, sb.UID, minGeneration); done {
					return cur, false, err
				}
			}
		}
	}
}

// settled says whether waiting is over for the Sandbox as it is now: Ready, gone or not wakeable
// any more (with the error to return).
func (w *Waker) settled(cur *agents.Sandbox, uid types.UID, minGeneration int64) (bool, error) {
	switch {
	case cur.UID != uid:
		return true, apierrors.NewNotFound(agents.Resource("sandboxes"), cur.Name)
	case running(cur) && ready(cur, minGeneration):
		return true, nil
	}
	if err := w.wakeable(cur); err != nil {
		return true, err
	}
	return false, nil
}

// timedOut turns the end of the wake timeout into a 503 with Retry-After; other errors pass.
func (w *Waker) timedOut(ctx context.Context, sb *agents.Sandbox, err error) error {
	if err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusServiceUnavailable,
		Reason:  metav1.StatusReasonServiceUnavailable,
		Message: fmt.Sprintf("sandbox %s/%s is not Ready after %s; it is still starting, retry later", sb.Namespace, sb.Name, w.timeout),
		Details: &metav1.StatusDetails{Name: sb.Name, Group: agents.GroupName, Kind: "sandboxes", RetryAfterSeconds: retryAfterSeconds},
	}}
}

// writeActivity moves status.lastActivityTime of the Sandbox forward to at. It changes only that
// field, on the latest object (retried by the registry on conflict), and never moves it back, so
// it does not fight the controller's status writes nor another replica's.
func (w *Waker) writeActivity(ctx context.Context, namespace, name string, uid types.UID, at time.Time) error {
	ctx = w.asControllers(ctx, namespace)
	setActivity := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		cur, ok := old.(*agents.Sandbox)
		if !ok {
			return nil, fmt.Errorf("not a Sandbox: %T", old)
		}
		if cur.UID != uid {
			return nil, apierrors.NewNotFound(agents.Resource("sandboxes"), name)
		}
		if last := cur.Status.LastActivityTime; last != nil && !last.Time.Before(at.Truncate(time.Second)) {
			return cur, nil
		}
		cur = cur.DeepCopy()
		cur.Status.LastActivityTime = &metav1.Time{Time: at}
		return cur, nil
	}
	_, _, err := w.status.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, setActivity),
		rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	return err
}

func (w *Waker) asControllers(ctx context.Context, namespace string) context.Context {
	return w.controllers.WithUser(genericapirequest.WithNamespace(ctx, namespace))
}

// running says whether the Sandbox is meant to run (replicas 1).
func running(sb *agents.Sandbox) bool {
	return sb.Spec.Replicas == nil || *sb.Spec.Replicas != 0
}

// ready says whether the controller reports the Sandbox Ready, for a generation of at least
// minGeneration.
func ready(sb *agents.Sandbox, minGeneration int64) bool {
	c := meta.FindStatusCondition(sb.Status.Conditions, string(agentsv1beta1.SandboxConditionReady))
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration >= minGeneration
}
