// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxproxy

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

func testSandbox() *agents.Sandbox {
	return &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "box", UID: "sandbox-uid"}}
}

// readyPod is the Sandbox's pod, Running and Ready at 10.244.0.7, declaring http (8080), metrics
// (9090) and a UDP port.
func readyPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "box", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: "box", UID: "sandbox-uid", Controller: ptr.To(true),
		}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "sidecar-without-ports"},
			{Name: "main", Ports: []corev1.ContainerPort{
				{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
				{Name: "http", ContainerPort: 8080},
				{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
			}},
		}},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIP:      "10.244.0.7",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
}

func TestTarget(t *testing.T) {
	tests := []struct {
		name        string
		pod         func(*corev1.Pod) *corev1.Pod
		port        string
		hostNetwork HostNetworkRanges
		want        string
		// wantCode is the HTTP status of the refusal; wantMessage a part of its message.
		wantCode    int32
		wantMessage string
	}{
		{name: "default is the first declared TCP port", want: "http://10.244.0.7:8080"},
		{name: "port by number", port: "9090", want: "http://10.244.0.7:9090"},
		{name: "port by name", port: "metrics", want: "http://10.244.0.7:9090"},
		{name: "port not declared", port: "22", wantCode: http.StatusBadRequest, wantMessage: `port "22" is not a TCP port`},
		{name: "name not declared", port: "admin", wantCode: http.StatusBadRequest, wantMessage: `port "admin"`},
		{name: "UDP port is not a target", port: "53", wantCode: http.StatusBadRequest, wantMessage: `port "53"`},
		{name: "no ports declared", pod: func(p *corev1.Pod) *corev1.Pod { p.Spec.Containers[1].Ports = nil; return p },
			wantCode: http.StatusBadRequest, wantMessage: "declares no TCP container port"},
		{name: "no pod", pod: func(*corev1.Pod) *corev1.Pod { return nil },
			wantCode: http.StatusServiceUnavailable, wantMessage: "is not running: its pod does not exist"},
		{name: "pod controlled by another object", pod: func(p *corev1.Pod) *corev1.Pod { p.OwnerReferences[0].UID = "other"; return p },
			wantCode: http.StatusServiceUnavailable, wantMessage: "not controlled by it"},
		{name: "pod with no controller", pod: func(p *corev1.Pod) *corev1.Pod { p.OwnerReferences = nil; return p },
			wantCode: http.StatusServiceUnavailable, wantMessage: "not controlled by it"},
		{name: "pending pod", pod: func(p *corev1.Pod) *corev1.Pod { p.Status.Phase = corev1.PodPending; return p },
			wantCode: http.StatusServiceUnavailable, wantMessage: "its pod is Pending"},
		{name: "running but not ready", pod: func(p *corev1.Pod) *corev1.Pod { p.Status.Conditions = nil; return p },
			wantCode: http.StatusServiceUnavailable, wantMessage: "not Ready"},
		{name: "terminating pod", pod: func(p *corev1.Pod) *corev1.Pod { p.DeletionTimestamp = &metav1.Time{}; return p },
			wantCode: http.StatusServiceUnavailable, wantMessage: "terminating"},
		{name: "pod without IP", pod: func(p *corev1.Pod) *corev1.Pod { p.Status.PodIP = ""; return p },
			wantCode: http.StatusServiceUnavailable, wantMessage: "has no IP"},
		{name: "host network pod refused by default", pod: hostNetwork("10.89.0.1"),
			wantCode: http.StatusForbidden, wantMessage: "--proxy-host-network-cidrs (none)"},
		{name: "host network pod on a node the administrator named", pod: hostNetwork("10.89.0.1"), hostNetwork: ranges("10.89.0.0/24"),
			port: "http", want: "http://10.89.0.1:8080"},
		{name: "host network pod on another node", pod: hostNetwork("10.88.0.1"), hostNetwork: ranges("10.89.0.0/24"),
			wantCode: http.StatusForbidden, wantMessage: "10.88.0.1"},
		{name: "host network pod at loopback, whatever the ranges", pod: hostNetwork("127.0.0.1"), hostNetwork: ranges("0.0.0.0/0", "127.0.0.0/8"),
			wantCode: http.StatusForbidden, wantMessage: "never on a loopback address"},
		{name: "host network pod at IPv4-mapped loopback", pod: hostNetwork("::ffff:127.0.0.1"), hostNetwork: ranges("::/0", "0.0.0.0/0"),
			wantCode: http.StatusForbidden, wantMessage: "never on a loopback address"},
		{name: "loopback address of a pod network pod", pod: func(p *corev1.Pod) *corev1.Pod { p.Status.PodIP = "127.0.0.1"; return p },
			hostNetwork: ranges("0.0.0.0/0"), wantCode: http.StatusForbidden, wantMessage: "not one this server proxies to"},
		{name: "IPv6 loopback of a pod network pod", pod: func(p *corev1.Pod) *corev1.Pod { p.Status.PodIP = "::1"; return p },
			wantCode: http.StatusForbidden, wantMessage: "not one this server proxies to"},
		{name: "link-local address (cloud metadata)", pod: func(p *corev1.Pod) *corev1.Pod { p.Status.PodIP = "169.254.169.254"; return p },
			wantCode: http.StatusForbidden, wantMessage: "169.254.169.254"},
		{name: "IPv6 pod", pod: func(p *corev1.Pod) *corev1.Pod { p.Status.PodIP = "fd00::7"; return p }, want: "http://[fd00::7]:8080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := readyPod()
			if tt.pod != nil {
				pod = tt.pod(pod)
			}
			got, err := Target(testSandbox(), pod, tt.port, tt.hostNetwork)
			if tt.wantCode != 0 {
				status, ok := err.(apierrors.APIStatus)
				if !ok {
					t.Fatalf("Target = %v, %v; want a %d status error", got, err, tt.wantCode)
				}
				if status.Status().Code != tt.wantCode || !strings.Contains(status.Status().Message, tt.wantMessage) {
					t.Fatalf("Target error = %d %q; want %d containing %q", status.Status().Code, status.Status().Message, tt.wantCode, tt.wantMessage)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("Target = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// hostNetwork makes a pod a host-network one on a node of address ip.
func hostNetwork(ip string) func(*corev1.Pod) *corev1.Pod {
	return func(p *corev1.Pod) *corev1.Pod {
		p.Spec.HostNetwork = true
		p.Status.PodIP = ip
		return p
	}
}

func ranges(cidrs ...string) HostNetworkRanges {
	var r HostNetworkRanges
	for _, c := range cidrs {
		r = append(r, netip.MustParsePrefix(c))
	}
	return r
}

func TestNotRunningAsksToRetry(t *testing.T) {
	_, err := Target(testSandbox(), nil, "", nil)
	status := err.(apierrors.APIStatus).Status()
	if status.Details == nil || status.Details.RetryAfterSeconds != RetryAfterSeconds {
		t.Fatalf("status details = %+v; want RetryAfterSeconds %d", status.Details, RetryAfterSeconds)
	}
}

func TestSplitNamePort(t *testing.T) {
	tests := []struct {
		id, name, port string
		wantErr        bool
	}{
		{id: "box", name: "box"},
		{id: "box:8080", name: "box", port: "8080"},
		{id: "box:http", name: "box", port: "http"},
		{id: "https:box:443", wantErr: true},
		{id: "box:0", wantErr: true},
		{id: "box:65536", wantErr: true},
		{id: ":8080", wantErr: true},
		{id: "box:evil.example.com", wantErr: true},
		{id: "box:", wantErr: true},
	}
	for _, tt := range tests {
		name, port, err := SplitNamePort(tt.id)
		if tt.wantErr {
			if !apierrors.IsBadRequest(err) {
				t.Errorf("SplitNamePort(%q) = %q, %q, %v; want a bad request", tt.id, name, port, err)
			}
			continue
		}
		if err != nil || name != tt.name || port != tt.port {
			t.Errorf("SplitNamePort(%q) = %q, %q, %v; want %q, %q", tt.id, name, port, err, tt.name, tt.port)
		}
	}
}

func TestJoinPathKeepsAHostInThePath(t *testing.T) {
	for path, want := range map[string]string{
		"":                        "/",
		"index.html":              "/index.html",
		"/api/x":                  "/api/x",
		"http://169.254.169.254/": "/http://169.254.169.254/",
		"//evil:80/":              "//evil:80/",
	} {
		if got := joinPath(path); got != want {
			t.Errorf("joinPath(%q) = %q; want %q", path, got, want)
		}
	}
}
