// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
)

// TestProtobufThroughAggregator creates, gets, lists and watches Sandboxes through kube-apiserver
// with a client that accepts protobuf only (a server answering JSON would fail it with a decoding
// error, one not offering protobuf with a 406), and checks that kubectl still gets JSON.
func TestProtobufThroughAggregator(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf
	client := versioned.NewForConfigOrDie(cfg).AgentsV1beta1()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	sb := &agentsv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "proto", Namespace: ns, Labels: map[string]string{"encoding": "protobuf"}},
		Spec: agentsv1beta1.SandboxSpec{
			Replicas: ptr.To[int32](0),
			PodTemplate: agentsv1beta1.PodTemplate{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "agent", Image: "registry.example.com/agent:v1"}},
			}},
		},
	}
	created, err := client.Sandboxes(ns).Create(ctx, sb, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create as protobuf: %v", err)
	}
	got, err := client.Sandboxes(ns).Get(ctx, "proto", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get as protobuf: %v", err)
	}
	if got.UID != created.UID || got.Spec.PodTemplate.Spec.Containers[0].Image != "registry.example.com/agent:v1" {
		t.Errorf("get as protobuf returned uid %s image %q, want uid %s and the image created",
			got.UID, got.Spec.PodTemplate.Spec.Containers[0].Image, created.UID)
	}
	list, err := client.Sandboxes(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatalf("list as protobuf: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "proto" {
		t.Fatalf("list as protobuf: %d items, want the Sandbox proto", len(list.Items))
	}

	w, err := client.Sandboxes(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch as protobuf: %v", err)
	}
	defer w.Stop()
	// The controller writes the Sandbox's status meanwhile: update the latest, as a client would.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := client.Sandboxes(ns).Get(ctx, "proto", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if latest.Labels == nil {
			latest.Labels = map[string]string{}
		}
		latest.Labels["changed"] = "yes"
		_, err = client.Sandboxes(ns).Update(ctx, latest, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("update as protobuf: %v", err)
	}
	timeout := time.After(30 * time.Second)
	for seen := false; !seen; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the protobuf watch ended before the update was seen")
			}
			if ev.Type == watch.Error {
				t.Fatalf("protobuf watch error: %v", ev.Object)
			}
			if s, isSandbox := ev.Object.(*agentsv1beta1.Sandbox); isSandbox && ev.Type == watch.Modified && s.Labels["changed"] == "yes" {
				seen = true
			}
		case <-timeout:
			t.Fatal("the protobuf watch did not see the update within 30s")
		}
	}

	// The wire format itself: kube-apiserver passes our protobuf through.
	raw := versioned.NewForConfigOrDie(rest.CopyConfig(cfg)).AgentsV1beta1().RESTClient().Get().
		Namespace(ns).Resource("sandboxes").Name("proto").
		SetHeader("Accept", runtime.ContentTypeProtobuf).Do(ctx)
	var contentType string
	body, err := raw.ContentType(&contentType).Raw()
	if err != nil || contentType != runtime.ContentTypeProtobuf || !bytes.HasPrefix(body, []byte("k8s\x00")) {
		t.Errorf("GET with Accept: %s: content type %q, body %.20q, err %v", runtime.ContentTypeProtobuf, contentType, body, err)
	}

	// kubectl asks for JSON and gets it.
	var fromKubectl map[string]any
	if err := json.Unmarshal([]byte(kubectl(t, "get", "sandbox", "proto", "-n", ns, "-o", "json")), &fromKubectl); err != nil {
		t.Fatalf("kubectl get -o json: %v", err)
	}
	labels, _ := lookup(fromKubectl, "metadata.labels")
	if m, _ := labels.(map[string]any); m["changed"] != "yes" {
		t.Errorf("kubectl get -o json: labels %v, want changed=yes", labels)
	}
}
