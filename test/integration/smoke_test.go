// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

func TestSmoke(t *testing.T) {
	s := framework.StartServer(t, t.TempDir())
	ctx := context.Background()
	sb := &agentsv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: agentsv1beta1.SandboxSpec{PodTemplate: agentsv1beta1.PodTemplate{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "agent", Image: "busybox"}},
		}}},
	}
	got, err := s.Client.AgentsV1beta1().Sandboxes("default").Create(ctx, sb, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != 1 {
		t.Fatalf("replicas not defaulted: %v", got.Spec.Replicas)
	}
	t.Logf("%+v", got.ObjectMeta)
}
