// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SuspendedConditions are the conditions of a Sandbox suspended at generation with no pod (gone,
// or never made): Ready False and Suspended True. Their transition times are the writer's to set.
// The controller reports them, and the server stores them on a Sandbox created suspended, whose
// status they already fully describe.
func SuspendedConditions(generation int64) (ready, suspended metav1.Condition) {
	ready = metav1.Condition{Type: string(SandboxConditionReady), Status: metav1.ConditionFalse,
		Reason: SandboxReasonSuspended, Message: "Sandbox is suspended", ObservedGeneration: generation}
	suspended = metav1.Condition{Type: string(SandboxConditionSuspended), Status: metav1.ConditionTrue,
		Reason: SandboxReasonSuspendedPodTerminated, Message: "Pod is terminated", ObservedGeneration: generation}
	return ready, suspended
}
