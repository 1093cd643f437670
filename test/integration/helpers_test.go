// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package integration runs the real sandbox-apiserver in-process on an embedded etcd and talks to
// it through the generated clientset and raw REST calls, as a user or a controller would.
package integration

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

// timeout bounds every single wait of a test: a watch event, a poll.
const timeout = 30 * time.Second

// startServer starts a server on a fresh data directory of the test.
func startServer(t *testing.T) *framework.Server {
	t.Helper()
	return framework.StartServer(t, t.TempDir())
}

// testContext is a context that ends with the test, bounded by a generous deadline.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// podSpec is a valid pod spec with one container named "agent".
func podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:    "agent",
			Image:   "busybox:1.36",
			Command: []string{"/bin/sh", "-c", "sleep 3600"},
			Env:     []corev1.EnvVar{{Name: "MODE", Value: "test"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			},
		}},
	}
}

// newSandbox is a minimal valid Sandbox that leaves every defaulted field unset.
func newSandbox(ns, name string) *agentsv1beta1.Sandbox {
	return &agentsv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "agent"}},
		Spec: agentsv1beta1.SandboxSpec{
			PodTemplate: agentsv1beta1.PodTemplate{
				ObjectMeta: agentsv1beta1.PodMetadata{Labels: map[string]string{"team": "ml"}},
				Spec:       podSpec(),
			},
		},
	}
}

// newTemplate is a minimal valid SandboxTemplate that leaves every defaulted field unset.
func newTemplate(ns, name string) *extv1beta1.SandboxTemplate {
	return &extv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: extv1beta1.SandboxTemplateSpec{
			PodTemplate: agentsv1beta1.PodTemplate{Spec: podSpec()},
		},
	}
}

// newClaim is a valid SandboxClaim of template that leaves every defaulted field unset.
func newClaim(ns, name, template string) *extv1beta1.SandboxClaim {
	return &extv1beta1.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: extv1beta1.SandboxClaimSpec{
			TemplateRef: extv1beta1.SandboxTemplateRef{Name: template},
		},
	}
}

// newPool is a valid SandboxWarmPool of template that leaves every defaulted field unset.
func newPool(ns, name, template string, replicas int32) *extv1beta1.SandboxWarmPool {
	return &extv1beta1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: extv1beta1.SandboxWarmPoolSpec{
			Replicas:    ptr.To(replicas),
			TemplateRef: extv1beta1.SandboxTemplateRef{Name: template},
		},
	}
}

// expectInvalid fails the test unless err is a 422 Invalid whose causes name exactly the fields
// wantFields (in any order; a field may be listed once for each of its errors).
func expectInvalid(t *testing.T, err error, wantFields ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected 422 Invalid naming %v, got success", wantFields)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("expected 422 Invalid naming %v, got %v (reason %q)", wantFields, err, apierrors.ReasonForError(err))
	}
	got := causeFields(err)
	want := slices.Clone(wantFields)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("422 causes name fields\n got: %q\nwant: %q\nerror: %v", got, want, err)
	}
}

// causeFields returns the sorted, de-duplicated field paths of the causes of a status error.
func causeFields(err error) []string {
	status, ok := err.(apierrors.APIStatus)
	if !ok || status.Status().Details == nil {
		return nil
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		if !slices.Contains(fields, c.Field) {
			fields = append(fields, c.Field)
		}
	}
	sort.Strings(fields)
	return fields
}

// nextEvent returns the next event of w, failing the test after timeout.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed before the expected event")
		}
		if ev.Type == watch.Error {
			t.Fatalf("watch error: %v", apierrors.FromObject(ev.Object))
		}
		return ev
	case <-time.After(timeout):
		t.Fatalf("no watch event within %s", timeout)
	}
	return watch.Event{}
}

// expectEvent reads the next event of w and checks its type and the object's name; it returns the
// event's object.
func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) metav1.Object {
	t.Helper()
	ev := nextEvent(t, w)
	obj, ok := ev.Object.(metav1.Object)
	if !ok {
		t.Fatalf("watch event %s carries %T, not an object with metadata", ev.Type, ev.Object)
	}
	if ev.Type != typ || obj.GetName() != name {
		t.Fatalf("watch event: got %s %s, want %s %s", ev.Type, obj.GetName(), typ, name)
	}
	return obj
}

// jsonOf marshals v, failing the test on error.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// int32Of reads an optional int32, -1 standing for unset in messages.
func int32Of(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}
