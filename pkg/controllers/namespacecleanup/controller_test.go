// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package namespacecleanup

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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
// cachedNamespaces and ours, while the cluster's API holds liveNamespaces. A namespace is given as
// its name, or as name:uid.
func newFixture(t *testing.T, cachedNamespaces, liveNamespaces []string, ours ...runtime.Object) *fixture {
	t.Helper()
	var live []runtime.Object
	for _, name := range liveNamespaces {
		live = append(live, namespace(name))
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
		if err := cfg.Namespaces.Informer().GetIndexer().Add(namespace(name)); err != nil {
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

func namespace(nameAndUID string) *corev1.Namespace {
	name, uid, _ := strings.Cut(nameAndUID, ":")
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}}
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

// TestSyncRecreatedNamespace: a namespace deleted and created again while the server was away is
// another namespace. The objects recorded with the old namespace's UID are deleted one by one (UID
// precondition); the new namespace's objects, and objects made before UIDs were recorded, stay.
func TestSyncRecreatedNamespace(t *testing.T) {
	in := func(uid string, name string) metav1.ObjectMeta {
		m := objectMeta("team", name)
		m.UID = types.UID(name + "-uid")
		if uid != "" {
			m.Annotations = map[string]string{agentsv1beta1.NamespaceUIDAnnotation: uid}
		}
		return m
	}
	ours := []runtime.Object{
		&agentsv1beta1.Sandbox{ObjectMeta: in("old-ns", "old-sb")},
		&extensionsv1beta1.SandboxClaim{ObjectMeta: in("old-ns", "old-claim")},
		&extensionsv1beta1.SandboxWarmPool{ObjectMeta: in("old-ns", "old-pool")},
		&extensionsv1beta1.SandboxTemplate{ObjectMeta: in("old-ns", "old-tmpl")},
		&agentsv1beta1.Sandbox{ObjectMeta: in("new-ns", "new-sb")},
		&agentsv1beta1.Sandbox{ObjectMeta: in("", "legacy-sb")},
	}
	oldOnes := map[string]string{"sandboxclaims": "old-claim", "sandboxwarmpools": "old-pool", "sandboxtemplates": "old-tmpl", "sandboxes": "old-sb"}
	for _, tc := range []struct {
		name         string
		cached, live []string
		ours         []runtime.Object
		wantDeleted  map[string]string
	}{
		{name: "recreated: the old namespace's objects deleted", cached: []string{"team:new-ns"}, live: []string{"team:new-ns"}, ours: ours, wantDeleted: oldOnes},
		{name: "recreated, the cache still shows the old namespace: the API decides", cached: []string{"team:old-ns"}, live: []string{"team:new-ns"}, ours: ours, wantDeleted: oldOnes},
		{name: "the cache behind a recreation, only new objects: nothing deleted", cached: []string{"team:old-ns"}, live: []string{"team:new-ns"}, ours: ours[4:]},
		{name: "same namespace: nothing deleted", cached: []string{"team:old-ns"}, live: []string{"team:old-ns"}, ours: ours[:4]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cached, tc.live, tc.ours...)
			if err := f.ctrl.sync(context.Background(), "team"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got := f.deletions(); len(got) != 0 {
				t.Errorf("deleted collections %v, want single objects only", got)
			}
			deleted := map[string]string{}
			for _, a := range f.client.Actions() {
				if d, ok := a.(clienttesting.DeleteAction); ok && a.GetVerb() == "delete" {
					deleted[a.GetResource().Resource] = d.GetName()
					if p := d.GetDeleteOptions().Preconditions; p == nil || p.UID == nil || *p.UID != types.UID(d.GetName()+"-uid") {
						t.Errorf("delete of %s without its UID precondition: %+v", d.GetName(), d.GetDeleteOptions())
					}
				}
			}
			if len(deleted) != len(tc.wantDeleted) {
				t.Errorf("deleted %v, want %v", deleted, tc.wantDeleted)
			}
			for r, name := range tc.wantDeleted {
				if deleted[r] != name {
					t.Errorf("deleted %v, want %v", deleted, tc.wantDeleted)
				}
			}
		})
	}
}

func TestObjectsOfAnEarlierNamespaceQueueIt(t *testing.T) {
	f := newFixture(t, []string{"team:new-ns"}, nil)
	meta := func(uid string) metav1.ObjectMeta {
		m := objectMeta("team", "x")
		m.Annotations = map[string]string{agentsv1beta1.NamespaceUIDAnnotation: uid}
		return m
	}
	f.ctrl.checkNamespaceOf(&agentsv1beta1.Sandbox{ObjectMeta: meta("new-ns")})
	if n := f.ctrl.loop.Queue.Len(); n != 0 {
		t.Fatalf("an object of the current namespace queued %d keys, want none", n)
	}
	f.ctrl.checkNamespaceOf(&agentsv1beta1.Sandbox{ObjectMeta: meta("old-ns")})
	if key, _ := f.ctrl.loop.Queue.Get(); key != "team" {
		t.Errorf("queued %q, want team", key)
	}
}
