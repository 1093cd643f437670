// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxproxy"
)

// TestProxiedPodFieldsKeepWhatTheProxyReads: the proxy's slimmed pod cache gives the same target,
// and the same refusals, as the full pod.
func TestProxiedPodFieldsKeepWhatTheProxyReads(t *testing.T) {
	sb := &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "sb-uid"}}
	ready := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "pod-uid",
				Labels:          map[string]string{"app": "web"},
				Annotations:     map[string]string{"note": "dropped"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: "web", UID: "sb-uid", Controller: ptr.To(true)}},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "sidecar", Image: "sidecar"},
				{Name: "agent", Image: "agent", Env: []corev1.EnvVar{{Name: "SECRET", Value: "x"}},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}},
			}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7",
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		}
	}
	for _, tc := range []struct {
		name string
		port string
		pod  func() *corev1.Pod
	}{
		{"first declared port", "", ready},
		{"port by name", "http", ready},
		{"undeclared port", "53", ready},
		{"not Ready", "", func() *corev1.Pod {
			p := ready()
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			return p
		}},
		{"terminating", "", func() *corev1.Pod {
			p := ready()
			p.DeletionTimestamp = &metav1.Time{}
			return p
		}},
		{"another owner", "", func() *corev1.Pod {
			p := ready()
			p.OwnerReferences[0].UID = "other"
			return p
		}},
		{"host network", "", func() *corev1.Pod {
			p := ready()
			p.Spec.HostNetwork = true
			return p
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			full := tc.pod()
			slimObj, err := proxiedPodFields(full.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			slim := slimObj.(*corev1.Pod)
			if slim.Annotations != nil || slim.Spec.Containers[1].Env != nil {
				t.Errorf("the slim pod keeps fields the proxy never reads: %+v", slim)
			}
			wantURL, wantErr := sandboxproxy.Target(sb, full, tc.port, nil)
			gotURL, gotErr := sandboxproxy.Target(sb, slim, tc.port, nil)
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
				t.Fatalf("slim pod: error %v, full pod: %v", gotErr, wantErr)
			}
			if wantErr == nil && wantURL.String() != gotURL.String() {
				t.Errorf("slim pod: target %s, full pod: %s", gotURL, wantURL)
			}
		})
	}
}
