// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package namespacecleanup

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
)

type fixture struct {
	kube   *kubefake.Clientset
	client *fake.Clientset
	ctrl   *Controller
}

// newFixture builds the controller on informers that are never started: their caches hold
// cachedNamespaces and ours, while the cluster's API holds liveNamespaces.
func newFixture(t *testing.T, cachedNamespaces, liveNamespaces []string, ours ...runtime.Object) *fixture {
	t.Helper()
	var live []runtime.Object
	for _, name := range liveNamespaces {
		live = append(live, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	f := &fixture{kube: kubefake.NewClientset(live...), client: fake.NewSimpleClientset(ours...)}
	kubeInformers := informers.NewSharedInformerFactory(f.kube, 0)
	ourInformers := externalversions.NewSharedInformerFactory(f.client, 0)
	cfg := Config{
		Kube: f.kube, Client: f.client,
		Namespaces: kubeInformers.Core().V1().Namespaces(),
		Sandboxes:  ourInformers.Agents().V1beta1().Sandboxes(),
		Claims:     ourInformers.Extensions().V1beta1().SandboxClaims(),
		WarmPools:  ourInformers.Extensions().V1beta1().SandboxWarmPools(),
		Templates:  ourInformers.Extensions().V1beta1().SandboxTemplates(),
	}
	ctrl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range cachedNamespaces {
		if err := cfg.Namespaces.Informer().GetIndexer().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	indexers := map[string]interface{ Add(any) error }{
		"Sandbox":         cfg.Sandboxes.Informer().GetIndexer(),
		"SandboxClaim":    cfg.Claims.Informer().GetIndexer(),
		"SandboxWarmPool": cfg.WarmPools.Informer().GetIndexer(),
		"SandboxTemplate": cfg.Templates.Informer().GetIndexer(),
	}
	for _, o := range ours {
		kind := ""
		switch o.(type) {
		case *agentsv1beta1.Sandbox:
			kind = "Sandbox"
		case *extensionsv1beta1.SandboxClaim:
			kind = "SandboxClaim"
		case *extensionsv1beta1.SandboxWarmPool:
			kind = "SandboxWarmPool"
		case *extensionsv1beta1.SandboxTemplate:
			kind = "SandboxTemplate"
		}
		if err := indexers[kind].Add(o); err != nil {
			t.Fatal(err)
		}
	}
	f.ctrl = ctrl
	return f
}

// deletions lists the collections deleted through our API, as resource/namespace.
func (f *fixture) deletions() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "delete-collection" {
			out = append(out, a.GetResource().Resource+"/"+a.GetNamespace())
		}
	}
	return out
}

func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}

func TestSync(t *testing.T) {
	everyKind := []runtime.Object{
		&agentsv1beta1.Sandbox{ObjectMeta: objectMeta("gone", "sb")},
		&extensionsv1beta1.SandboxClaim{ObjectMeta: objectMeta("gone", "claim")},
		&extensionsv1beta1.SandboxWarmPool{ObjectMeta: objectMeta("gone", "pool")},
		&extensionsv1beta1.SandboxTemplate{ObjectMeta: objectMeta("gone", "tmpl")},
		&agentsv1beta1.Sandbox{ObjectMeta: objectMeta("kept", "sb")},
	}
	cases := []struct {
		name           string
		cached, live   []string
		ours           []runtime.Object
		namespace      string
		wantDeletions  []string
		wantKubeLookup bool
	}{
		{
			name: "namespace in the cache: nothing deleted, no lookup", cached: []string{"gone"}, live: []string{"gone"},
			ours: everyKind, namespace: "gone",
		},
		{
			name: "namespace too new for the cache: the API has it, nothing deleted", live: []string{"gone"},
			ours: everyKind, namespace: "gone", wantKubeLookup: true,
		},
		{
			name: "namespace gone: every kind deleted there, claims and pools first", cached: []string{"kept"}, live: []string{"kept"},
			ours: everyKind, namespace: "gone", wantKubeLookup: true,
			wantDeletions: []string{"sandboxclaims/gone", "sandboxwarmpools/gone", "sandboxtemplates/gone", "sandboxes/gone"},
		},
		{
			name: "namespace gone: only the kinds with objects left are deleted",
			ours: []runtime.Object{&agentsv1beta1.Sandbox{ObjectMeta: objectMeta("gone", "sb")}}, namespace: "gone", wantKubeLookup: true,
			wantDeletions: []string{"sandboxes/gone"},
		},
		{
			name: "namespace gone and nothing of ours in it: nothing deleted", live: []string{"kept"},
			ours: everyKind[4:], namespace: "gone", wantKubeLookup: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cached, tc.live, tc.ours...)
			if err := f.ctrl.sync(context.Background(), tc.namespace); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got := f.deletions(); !slices.Equal(got, tc.wantDeletions) {
				t.Errorf("deleted collections %v, want %v", got, tc.wantDeletions)
			}
			lookedUp := slices.ContainsFunc(f.kube.Actions(), func(a clienttesting.Action) bool { return a.GetVerb() == "get" })
			if lookedUp != tc.wantKubeLookup {
				t.Errorf("asked the cluster for the namespace: %v, want %v", lookedUp, tc.wantKubeLookup)
			}
		})
	}
}

func TestObjectsQueueTheirMissingNamespace(t *testing.T) {
	f := newFixture(t, []string{"here"}, nil)
	f.ctrl.checkNamespaceOf(&extensionsv1beta1.SandboxClaim{ObjectMeta: objectMeta("here", "a")})
	if n := f.ctrl.loop.Queue.Len(); n != 0 {
		t.Fatalf("an object in a cached namespace queued %d keys, want none", n)
	}
	f.ctrl.checkNamespaceOf(&agentsv1beta1.Sandbox{ObjectMeta: objectMeta("elsewhere", "b")})
	f.ctrl.checkNamespaceOf(&extensionsv1beta1.SandboxTemplate{ObjectMeta: objectMeta("elsewhere", "c")})
	if n := f.ctrl.loop.Queue.Len(); n != 1 {
		t.Fatalf("queue holds %d keys, want the one missing namespace", n)
	}
	if key, _ := f.ctrl.loop.Queue.Get(); key != "elsewhere" {
		t.Errorf("queued %q, want %q", key, "elsewhere")
	}
}
