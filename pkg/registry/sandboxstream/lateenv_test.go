// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxstream

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

// TestWithLateEnv: exec in a warm sandbox runs with the claim's env its pod lacks, through env(1);
// in a pod made with the env, or in a container that gets none, the command is left as asked.
func TestWithLateEnv(t *testing.T) {
	sb := &agents.Sandbox{Spec: agents.SandboxSpec{PodTemplate: agents.PodTemplate{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "agent", Env: []corev1.EnvVar{{Name: "LOG", Value: "info"}, {Name: "TASK_ID", Value: "t 1"}}},
		{Name: "sidecar"},
	}}}}}
	warm := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "agent", Env: []corev1.EnvVar{{Name: "LOG", Value: "info"}}}, {Name: "sidecar"},
	}}}
	cold := &corev1.Pod{Spec: sb.Spec.PodTemplate.Spec}
	command := []string{"sh", "-c", "echo $TASK_ID"}

	if got, want := withLateEnv(sb, warm, "agent", command), []string{"env", "--", "TASK_ID=t 1", "sh", "-c", "echo $TASK_ID"}; !slices.Equal(got, want) {
		t.Errorf("warm pod: %q, want %q", got, want)
	}
	if got := withLateEnv(sb, warm, "sidecar", command); !slices.Equal(got, command) {
		t.Errorf("container without claim env: %q, want the command as asked", got)
	}
	if got := withLateEnv(sb, cold, "agent", command); !slices.Equal(got, command) {
		t.Errorf("pod made with the env: %q, want the command as asked", got)
	}
}
