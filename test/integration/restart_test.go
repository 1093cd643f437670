// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

// TestRestart stores objects of all four kinds, stops the server and starts a new one on the same
// data directory: everything is still there, unchanged, and the new server keeps serving writes.
func TestRestart(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	s := framework.StartServer(t, dataDir)
	ctx := testContext(t)
	const ns = "restart"

	type stored struct{ uid, rv, json string }
	before := map[string]stored{}
	record := func(kind string, m metav1.Object, obj any) {
		before[kind] = stored{string(m.GetUID()), m.GetResourceVersion(), jsonOf(t, obj)}
	}

	sb, err := s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, richSandbox(ns, "durable"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sb.Status.Replicas = 1
	sb.Status.LabelSelector = "agents.x-k8s.io/sandbox-name-hash=abcd1234"
	if sb, err = s.Client.AgentsV1beta1().Sandboxes(ns).UpdateStatus(ctx, sb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	record("Sandbox", sb, sb)
	tmpl, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Create(ctx, newTemplate(ns, "durable"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	record("SandboxTemplate", tmpl, tmpl)
	claim, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "durable", "durable"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	record("SandboxClaim", claim, claim)
	pool, err := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).Create(ctx, newPool(ns, "durable", "durable", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	record("SandboxWarmPool", pool, pool)
	// A deleted object stays deleted.
	if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, newSandbox(ns, "gone"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Client.AgentsV1beta1().Sandboxes(ns).Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	s.Stop()
	s = framework.StartServer(t, dataDir)

	check := func(kind string, m metav1.Object, obj any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s after restart: %v", kind, err)
			return
		}
		want := before[kind]
		if string(m.GetUID()) != want.uid || m.GetResourceVersion() != want.rv {
			t.Errorf("%s after restart: uid %s resourceVersion %s, want uid %s resourceVersion %s",
				kind, m.GetUID(), m.GetResourceVersion(), want.uid, want.rv)
		}
		if got := jsonOf(t, obj); got != want.json {
			t.Errorf("%s changed across the restart:\nbefore: %s\n after: %s", kind, want.json, got)
		}
	}
	gotSB, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "durable", metav1.GetOptions{})
	check("Sandbox", gotSB, gotSB, err)
	gotTmpl, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Get(ctx, "durable", metav1.GetOptions{})
	check("SandboxTemplate", gotTmpl, gotTmpl, err)
	gotClaim, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Get(ctx, "durable", metav1.GetOptions{})
	check("SandboxClaim", gotClaim, gotClaim, err)
	gotPool, err := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).Get(ctx, "durable", metav1.GetOptions{})
	check("SandboxWarmPool", gotPool, gotPool, err)

	list, err := s.Client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "durable" {
		t.Errorf("sandboxes after restart: %d items, want only durable", len(list.Items))
	}

	// The new server writes on top of the old history: resourceVersions keep growing and a watch
	// from the stored resourceVersion sees the change.
	w, err := s.Client.AgentsV1beta1().Sandboxes(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	gotSB.Labels["restarted"] = "yes"
	updated, err := s.Client.AgentsV1beta1().Sandboxes(ns).Update(ctx, gotSB, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update after restart: %v", err)
	}
	if updated.ResourceVersion == gotSB.ResourceVersion {
		t.Errorf("update after restart kept resourceVersion %s", updated.ResourceVersion)
	}
	expectEvent(t, w, watch.Modified, "durable")
}
