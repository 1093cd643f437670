// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

var (
	expiredReady = want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonExpired, "Sandbox passed its shutdownTime")
	expiredEvent = "Normal Expired Sandbox passed its shutdownTime; deleting its pod and service"
	retain       = ptr.To(agentsv1beta1.ShutdownPolicyRetain)
	deletePolicy = ptr.To(agentsv1beta1.ShutdownPolicyDelete)
)

// TestExpiryRequeue: a Sandbox with a shutdownTime ahead is reconciled as usual and looked at
// again when it expires, never sooner than 2 s from now.
func TestExpiryRequeue(t *testing.T) {
	cases := []struct {
		name      string
		shutdown  *time.Duration
		wantAfter []delayed
	}{
		{name: "no shutdownTime: no timed requeue"},
		{name: "in ten minutes", shutdown: ptr.To(10 * time.Minute), wantAfter: []delayed{{testNS + "/" + testName, 10 * time.Minute}}},
		{name: "in 500ms: clamped to 2s", shutdown: ptr.To(500 * time.Millisecond), wantAfter: []delayed{{testNS + "/" + testName, 2 * time.Second}}},
		{name: "in 1ns: clamped to 2s", shutdown: ptr.To(time.Nanosecond), wantAfter: []delayed{{testNS + "/" + testName, 2 * time.Second}}},
		{name: "in exactly 2s", shutdown: ptr.To(2 * time.Second), wantAfter: []delayed{{testNS + "/" + testName, 2 * time.Second}}},
		{name: "in 3s", shutdown: ptr.To(3 * time.Second), wantAfter: []delayed{{testNS + "/" + testName, 3 * time.Second}}},
		{name: "passed: expiry path, no timed requeue", shutdown: ptr.To(-time.Second)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sb := newSandbox(withService(ptr.To(true)))
			if tc.shutdown != nil {
				withShutdown(*tc.shutdown, deletePolicy)(sb)
			}
			f := newFixture(t, world{sandbox: sb, cached: []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5")), newService(owned)}})
			if err := f.sync(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(f.queue.after, tc.wantAfter) {
				t.Errorf("AddAfter calls = %v, want %v", f.queue.after, tc.wantAfter)
			}
			if n := len(actions(&f.kube.Fake, "delete", "pods")) + len(actions(&f.kube.Fake, "delete", "services")) +
				len(actions(&f.client.Fake, "delete", "sandboxes")); n != 0 {
				t.Errorf("%d deletes before the second expiry pass, want none", n)
			}
		})
	}
}

// TestExpiryFirstPass: the first sync past shutdownTime only marks the Sandbox expired, recording
// Finished while the finished pod is still there to see.
func TestExpiryFirstPass(t *testing.T) {
	live := func() agentsv1beta1.SandboxStatus {
		st := *runningStatus("10.0.0.5")
		st.Service, st.ServiceFQDN = testName, testName+"."+testNS+".svc.cluster.local"
		st.Conditions = []metav1.Condition{cond(readyType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service exists")}
		return st
	}
	liveNoConds := func() *agentsv1beta1.SandboxStatus { st := live(); st.Conditions = nil; return &st }
	children := func(podMods ...func(*corev1.Pod)) []runtime.Object {
		return []runtime.Object{newPod(testName, owned, podMods...), newService(owned), newPVC("data", owned)}
	}
	base := func(d time.Duration, policy *agentsv1beta1.ShutdownPolicy, st agentsv1beta1.SandboxStatus) *agentsv1beta1.Sandbox {
		return newSandbox(withService(ptr.To(true)), withVCT("data"), withShutdown(d, policy), withStatus(st))
	}
	runSyncCases(t, []syncCase{
		{
			name:       "past shutdownTime: status only, Ready=False SandboxExpired, children kept",
			sandbox:    base(-time.Second, nil, live()),
			cached:     children(readyPod("10.0.0.5")),
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{expiredEvent},
			wantConds:  []condSummary{expiredReady},
			wantStatus: liveNoConds(),
		},
		{
			name:       "shutdownTime exactly now is past",
			sandbox:    base(0, deletePolicy, live()),
			cached:     children(readyPod("10.0.0.5")),
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{expiredEvent},
			wantConds:  []condSummary{expiredReady},
		},
		{
			name:       "succeeded pod: Finished=True PodSucceeded recorded with the mark",
			sandbox:    base(-time.Second, retain, live()),
			cached:     children(phase(corev1.PodSucceeded)),
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{expiredEvent},
			wantConds: []condSummary{expiredReady,
				want(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded, "Pod succeeded")},
		},
		{
			name:    "failed pod: Finished=True PodFailed recorded with the mark",
			sandbox: base(-time.Second, deletePolicy, live()),
			cached: children(phase(corev1.PodFailed), func(p *corev1.Pod) {
				p.Status.Message = "Error"
			}),
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{expiredEvent},
			wantConds: []condSummary{expiredReady,
				want(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodFailed, "Pod failed: Error")},
		},
		{
			name: "a Finished condition already recorded is kept when the pod is gone",
			sandbox: base(-time.Second, nil, agentsv1beta1.SandboxStatus{Conditions: []metav1.Condition{
				cond(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded, "Pod succeeded")}}),
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{expiredEvent},
			wantConds: []condSummary{expiredReady,
				want(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded, "Pod succeeded")},
		},
		{
			name:       "expired and suspended: marked like any other",
			sandbox:    newSandbox(withReplicas(0), withShutdown(-time.Hour, nil)),
			wantWrites: []string{"update sandboxes/status"},
			wantEvents: []string{expiredEvent},
			wantConds:  []condSummary{expiredReady},
		},
	})
}

// TestExpirySecondPass: with the expired mark in the cache, the pod and Service the Sandbox owns
// are deleted (never its claims), then Retain keeps the Sandbox with only its conditions and
// Delete deletes it.
func TestExpirySecondPass(t *testing.T) {
	marked := func() agentsv1beta1.SandboxStatus {
		st := *runningStatus("10.0.0.5")
		st.Service, st.ServiceFQDN = testName, testName+"."+testNS+".svc.cluster.local"
		st.Conditions = []metav1.Condition{
			cond(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonExpired, "Sandbox passed its shutdownTime"),
			cond(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded, "Pod succeeded"),
		}
		return st
	}
	base := func(policy *agentsv1beta1.ShutdownPolicy) *agentsv1beta1.Sandbox {
		return newSandbox(withService(ptr.To(true)), withVCT("data"), withShutdown(-time.Minute, policy), withStatus(marked()))
	}
	children := func(o ownerKind, podMods ...func(*corev1.Pod)) []runtime.Object {
		return []runtime.Object{newPod(testName, o, append([]func(*corev1.Pod){phase(corev1.PodSucceeded)}, podMods...)...),
			newService(o), newPVC("data", owned)}
	}
	finishedKept := want(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded, "Pod succeeded")
	wantChildDeletes := func(pod, svc bool) func(t *testing.T, f *fixture) {
		return func(t *testing.T, f *fixture) {
			wantPods, wantSvcs := map[string]types.UID{}, map[string]types.UID{}
			if pod {
				wantPods[testName] = "sb-pod-uid"
			}
			if svc {
				wantSvcs[testName] = "svc-uid"
			}
			if got := deletes(&f.kube.Fake, "pods"); !maps.Equal(got, wantPods) {
				t.Errorf("pod deletes = %v, want %v", got, wantPods)
			}
			if got := deletes(&f.kube.Fake, "services"); !maps.Equal(got, wantSvcs) {
				t.Errorf("service deletes = %v, want %v", got, wantSvcs)
			}
			if got := deletes(&f.kube.Fake, "persistentvolumeclaims"); len(got) != 0 {
				t.Errorf("claims deleted on expiry: %v", got)
			}
		}
	}
	runSyncCases(t, []syncCase{
		{
			name:       "Retain by default: pod and Service deleted, status reset to its conditions",
			sandbox:    base(nil),
			cached:     children(owned),
			wantWrites: []string{"delete pods", "delete services", "update sandboxes/status"},
			wantConds:  []condSummary{expiredReady, finishedKept},
			wantStatus: &agentsv1beta1.SandboxStatus{},
			check:      wantChildDeletes(true, true),
			steady:     true,
		},
		{
			name:       "Retain: same when explicit",
			sandbox:    base(retain),
			cached:     children(owned),
			wantWrites: []string{"delete pods", "delete services", "update sandboxes/status"},
			wantConds:  []condSummary{expiredReady, finishedKept},
			wantStatus: &agentsv1beta1.SandboxStatus{},
			check:      wantChildDeletes(true, true),
			steady:     true,
		},
		{
			name:       "Delete: pod and Service deleted, then the Sandbox with a UID precondition",
			sandbox:    base(deletePolicy),
			cached:     children(owned),
			wantWrites: []string{"delete pods", "delete services", "delete sandboxes"},
			check: func(t *testing.T, f *fixture) {
				wantChildDeletes(true, true)(t, f)
				if got := deletes(&f.client.Fake, "sandboxes"); !maps.Equal(got, map[string]types.UID{testName: testUID}) {
					t.Errorf("sandbox deletes = %v, want %s with UID precondition %s", got, testName, testUID)
				}
			},
		},
		{
			name:       "unowned pod and Service are not deleted",
			sandbox:    base(nil),
			cached:     children(unowned),
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{expiredReady, finishedKept},
			check:      wantChildDeletes(false, false),
			steady:     true,
		},
		{
			name:       "pod and Service controlled by others are not deleted",
			sandbox:    base(deletePolicy),
			cached:     children(ownedByOther),
			wantWrites: []string{"delete sandboxes"},
			check:      wantChildDeletes(false, false),
		},
		{
			name:       "a terminating pod is not deleted again",
			sandbox:    base(nil),
			cached:     children(owned, terminating),
			wantWrites: []string{"delete services", "update sandboxes/status"},
			wantConds:  []condSummary{expiredReady, finishedKept},
			check:      wantChildDeletes(false, true),
		},
		{
			name:       "children already gone, status already reset: nothing written",
			sandbox:    newSandbox(withShutdown(-time.Minute, nil), withStatus(agentsv1beta1.SandboxStatus{Conditions: marked().Conditions})),
			wantWrites: nil,
		},
	})
}

// TestExpirySequence runs both passes with the caches catching up in between.
func TestExpirySequence(t *testing.T) {
	for _, policy := range []*agentsv1beta1.ShutdownPolicy{nil, deletePolicy} {
		name := "Retain"
		if policy != nil {
			name = string(*policy)
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, world{
				sandbox: newSandbox(withService(ptr.To(true)), withVCT("data"), withShutdown(-time.Second, policy),
					withStatus(*runningStatus("10.0.0.5"))),
				cached: []runtime.Object{newPod(testName, owned, phase(corev1.PodSucceeded)), newService(owned), newPVC("data", owned)},
			})
			f.must(f.sync())
			if got := f.writes(); !slices.Equal(got, []string{"update sandboxes/status"}) {
				t.Fatalf("first pass writes = %q", got)
			}
			f.refreshCaches()
			f.must(f.sync())
			wantSecond := []string{"delete pods", "delete services", "update sandboxes/status"}
			if policy != nil {
				wantSecond = []string{"delete pods", "delete services", "delete sandboxes"}
			}
			if got := f.writes(); !slices.Equal(got, wantSecond) {
				t.Fatalf("second pass writes = %q, want %q", got, wantSecond)
			}
			if policy == nil {
				checkConditions(t, f.mustStatus().Conditions, expiredReady,
					want(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded, "Pod succeeded"))
				if st := f.mustStatus(); st.Replicas != 0 || st.LabelSelector != "" || st.PodIPs != nil || st.Service != "" {
					t.Errorf("retained status = %+v, want only conditions", st)
				}
			}
			f.refreshCaches()
			f.must(f.sync())
			if got := f.writes(); len(got) != 0 {
				t.Errorf("third pass writes = %q, want nothing", got)
			}
			claims, err := f.kubeInf.Core().V1().PersistentVolumeClaims().Lister().List(k8slabels.Everything())
			f.must(err)
			if len(claims) != 1 {
				t.Errorf("claims after expiry = %d, want the one kept", len(claims))
			}
		})
	}
}
