// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apiserver"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/cmd/server"
	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

// internalSandbox is a Sandbox as the registry (and so the proxy) hands it to the Waker.
func internalSandbox(t *testing.T, sb *agentsv1beta1.Sandbox) *agents.Sandbox {
	t.Helper()
	out := &agents.Sandbox{}
	if err := apiserver.Scheme.Convert(sb, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWakeResumesOnce: many concurrent wakes of a suspended Sandbox make one spec write
// (generation moves by one, one watch event sets replicas 1), and every caller gets the Sandbox
// once the controller reports it Ready for that generation.
func TestWakeResumesOnce(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := testContext(t)
	const ns, callers = "wake", 20
	sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
	sb := newSandbox(ns, "sleepy")
	sb.Spec.Replicas = ptr.To[int32](0)
	created, err := sandboxes.Create(ctx, sb, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := sandboxes.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			out, err := s.Waker.Wake(ctx, internalSandbox(t, created))
			if err == nil && (ptr.Deref(out.Spec.Replicas, 0) != 1 || out.Spec.OperatingMode != agents.OperatingModeRunning) {
				t.Errorf("woken Sandbox: replicas %v, operatingMode %q", out.Spec.Replicas, out.Spec.OperatingMode)
			}
			errs <- err
		})
	}

	// Play the controller: once replicas is 1, report the pod Ready for that generation.
	var resumed *agentsv1beta1.Sandbox
	for resumed == nil {
		ev := <-w.ResultChan()
		if got := ev.Object.(*agentsv1beta1.Sandbox); ev.Type == watch.Modified && ptr.Deref(got.Spec.Replicas, 0) == 1 {
			resumed = got
		}
	}
	if resumed.Generation != created.Generation+1 {
		t.Errorf("generation %d after the wake, want %d: one spec write", resumed.Generation, created.Generation+1)
	}
	resumed.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "DependenciesReady",
		ObservedGeneration: resumed.Generation, LastTransitionTime: metav1.Now()}}
	if _, err := s.ControllerClient.AgentsV1beta1().Sandboxes(ns).UpdateStatus(ctx, resumed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Wake: %v", err)
		}
	}
	final, err := sandboxes.Get(ctx, "sleepy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if final.Generation != created.Generation+1 {
		t.Errorf("generation %d once every caller returned, want %d", final.Generation, created.Generation+1)
	}
}

// TestActivityWrittenPerInterval: hundreds of proxied requests over three seconds, with a
// connection held open throughout, cost at most one status.lastActivityTime write per interval
// (1s here), and the last write is no earlier than the end of the traffic's last second.
func TestActivityWrittenPerInterval(t *testing.T) {
	t.Parallel()
	s := framework.StartServerWith(t, t.TempDir(), func(o *server.Options) { o.Wake.ActivityInterval = time.Second })
	ctx := testContext(t)
	const ns = "activity"
	sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
	created, err := sandboxes.Create(ctx, newSandbox(ns, "busy"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := sandboxes.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const duration = 3 * time.Second
	sb := internalSandbox(t, created)
	closeConn := s.Waker.Begin(sb)
	began := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	requests := 0
	for time.Since(began) < duration {
		<-tick.C
		s.Waker.Begin(sb)()
		requests++
	}
	tick.Stop()
	closeConn()
	ended := time.Now()

	// Writes land at most 1.5 intervals apart; wait for one that covers the end of the traffic.
	var writes []time.Time
	for len(writes) == 0 || writes[len(writes)-1].Before(ended.Truncate(time.Second)) {
		ev := <-w.ResultChan()
		got, ok := ev.Object.(*agentsv1beta1.Sandbox)
		if !ok || got.Status.LastActivityTime == nil {
			continue
		}
		if n := len(writes); n == 0 || !got.Status.LastActivityTime.Time.Equal(writes[n-1]) {
			writes = append(writes, got.Status.LastActivityTime.Time)
		}
	}
	// One at the start, then one per interval, and the end: at most duration/interval + 2.
	if max := int(duration/time.Second) + 2; len(writes) > max || len(writes) < 2 {
		t.Errorf("%d requests over %s wrote lastActivityTime %d times (%v), want 2 to %d", requests, duration, len(writes), writes, max)
	}
	if first := writes[0]; first.Before(began.Truncate(time.Second)) || first.After(began.Add(time.Second)) {
		t.Errorf("first activity written %v, want the start of the traffic %v", first, began)
	}
}
