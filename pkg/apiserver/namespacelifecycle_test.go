// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// TestNamespaceLifecycle runs the plugin as the server builds it, against a cluster that has the
// namespace "here" and not "gone".
func TestNamespaceLifecycle(t *testing.T) {
	o := genericoptions.NewAdmissionOptions()
	UseNamespaceLifecycle(o)
	if errs := o.Validate(); len(errs) > 0 {
		t.Fatalf("admission options invalid: %v", errs)
	}
	if got := o.RecommendedPluginOrder[0]; got != NamespaceLifecyclePluginName {
		t.Fatalf("first plugin %q, want %q in place of NamespaceLifecycle", got, NamespaceLifecyclePluginName)
	}
	if !o.DefaultOffPlugins.Has("NamespaceLifecycle") {
		t.Errorf("the generic NamespaceLifecycle is on by default next to %s", NamespaceLifecyclePluginName)
	}
	kube := kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "here", UID: "here-uid"}})
	factory := informers.NewSharedInformerFactory(kube, 0)
	plugin, err := o.Plugins.InitPlugin(NamespaceLifecyclePluginName, nil, initializer.New(kube, nil, factory, nil, nil, nil, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	mutating := plugin.(admission.MutationInterface)

	deleting := metav1.Now()
	live := &agentsv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb", Finalizers: []string{"f"}}}
	beingDeleted := live.DeepCopy()
	beingDeleted.DeletionTimestamp = &deleting
	cases := []struct {
		name      string
		namespace string
		op        admission.Operation
		old       runtime.Object
		wantErr   bool
	}{
		{"create in an existing namespace", "here", admission.Create, nil, false},
		{"update in an existing namespace", "here", admission.Update, live, false},
		{"create in a missing namespace", "gone", admission.Create, nil, true},
		{"update of a live object in a missing namespace", "gone", admission.Update, live, true},
		{"update of an object being deleted in a missing namespace", "gone", admission.Update, beingDeleted, false},
		{"delete in a missing namespace", "gone", admission.Delete, live, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := live.DeepCopy()
			obj.Namespace = tc.namespace
			if tc.op == admission.Delete {
				obj = nil
			}
			attrs := admission.NewAttributesRecord(toObject(obj), tc.old, agentsv1beta1.SchemeGroupVersion.WithKind("Sandbox"),
				tc.namespace, "sb", agentsv1beta1.SchemeGroupVersion.WithResource("sandboxes"), "", tc.op, nil, false, nil)
			err := mutating.Admit(ctx, attrs, nil)
			if tc.wantErr != (err != nil) {
				t.Fatalf("Admit: %v, want an error: %v", err, tc.wantErr)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("Admit: %v, want NotFound for the namespace", err)
			}
		})
	}
}

// TestNamespaceUIDRecorded: the plugin records the namespace's UID on every object created, whatever
// the request says, and keeps it on every update; a request can neither change nor add it.
func TestNamespaceUIDRecorded(t *testing.T) {
	o := genericoptions.NewAdmissionOptions()
	UseNamespaceLifecycle(o)
	// "fresh" is too new for the cache: only the cluster has it.
	kube := kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "here", UID: "here-uid"}})
	factory := informers.NewSharedInformerFactory(kube, 0)
	plugin, err := o.Plugins.InitPlugin(NamespaceLifecyclePluginName, nil, initializer.New(kube, nil, factory, nil, nil, nil, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fresh", UID: "fresh-uid"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mutating := plugin.(admission.MutationInterface)
	const key = agentsv1beta1.NamespaceUIDAnnotation
	withUID := func(uid string) *agentsv1beta1.Sandbox {
		sb := &agentsv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb", Annotations: map[string]string{"keep": "me"}}}
		if uid != "" {
			sb.Annotations[key] = uid
		}
		return sb
	}
	cases := []struct {
		name      string
		namespace string
		op        admission.Operation
		obj, old  *agentsv1beta1.Sandbox
		want      string
	}{
		{"create records the namespace's UID", "here", admission.Create, withUID(""), nil, "here-uid"},
		{"create replaces a UID the request set", "here", admission.Create, withUID("forged"), nil, "here-uid"},
		{"create in a namespace the cache has not seen asks the cluster", "fresh", admission.Create, withUID(""), nil, "fresh-uid"},
		{"update keeps the recorded UID against a change", "here", admission.Update, withUID("forged"), withUID("old-uid"), "old-uid"},
		{"update keeps the recorded UID against a removal", "here", admission.Update, withUID(""), withUID("old-uid"), "old-uid"},
		{"update cannot add one to an object made before UIDs were recorded", "here", admission.Update, withUID("forged"), withUID(""), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.obj.Namespace = tc.namespace
			attrs := admission.NewAttributesRecord(tc.obj, toObject(tc.old), agentsv1beta1.SchemeGroupVersion.WithKind("Sandbox"),
				tc.namespace, "sb", agentsv1beta1.SchemeGroupVersion.WithResource("sandboxes"), "", tc.op, nil, false, nil)
			if err := mutating.Admit(ctx, attrs, nil); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if got := tc.obj.Annotations[key]; got != tc.want {
				t.Errorf("%s = %q, want %q", key, got, tc.want)
			}
			if tc.obj.Annotations["keep"] != "me" {
				t.Errorf("other annotations changed: %v", tc.obj.Annotations)
			}
		})
	}
}

// toObject keeps a nil *Sandbox a nil runtime.Object.
func toObject(sb *agentsv1beta1.Sandbox) runtime.Object {
	if sb == nil {
		return nil
	}
	return sb
}
