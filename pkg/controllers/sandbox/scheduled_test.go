// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

const scheduledType = agentsv1beta1.SandboxConditionPodScheduled

func scheduled(node string, status corev1.ConditionStatus, reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = node
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: status,
			Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(testNow.Add(-10 * time.Second))})
	}
}

func withLabel(k, v string) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) {
		if sb.Labels == nil {
			sb.Labels = map[string]string{}
		}
		sb.Labels[k] = v
	}
}

// TestSyncNodeNameAndPodScheduled: status.nodeName and a PodScheduled condition mirror the pod,
// written with the rest of the status and only when they change.
func TestSyncNodeNameAndPodScheduled(t *testing.T) {
	scheduledStatus := func(node string, ips ...string) *agentsv1beta1.SandboxStatus {
		st := runningStatus(ips...)
		st.NodeName = node
		return st
	}
	runSyncCases(t, []syncCase{
		{
			name:       "scheduled and ready: node name and PodScheduled=True with a stand-in reason",
			sandbox:    newSandbox(),
			cached:     []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"), scheduled("kwok-node-1", corev1.ConditionTrue, "", ""))},
			wantWrites: []string{"update sandboxes/status"},
			wantConds:  []condSummary{readyNoService, want(scheduledType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodScheduled, "")},
			wantStatus: scheduledStatus("kwok-node-1", "10.0.0.5"),
			check: func(t *testing.T, f *fixture) {
				c := findCond(f.mustStatus().Conditions, scheduledType)
				if !c.LastTransitionTime.Equal(&metav1.Time{Time: testNow.Add(-10 * time.Second)}) {
					t.Errorf("PodScheduled lastTransitionTime %v, want the pod's", c.LastTransitionTime)
				}
			},
			steady: true,
		},
		{
			name:    "unschedulable: the pod's reason and message",
			sandbox: newSandbox(),
			cached: []runtime.Object{newPod(testName, owned, phase(corev1.PodPending),
				scheduled("", corev1.ConditionFalse, corev1.PodReasonUnschedulable, "0/3 nodes are available"))},
			wantWrites: []string{"update sandboxes/status"},
			wantConds: []condSummary{
				want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady, "Pod is Pending; Service is not required"),
				want(scheduledType, metav1.ConditionFalse, corev1.PodReasonUnschedulable, "0/3 nodes are available"),
			},
			wantStatus: scheduledStatus(""),
			steady:     true,
		},
		{
			name: "unchanged: nothing written",
			sandbox: newSandbox(withStatus(agentsv1beta1.SandboxStatus{Conditions: []metav1.Condition{
				cond(readyType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready; Service is not required"),
				cond(scheduledType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodScheduled, ""),
			}, Replicas: 1, LabelSelector: testSelector, PodIPs: []string{"10.0.0.5"}, NodeName: "kwok-node-1"})),
			cached: []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"), scheduled("kwok-node-1", corev1.ConditionTrue, "", ""))},
		},
		{
			name: "suspended: no node, no PodScheduled",
			sandbox: newSandbox(withReplicas(0), withStatus(agentsv1beta1.SandboxStatus{Conditions: []metav1.Condition{
				cond(scheduledType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonPodScheduled, ""),
			}, NodeName: "kwok-node-1"})),
			wantWrites: []string{"update sandboxes/status"},
			wantConds: []condSummary{
				want(readyType, metav1.ConditionFalse, agentsv1beta1.SandboxReasonSuspended, "Sandbox is suspended"),
				want(suspendedType, metav1.ConditionTrue, agentsv1beta1.SandboxReasonSuspendedPodTerminated, "Pod is terminated"),
			},
			wantStatus: &agentsv1beta1.SandboxStatus{},
			steady:     true,
		},
	})
}

// TestSyncPodLaunchType: the pod carries its Sandbox's launch-type label, added to a pod made
// before the label existed.
func TestSyncPodLaunchType(t *testing.T) {
	label := agentsv1beta1.SandboxLaunchTypeLabel
	runSyncCases(t, []syncCase{
		{
			name:       "a new pod gets the label",
			sandbox:    newSandbox(withLabel(label, agentsv1beta1.LaunchTypeCold)),
			wantWrites: []string{"create pods", "update sandboxes/status"},
			check: func(t *testing.T, f *fixture) {
				if got := written[*corev1.Pod](t, &f.kube.Fake, "create", "pods").Labels[label]; got != agentsv1beta1.LaunchTypeCold {
					t.Errorf("pod launch type %q, want cold", got)
				}
			},
		},
		{
			name:       "a pod without it gets it",
			sandbox:    newSandbox(withLabel(label, agentsv1beta1.LaunchTypeWarm), withStatus(*runningStatus("10.0.0.5"))),
			cached:     []runtime.Object{newPod(testName, owned, readyPod("10.0.0.5"))},
			wantWrites: []string{"update pods", "update sandboxes/status"},
			check: func(t *testing.T, f *fixture) {
				if got := written[*corev1.Pod](t, &f.kube.Fake, "update", "pods").Labels[label]; got != agentsv1beta1.LaunchTypeWarm {
					t.Errorf("pod launch type %q, want warm", got)
				}
			},
		},
	})
}
