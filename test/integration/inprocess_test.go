// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// TestInProcessInformers checks the controllers' caches of our kinds, which list and watch this
// server's registries in process: they hold what the API serves, through the initial list and
// every later event, honour a label selector, and what their transform drops stays in what the
// API serves (the cached objects share their contents with the watch cache's).
func TestInProcessInformers(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := testContext(t)
	const ns = "inprocess"
	sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)

	listed, err := sandboxes.Create(ctx, newSandbox(ns, "listed"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.ManagedFields) == 0 {
		t.Fatal("a created Sandbox has no managedFields; the transform check below needs some")
	}
	if _, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Create(ctx, newTemplate(ns, "tmpl"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// As the controllers' caches are built: managedFields dropped by a transform.
	all := s.Ours.InformerFactory(s.Client, func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}, nil)
	picked := s.Ours.InformerFactory(s.Client, nil, func(lo *metav1.ListOptions) { lo.LabelSelector = "pick=me" })

	// Informers are made when first asked for, and a factory starts only those made before.
	sbInformer := all.Agents().V1beta1().Sandboxes()
	cachedSandboxes := sbInformer.Lister()
	templates := all.Extensions().V1beta1().SandboxTemplates().Lister()
	pickedSandboxes := picked.Agents().V1beta1().Sandboxes().Lister()
	stop := make(chan struct{})
	defer close(stop)
	all.Start(stop)
	picked.Start(stop)
	for typ, ok := range all.WaitForCacheSync(stop) {
		if !ok {
			t.Fatalf("%v informer did not sync", typ)
		}
	}
	picked.WaitForCacheSync(stop)

	// cachedAsServed waits until the cache holds name as a GET serves it now (managedFields apart).
	cachedAsServed := func(name string) {
		t.Helper()
		var cached, served *agentsv1beta1.Sandbox
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var err error
			if served, err = sandboxes.Get(ctx, name, metav1.GetOptions{}); err != nil {
				return false, err
			}
			cached, err = cachedSandboxes.Sandboxes(ns).Get(name)
			return err == nil && cached.ResourceVersion == served.ResourceVersion, nil
		})
		if err != nil {
			t.Fatalf("Sandbox %s: the cache does not reach the served version: %v", name, err)
		}
		served.ManagedFields = nil
		served.TypeMeta = cached.TypeMeta
		if !apiequality.Semantic.DeepEqual(cached, served) {
			t.Errorf("Sandbox %s cached differs from served:\ncached %s\nserved %s", name, jsonOf(t, cached), jsonOf(t, served))
		}
	}

	t.Run("listed", func(t *testing.T) {
		cachedAsServed("listed")
		if _, err := templates.SandboxTemplates(ns).Get("tmpl"); err != nil {
			t.Errorf("the template is not cached: %v", err)
		}
	})

	t.Run("watched", func(t *testing.T) {
		if _, err := sandboxes.Create(ctx, newSandbox(ns, "watched"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cachedAsServed("watched")
		sb, err := sandboxes.Get(ctx, "listed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sb.Labels = map[string]string{"pick": "me"}
		if _, err := sandboxes.Update(ctx, sb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		cachedAsServed("listed")
		if err := sandboxes.Delete(ctx, "watched", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			_, ok, err := sbInformer.Informer().GetIndexer().GetByKey(ns + "/watched")
			return !ok, err
		}); err != nil {
			t.Errorf("the deleted Sandbox stays cached: %v", err)
		}
	})

	t.Run("label selector", func(t *testing.T) {
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			got, err := pickedSandboxes.List(labels.Everything())
			return len(got) == 1 && got[0].Name == "listed", err
		}); err != nil {
			got, _ := pickedSandboxes.List(labels.Everything())
			t.Errorf("the selected cache holds %d Sandboxes, want only the labelled one: %v", len(got), err)
		}
	})

	// Read from the watch cache (resourceVersion 0), whose objects the caches share.
	t.Run("transform leaves the served object alone", func(t *testing.T) {
		list, err := sandboxes.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 0 {
			t.Fatal("no Sandbox listed")
		}
		for _, sb := range list.Items {
			if len(sb.ManagedFields) == 0 {
				t.Errorf("Sandbox %s is served without managedFields after its cache dropped them", sb.Name)
			}
		}
		tmpl, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Get(ctx, "tmpl", metav1.GetOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		if len(tmpl.ManagedFields) == 0 {
			t.Error("the template is served without managedFields after its cache dropped them")
		}
	})

}
