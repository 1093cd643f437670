// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// TestEnqueueOwner: a child event queues the Sandbox that controls it, and nothing else.
func TestEnqueueOwner(t *testing.T) {
	ref := func(apiVersion, kind string, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "owner", UID: "u", Controller: ptr.To(controller)}}
	}
	pod := func(refs []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", OwnerReferences: refs}}
	}
	cases := []struct {
		name string
		obj  any
		want string // queued key, "" for none
	}{
		{"controlled by a v1beta1 Sandbox", pod(ref("agents.x-k8s.io/v1beta1", "Sandbox", true)), "ns/owner"},
		{"controlled by a v1alpha1 Sandbox", pod(ref("agents.x-k8s.io/v1alpha1", "Sandbox", true)), "ns/owner"},
		{"a Service controlled by a Sandbox", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns",
			OwnerReferences: ref("agents.x-k8s.io/v1beta1", "Sandbox", true)}}, "ns/owner"},
		{"a deletion tombstone", cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod(ref("agents.x-k8s.io/v1beta1", "Sandbox", true))}, "ns/owner"},
		{"a Sandbox kind of another group", pod(ref("example.com/v1", "Sandbox", true)), ""},
		{"another kind of our group", pod(ref("agents.x-k8s.io/v1beta1", "SandboxClaim", true)), ""},
		{"a Sandbox owner that is not the controller", pod(ref("agents.x-k8s.io/v1beta1", "Sandbox", false)), ""},
		{"an unparsable apiVersion", pod(ref("a/b/c", "Sandbox", true)), ""},
		{"no owner", pod(nil), ""},
		{"not an object", "ns/p", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, world{})
			f.c.enqueueOwner(tc.obj)
			if tc.want == "" {
				if n := f.queue.Len(); n != 0 {
					t.Errorf("queue length = %d, want 0", n)
				}
				return
			}
			if n := f.queue.Len(); n != 1 {
				t.Fatalf("queue length = %d, want 1", n)
			}
			if key, _ := f.queue.Get(); key != tc.want {
				t.Errorf("queued %q, want %q", key, tc.want)
			}
		})
	}
}

// TestInformerWiring: events of the Sandbox informer and of a child informer reach the queue.
func TestInformerWiring(t *testing.T) {
	f := newFixture(t, world{})
	ctx, cancel := context.WithCancel(context.Background())
	f.kubeInf.Start(ctx.Done())
	f.agentInf.Start(ctx.Done())
	defer func() {
		cancel() // the informers stop on this; Shutdown waits for them
		f.kubeInf.Shutdown()
		f.agentInf.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), f.c.synced...) {
		t.Fatal("caches did not sync")
	}
	next := func() string {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			key, _ := f.queue.Get()
			f.queue.Done(key)
			got <- key
		}()
		select {
		case key := <-got:
			return key
		case <-time.After(30 * time.Second):
			t.Fatal("nothing queued")
			return ""
		}
	}
	_, err := f.client.AgentsV1beta1().Sandboxes(testNS).Create(ctx, newSandbox(), metav1.CreateOptions{})
	f.must(err)
	if key := next(); key != testNS+"/"+testName {
		t.Errorf("after a Sandbox add, queued %q", key)
	}
	_, err = f.kube.CoreV1().Pods(testNS).Create(ctx, newPod("child", owned), metav1.CreateOptions{})
	f.must(err)
	if key := next(); key != testNS+"/"+testName {
		t.Errorf("after an owned pod add, queued %q", key)
	}
}
