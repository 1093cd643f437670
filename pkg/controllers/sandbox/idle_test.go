// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	agentsfake "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

const idleEvent = "Normal IdleSuspended No request through the proxy for 30m0s (spec.idleTimeout); suspended, volumes kept"

// readySince is a running status whose Ready condition turned True d ago, with the last proxied
// activity at activity ago (none when negative).
func readySince(d, activity time.Duration) agentsv1beta1.SandboxStatus {
	st := *runningStatus("10.0.0.5")
	ready := cond(readyType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service is not required")
	ready.LastTransitionTime = metav1.NewTime(testNow.Add(-d))
	st.Conditions = []metav1.Condition{ready}
	if activity >= 0 {
		st.LastActivityTime = &metav1.Time{Time: testNow.Add(-activity)}
	}
	return st
}

func withIdleTimeout(d time.Duration) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.Spec.IdleTimeout = &metav1.Duration{Duration: d} }
}

// idleRequeues are the waits the sync asked for that could be the idle deadline (expiry
// requeues are not set in these tests).
func idleRequeues(f *fixture) []time.Duration {
	var out []time.Duration
	for _, d := range f.queue.after {
		out = append(out, d.d)
	}
	return out
}

// TestIdleSuspend: a Ready Sandbox whose idle timeout has passed since the later of its last
// activity and its readiness is suspended as a user's suspend is (spec write, pod deleted,
// volumes kept), with an event and Ready=False IdleSuspended; one not yet idle is looked at
// again exactly when it would be, and the exempt ones are left alone with no requeue.
func TestIdleSuspend(t *testing.T) {
	children := func() []runtime.Object {
		return []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5")), newPVC("data", owned)}
	}
	idleSuspendedReady := want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonIdleSuspended, "Sandbox is suspend*")
	cases := []struct {
		name        string
		sandbox     *agentsv1beta1.Sandbox
		reactors    func(kube *kubefake.Clientset, client *agentsfake.Clientset)
		wantWrites  []string
		wantEvents  []string
		wantRequeue []time.Duration
	}{
		{
			// An adopted warm member or a timeout just set: Ready for long, never used.
			name:        "no activity ever: the clock starts now (lastActivityTime written), due in 30m",
			sandbox:     newSandbox(withVCT("data"), withIdleTimeout(30*time.Minute), withStatus(readySince(time.Hour, -1))),
			wantWrites:  []string{"update sandboxes/status"},
			wantRequeue: []time.Duration{30 * time.Minute},
		},
		{
			name:       "activity an hour ago: suspended",
			sandbox:    newSandbox(withVCT("data"), withIdleTimeout(30*time.Minute), withStatus(readySince(2*time.Hour, time.Hour))),
			wantWrites: []string{"delete pods", "update sandboxes", "update sandboxes/status"},
			wantEvents: []string{idleEvent, "Normal Suspended Deleted pod sb; volumes are kept"},
		},
		{
			name:       "last activity 30m ago exactly: suspended",
			sandbox:    newSandbox(withVCT("data"), withIdleTimeout(30*time.Minute), withStatus(readySince(time.Hour, 30*time.Minute))),
			wantWrites: []string{"delete pods", "update sandboxes", "update sandboxes/status"},
			wantEvents: []string{idleEvent, "Normal Suspended Deleted pod sb; volumes are kept"},
		},
		{
			name:        "activity 10m ago: due in 20m",
			sandbox:     newSandbox(withVCT("data"), withIdleTimeout(30*time.Minute), withStatus(readySince(time.Hour, 10*time.Minute))),
			wantRequeue: []time.Duration{20 * time.Minute},
		},
		{
			name:        "resumed 5m ago after older activity: due in 25m",
			sandbox:     newSandbox(withVCT("data"), withIdleTimeout(30*time.Minute), withStatus(readySince(5*time.Minute, 2*time.Hour))),
			wantRequeue: []time.Duration{25 * time.Minute},
		},
		{
			name:    "no idle timeout: never",
			sandbox: newSandbox(withVCT("data"), withStatus(readySince(time.Hour, -1))),
		},
		{
			name: "unclaimed warm-pool member: never",
			sandbox: newSandbox(withVCT("data"), withIdleTimeout(30*time.Minute), withStatus(readySince(time.Hour, -1)),
				func(sb *agentsv1beta1.Sandbox) {
					sb.Labels = map[string]string{extensionsv1beta1.WarmPoolSandboxLabel: "abcd1234"}
				}),
		},
		{
			name: "not Ready: the timeout has not started",
			sandbox: newSandbox(withVCT("data"), withIdleTimeout(30*time.Minute), withStatus(func() agentsv1beta1.SandboxStatus {
				st := readySince(time.Hour, -1)
				st.Conditions[0].Status, st.Conditions[0].Reason = metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady
				return st
			}())),
			// The pod is Ready now: only that is written.
			wantWrites: []string{"update sandboxes/status"},
		},
		{
			name:    "a newer object (a wake) makes the suspend conflict: nothing else written, no error",
			sandbox: newSandbox(withVCT("data"), withIdleTimeout(30*time.Minute), withStatus(readySince(2*time.Hour, time.Hour))),
			reactors: func(_ *kubefake.Clientset, client *agentsfake.Clientset) {
				client.PrependReactor("update", "sandboxes", func(a clienttesting.Action) (bool, runtime.Object, error) {
					if a.GetSubresource() != "" {
						return false, nil, nil
					}
					return true, nil, apierrors.NewConflict(agentsv1beta1.Resource("sandboxes"), testName, nil)
				})
			},
			wantWrites: []string{"update sandboxes"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, world{sandbox: tc.sandbox, cached: children(), reactors: tc.reactors})
			if err := f.sync(); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got := f.writes(); !slices.Equal(got, tc.wantWrites) {
				t.Errorf("writes = %q, want %q", got, tc.wantWrites)
			}
			if got := f.events(); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("events = %q, want %q", got, tc.wantEvents)
			}
			if got := idleRequeues(f); !slices.Equal(got, tc.wantRequeue) {
				t.Errorf("requeues = %v, want %v", got, tc.wantRequeue)
			}
			if st := f.status(); st != nil && tc.sandbox.Status.LastActivityTime == nil && len(tc.wantRequeue) > 0 {
				if st.LastActivityTime == nil || !st.LastActivityTime.Time.Equal(testNow) {
					t.Errorf("lastActivityTime written %v, want now (%v)", st.LastActivityTime, testNow)
				}
			}
			if len(tc.wantEvents) == 0 {
				return
			}
			stored := written[*agentsv1beta1.Sandbox](t, &f.client.Fake, "update", "sandboxes")
			if ptr.Deref(stored.Spec.Replicas, 1) != 0 || stored.Spec.OperatingMode != agentsv1beta1.OperatingModeSuspended {
				t.Errorf("suspend wrote replicas %v, operatingMode %q; want 0, Suspended", stored.Spec.Replicas, stored.Spec.OperatingMode)
			}
			if stored.ResourceVersion != tc.sandbox.ResourceVersion {
				t.Errorf("suspend without the cached resourceVersion %q as precondition: %q", tc.sandbox.ResourceVersion, stored.ResourceVersion)
			}
			if got := deletes(&f.kube.Fake, "persistentvolumeclaims"); len(got) != 0 {
				t.Errorf("volumes deleted on idle suspend: %v", got)
			}
			checkConditions(t, f.mustStatus().Conditions, idleSuspendedReady,
				want(suspendedType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspendedPodNotTerminated, "Pod is terminating"))

			// Once the pod is gone, the Sandbox still says why it was suspended.
			f.refreshCaches()
			if err := f.sync(); err != nil {
				t.Fatalf("second sync: %v", err)
			}
			checkConditions(t, f.mustStatus().Conditions, idleSuspendedReady,
				want(suspendedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonSuspendedPodTerminated, "Pod is terminated"))
		})
	}
}

// TestIdleSuspendedThenResumed: resuming an idle-suspended Sandbox drops the IdleSuspended reason,
// and a user's later suspend reads as an ordinary one.
func TestIdleSuspendedThenResumed(t *testing.T) {
	st := agentsv1beta1.SandboxStatus{Conditions: []metav1.Condition{
		cond(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonIdleSuspended, "Sandbox was suspended after spec.idleTimeout"),
		cond(suspendedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonSuspendedPodTerminated, "Pod is terminated"),
	}}
	f := newFixture(t, world{sandbox: newSandbox(withIdleTimeout(30*time.Minute), withReplicas(1), withStatus(st))})
	if err := f.sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := findCond(f.mustStatus().Conditions, readyType); got.Reason == agentsv1beta1.SandboxReasonIdleSuspended {
		t.Errorf("resumed Sandbox still reads %s", got.Reason)
	}

	f = newFixture(t, world{sandbox: newSandbox(withReplicas(0), withStatus(readySince(time.Minute, -1)))})
	if err := f.sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if got := findCond(f.mustStatus().Conditions, readyType); got.Reason != agentsv1beta1.SandboxReasonSuspended {
		t.Errorf("user suspend reads %s, want %s", got.Reason, agentsv1beta1.SandboxReasonSuspended)
	}
}
