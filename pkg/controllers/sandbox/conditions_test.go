// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	agentsfake "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
)

// TestConditions is the Ready/Suspended/Finished matrix of the seed, on the pure function.
func TestConditions(t *testing.T) {
	pod := func(mods ...func(*corev1.Pod)) *corev1.Pod { return newPod(testName, owned, mods...) }
	svc := newService(owned)
	notReady := func(msg string) condSummary {
		return want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady, msg)
	}
	ready := func(msg string) condSummary {
		return want(readyType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, msg)
	}
	suspendedReady := func(msg string) condSummary {
		return want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspended, msg)
	}
	succeeded := want(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodSucceeded, "Pod succeeded")
	notReadyCond := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}}
	}
	cases := []struct {
		name    string
		sb      *agentsv1beta1.Sandbox
		state   children
		err     error
		want    []condSummary
		wantGen int64
	}{
		{name: "no pod", sb: newSandbox(), want: []condSummary{notReady("Pod does not exist; Service is not required")}},
		{name: "pod without a phase counts as Pending", sb: newSandbox(), state: children{pod: pod()},
			want: []condSummary{notReady("Pod is Pending; Service is not required")}},
		{name: "pending pod", sb: newSandbox(), state: children{pod: pod(phase(corev1.PodPending))},
			want: []condSummary{notReady("Pod is Pending; Service is not required")}},
		{name: "running pod without a Ready condition", sb: newSandbox(), state: children{pod: pod(phase(corev1.PodRunning))},
			want: []condSummary{notReady("Pod is Running but not Ready; Service is not required")}},
		{name: "running pod with Ready=False", sb: newSandbox(), state: children{pod: pod(notReadyCond)},
			want: []condSummary{notReady("Pod is Running but not Ready; Service is not required")}},
		{name: "ready pod without an IP", sb: newSandbox(), state: children{pod: pod(readyPod())},
			want: []condSummary{notReady("Pod is Ready but has no IP yet; Service is not required")}},
		{name: "ready pod with an IP", sb: newSandbox(), state: children{pod: pod(readyPod("10.0.0.5"))},
			want: []condSummary{ready("Pod is Ready; Service is not required")}},
		{name: "terminating ready pod", sb: newSandbox(), state: children{pod: pod(readyPod("10.0.0.5"), terminating)},
			want: []condSummary{notReady("Pod is terminating; Service is not required")}},
		{name: "service true and missing", sb: newSandbox(withService(ptr.To(true))), state: children{pod: pod(readyPod("10.0.0.5"))},
			want: []condSummary{notReady("Pod is Ready; Service does not exist")}},
		{name: "service true and present", sb: newSandbox(withService(ptr.To(true))),
			state: children{pod: pod(readyPod("10.0.0.5")), service: svc},
			want:  []condSummary{ready("Pod is Ready; Service exists")}},
		{name: "service unset but present: required and there", sb: newSandbox(),
			state: children{pod: pod(readyPod("10.0.0.5")), service: svc},
			want:  []condSummary{ready("Pod is Ready; Service exists")}},
		{name: "service unset and present, pod pending", sb: newSandbox(), state: children{pod: pod(), service: svc},
			want: []condSummary{notReady("Pod is Pending; Service exists")}},
		{name: "reconcile error wins over a ready pod", sb: newSandbox(), state: children{pod: pod(readyPod("10.0.0.5"))},
			err:  errors.New("boom"),
			want: []condSummary{want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonReconcilerError, "Error seen: boom")}},
		{name: "suspended with the pod still there", sb: newSandbox(withReplicas(0)), state: children{pod: pod(readyPod("10.0.0.5"))},
			want: []condSummary{suspendedReady("Sandbox is suspending"),
				want(suspendedType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspendedPodNotTerminated, "Pod is terminating")}},
		{name: "suspended with the pod terminating", sb: newSandbox(withReplicas(0)), state: children{pod: pod(terminating)},
			want: []condSummary{suspendedReady("Sandbox is suspending"),
				want(suspendedType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspendedPodNotTerminated, "Pod is terminating")}},
		{name: "suspended, pod gone", sb: newSandbox(withReplicas(0)),
			want: []condSummary{suspendedReady("Sandbox is suspended"),
				want(suspendedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonSuspendedPodTerminated, "Pod is terminated")}},
		{name: "suspended with a finished pod keeps Finished", sb: newSandbox(withReplicas(0)), state: children{pod: pod(phase(corev1.PodSucceeded))},
			want: []condSummary{suspendedReady("Sandbox is suspending"),
				want(suspendedType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspendedPodNotTerminated, "Pod is terminating"),
				succeeded}},
		{name: "succeeded pod", sb: newSandbox(), state: children{pod: pod(phase(corev1.PodSucceeded))},
			want: []condSummary{notReady("Pod is Succeeded; Service is not required"), succeeded}},
		{name: "failed pod without a message", sb: newSandbox(), state: children{pod: pod(phase(corev1.PodFailed))},
			want: []condSummary{notReady("Pod is Failed; Service is not required"),
				want(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodFailed, "Pod failed")}},
		{name: "observedGeneration follows the Sandbox", sb: newSandbox(withReplicas(0), func(sb *agentsv1beta1.Sandbox) { sb.Generation = 9 }),
			state: children{pod: pod(phase(corev1.PodFailed))}, wantGen: 9,
			want: []condSummary{suspendedReady("Sandbox is suspending"),
				want(suspendedType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspendedPodNotTerminated, "Pod is terminating"),
				want(finishedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodFailed, "Pod failed")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(conditions(tc.sb, tc.state, tc.err))
			if len(got) != len(tc.want) {
				t.Errorf("conditions = %+v, want %+v", got, tc.want)
			}
			for _, w := range tc.want {
				if tc.wantGen != 0 {
					w.Gen = tc.wantGen
				}
				g, ok := got[w.Type]
				if !ok || g != w {
					t.Errorf("condition %s = %+v, want %+v", w.Type, g, w)
				}
			}
		})
	}
}

// TestSyncStatus checks the status fields a sync writes: replicas, selector and pod IPs (set with a
// pod, cleared without), and that nothing is written when the status did not change.
func TestSyncStatus(t *testing.T) {
	runSyncCases(t, []syncCase{
		{
			name:       "ready dual-stack pod: replicas 1, selector, both IPs",
			sandbox:    newSandbox(),
			cached:     []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5", "fd00::5"))},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService},
			wantStatus: runningStatus("10.0.0.5", "fd00::5"),
			steady:     true,
		},
		{
			name:       "status unchanged: nothing written",
			sandbox:    newSandbox(withStatus(agentsv1beta1.SandboxStatus{Conditions: []metav1.Condition{cond(readyType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service is not required")}, Replicas: 1, LabelSelector: testSelector, PodIPs: []string{"10.0.0.5"}})),
			cached:     []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"))},
			wantWrites: nil,
		},
		{
			name: "a new generation is written to observedGeneration even when nothing else changed",
			sandbox: newSandbox(func(sb *agentsv1beta1.Sandbox) { sb.Generation = testGen + 1 },
				withStatus(agentsv1beta1.SandboxStatus{Conditions: []metav1.Condition{cond(readyType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service is not required")}, Replicas: 1, LabelSelector: testSelector, PodIPs: []string{"10.0.0.5"}})),
			cached:     []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"))},
			wantWrites: []string{"update sandboxes/status"},
			check: func(t *testing.T, f *fixture) {
				for _, c := range f.mustStatus().Conditions {
					if c.ObservedGeneration != testGen+1 {
						t.Errorf("condition %s observedGeneration = %d, want %d", c.Type, c.ObservedGeneration, testGen+1)
					}
				}
			},
		},
		{
			name:       "suspend with the pod present: the pod is deleted, Suspended=False PodNotTerminated",
			sandbox:    newSandbox(withReplicas(0), withStatus(*runningStatus("10.0.0.5"))),
			cached:     []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"))},
			wantWrites: []string{"delete pods", "update sandboxes/status"},
			wantEvents: []string{"Normal Suspended Deleted pod sb; volumes are kept"},
			wantConds: []condSummary{
				want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspended, "Sandbox is suspending"),
				want(suspendedType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspendedPodNotTerminated, "Pod is terminating"),
			},
			check: func(t *testing.T, f *fixture) {
				if got := deletes(&f.kube.Fake, "pods"); len(got) != 1 || got[testName] != types.UID("sb-pod-uid") {
					t.Errorf("pod deletes = %v, want sb with UID precondition sb-pod-uid", got)
				}
			},
		},
		{
			name:       "suspend with the pod terminating: not deleted again",
			sandbox:    newSandbox(withReplicas(0)),
			cached:     []runtime.Object{newPod(testName, owned, terminating)},
			wantWrites: []string{"update sandboxes/status"},
			wantConds: []condSummary{
				want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspended, "Sandbox is suspending"),
				want(suspendedType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspendedPodNotTerminated, "Pod is terminating"),
			},
			wantStatus: &agentsv1beta1.SandboxStatus{},
			steady:     true,
		},
		{
			name:       "suspended, pod gone: Suspended=True PodTerminated, replicas, selector and IPs cleared",
			sandbox:    newSandbox(withReplicas(0), withStatus(*runningStatus("10.0.0.5"))),
			wantWrites: []string{"update sandboxes/status"},
			wantConds: []condSummary{
				want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspended, "Sandbox is suspended"),
				want(suspendedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonSuspendedPodTerminated, "Pod is terminated"),
			},
			wantStatus: &agentsv1beta1.SandboxStatus{},
			steady:     true,
		},
		{
			name: "resume: Suspended removed, pod created again with a Resumed event",
			sandbox: newSandbox(withReplicas(1), withStatus(agentsv1beta1.SandboxStatus{Conditions: []metav1.Condition{
				cond(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspended, "Sandbox is suspended"),
				cond(suspendedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonSuspendedPodTerminated, "Pod is terminated"),
			}})),
			wantWrites: []string{"create pods", "update sandboxes/status"},
			wantEvents: []string{"Normal Resumed Created pod sb again"},
			wantConds:  []condSummary{notReadyPending},
			wantStatus: runningStatus(),
			steady:     true,
		},
	})
}

// TestSuspendResumeSequence drives one Sandbox through suspend and resume, the caches catching up
// between syncs, and checks each step writes once and then settles.
func TestSuspendResumeSequence(t *testing.T) {
	f := newFixture(t, world{
		sandbox: newSandbox(withReplicas(0), withStatus(*runningStatus("10.0.0.5"))),
		cached:  []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"))},
	})
	step := func(name string, wantWrites []string, wantConds ...condSummary) {
		t.Helper()
		if err := f.sync(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := f.writes(); !slices.Equal(got, wantWrites) {
			t.Errorf("%s: writes = %q, want %q", name, got, wantWrites)
		}
		if wantConds != nil {
			checkConditions(t, f.mustStatus().Conditions, wantConds...)
		}
		f.refreshCaches()
	}
	suspendedReady := func(msg string) condSummary {
		return want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspended, msg)
	}
	step("suspending", []string{"delete pods", "update sandboxes/status"}, suspendedReady("Sandbox is suspending"),
		want(suspendedType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspendedPodNotTerminated, "Pod is terminating"))
	step("suspended", []string{"update sandboxes/status"}, suspendedReady("Sandbox is suspended"),
		want(suspendedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonSuspendedPodTerminated, "Pod is terminated"))
	if st := f.cachedSandbox().Status; st.Replicas != 0 || st.LabelSelector != "" || st.PodIPs != nil {
		t.Errorf("suspended status = %+v, want replicas, selector and pod IPs cleared", st)
	}
	step("suspended, settled", nil)

	sb := f.cachedSandbox().DeepCopy()
	sb.Spec.Replicas = ptr.To[int32](1)
	sb.Generation++
	_, err := f.client.AgentsV1beta1().Sandboxes(testNS).Update(context.Background(), sb, metav1.UpdateOptions{})
	f.must(err)
	f.refreshCaches()
	resumed := notReadyPending
	resumed.Gen = testGen + 1 // the Suspended condition is gone and Ready observed the new generation
	step("resumed", []string{"create pods", "update sandboxes/status"}, resumed)
	step("resumed, settled", nil)
}

// TestStatusWithChildErrorBeforeThePod: a claim conflict stops reconcileChildren before the pod is
// looked up, and the status must still describe the pod that exists.
func TestStatusWithChildErrorBeforeThePod(t *testing.T) {
	cases := []struct {
		name    string
		sandbox *agentsv1beta1.Sandbox
	}{
		{"suspended", newSandbox(withVCT("data"), withReplicas(0), withStatus(*runningStatus("10.0.0.5")))},
		{"running", newSandbox(withVCT("data"), withStatus(*runningStatus("10.0.0.5")))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, world{sandbox: tc.sandbox, cached: []runtime.Object{
				newPVC("data", ownedByOther), newPod(testName, owned, readyPod("10.0.0.5"))}})
			if err := f.sync(); err == nil {
				t.Fatal("sync: want the claim conflict error")
			}
			st := f.status()
			if st == nil {
				return // nothing written: nothing misreported
			}
			if c := findCond(st.Conditions, suspendedType); c != nil && c.Status == metav1.ConditionTrue {
				t.Errorf("Suspended = True/%s while the pod %s still exists", c.Reason, testName)
			}
			if st.Replicas != 1 || len(st.PodIPs) != 1 {
				t.Errorf("status replicas = %d, podIPs = %v while the pod exists with IP 10.0.0.5", st.Replicas, st.PodIPs)
			}
		})
	}
}

// TestCreateAfterFailedCreateIsNotResumed: a pod created for the first time, after a first attempt
// failed, is reported as PodCreated, not as a resume.
func TestCreateAfterFailedCreateIsNotResumed(t *testing.T) {
	calls := 0
	f := newFixture(t, world{sandbox: newSandbox(), reactors: func(kube *kubefake.Clientset, _ *agentsfake.Clientset) {
		kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			calls++
			if calls == 1 {
				return true, nil, errors.New("quota exceeded")
			}
			return false, nil, nil
		})
	}})
	if err := f.sync(); err == nil {
		t.Fatal("first sync: want the create error")
	}
	f.refreshCaches()
	if err := f.sync(); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if got, want := f.events(), []string{"Normal PodCreated Created pod sb"}; !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}
