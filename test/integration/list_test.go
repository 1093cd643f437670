// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"fmt"
	"sort"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// TestList checks paginated lists and the selectors lists accept.
func TestList(t *testing.T) {
	t.Parallel()
	s := startServer(t)

	t.Run("pagination", func(t *testing.T) {
		ctx := testContext(t)
		const ns, total, limit = "pages", 25, 10
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		for i := range total {
			if _, err := sandboxes.Create(ctx, newSandbox(ns, fmt.Sprintf("sb-%02d", i)), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// One more in another namespace, which a namespaced list must not return.
		if _, err := s.Client.AgentsV1beta1().Sandboxes("elsewhere").Create(ctx, newSandbox("elsewhere", "sb-00"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}

		seen := map[string]int{}
		var pages []int
		opts := metav1.ListOptions{Limit: limit}
		var firstRV string
		for {
			list, err := sandboxes.List(ctx, opts)
			if err != nil {
				t.Fatalf("list page %d: %v", len(pages)+1, err)
			}
			if firstRV == "" {
				firstRV = list.ResourceVersion
			} else if list.ResourceVersion != firstRV {
				t.Errorf("page %d at resourceVersion %s, first page at %s: pages are not one snapshot", len(pages)+1, list.ResourceVersion, firstRV)
			}
			pages = append(pages, len(list.Items))
			for _, item := range list.Items {
				if item.Namespace != ns {
					t.Errorf("list of namespace %s returned %s/%s", ns, item.Namespace, item.Name)
				}
				seen[item.Name]++
			}
			if rem := list.RemainingItemCount; list.Continue != "" && (rem == nil || *rem != int64(total-len(seen))) {
				t.Errorf("remainingItemCount %v after %d items, want %d", rem, len(seen), total-len(seen))
			}
			if list.Continue == "" {
				break
			}
			if len(pages) > total {
				t.Fatal("pagination does not end")
			}
			opts.Continue = list.Continue
		}
		if fmt.Sprint(pages) != "[10 10 5]" {
			t.Errorf("page sizes %v, want [10 10 5]", pages)
		}
		if len(seen) != total {
			t.Errorf("saw %d distinct sandboxes, want %d", len(seen), total)
		}
		for name, n := range seen {
			if n != 1 {
				t.Errorf("%s listed %d times", name, n)
			}
		}

		all, err := s.Client.AgentsV1beta1().Sandboxes(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Items) != total+1 {
			t.Errorf("list across namespaces returned %d items, want %d", len(all.Items), total+1)
		}
	})

	t.Run("label selector", func(t *testing.T) {
		ctx := testContext(t)
		const ns = "labels"
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		for _, tier := range []string{"gold", "silver", "gold"} {
			sb := newSandbox(ns, "")
			sb.GenerateName = tier + "-"
			sb.Labels = map[string]string{"tier": tier}
			if _, err := sandboxes.Create(ctx, sb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		list, err := sandboxes.List(ctx, metav1.ListOptions{LabelSelector: "tier=gold"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 2 {
			t.Errorf("tier=gold selected %d sandboxes, want 2", len(list.Items))
		}
	})

	t.Run("field selector on the template reference", func(t *testing.T) {
		ctx := testContext(t)
		const ns = "fields"
		claims := s.Client.ExtensionsV1beta1().SandboxClaims(ns)
		pools := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns)
		byTemplate := map[string][]string{
			"python":    {"py-a", "py-b", "py-c"},
			"jupyter":   {"jup-a"},
			"python.v2": {"py-v-a"},
		}
		for tmpl, names := range byTemplate {
			for _, name := range names {
				if _, err := claims.Create(ctx, newClaim(ns, name, tmpl), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := pools.Create(ctx, newPool(ns, name, tmpl, 1), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}

		for tmpl, want := range byTemplate {
			selector := fields.OneTermEqualSelector(extv1beta1.TemplateRefField, tmpl).String()
			cl, err := claims.List(ctx, metav1.ListOptions{FieldSelector: selector})
			if err != nil {
				t.Fatalf("claims %s: %v", selector, err)
			}
			var gotClaims []string
			for _, c := range cl.Items {
				gotClaims = append(gotClaims, c.Name)
			}
			pl, err := pools.List(ctx, metav1.ListOptions{FieldSelector: selector})
			if err != nil {
				t.Fatalf("pools %s: %v", selector, err)
			}
			var gotPools []string
			for _, p := range pl.Items {
				gotPools = append(gotPools, p.Name)
			}
			sort.Strings(gotClaims)
			sort.Strings(gotPools)
			if fmt.Sprint(gotClaims) != fmt.Sprint(want) || fmt.Sprint(gotPools) != fmt.Sprint(want) {
				t.Errorf("%s: claims %v, pools %v, want %v", selector, gotClaims, gotPools, want)
			}
		}

		// Negation and combination with metadata fields work too.
		cl, err := claims.List(ctx, metav1.ListOptions{FieldSelector: "spec.sandboxTemplateRef.name!=python,metadata.name!=jup-a"})
		if err != nil {
			t.Fatal(err)
		}
		if len(cl.Items) != 1 || cl.Items[0].Name != "py-v-a" {
			t.Errorf("negated selector returned %d claims", len(cl.Items))
		}

		// The v1alpha1 endpoints know the field too.
		alpha, err := s.Client.ExtensionsV1alpha1().SandboxWarmPools(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.sandboxTemplateRef.name=jupyter"})
		if err != nil {
			t.Fatal(err)
		}
		if len(alpha.Items) != 1 || alpha.Items[0].Name != "jup-a" {
			t.Errorf("v1alpha1 pools of jupyter: %d items", len(alpha.Items))
		}

		// A watch with the field selector sees only the matching objects.
		w, err := claims.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.sandboxTemplateRef.name=watched", ResourceVersion: cl.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := claims.Create(ctx, newClaim(ns, "other", "unwatched"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := claims.Create(ctx, newClaim(ns, "seen", "watched"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		expectEvent(t, w, "ADDED", "seen")
	})

	t.Run("unsupported field selectors are 400", func(t *testing.T) {
		ctx := testContext(t)
		const ns = "fields"
		for name, list := range map[string]func(string) error{
			"claims": func(sel string) error {
				_, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
				return err
			},
			"pools": func(sel string) error {
				_, err := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
				return err
			},
			"sandboxes": func(sel string) error {
				_, err := s.Client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
				return err
			},
			"templates": func(sel string) error {
				_, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
				return err
			},
		} {
			for _, sel := range []string{"spec.replicas=1", "status.phase=Running"} {
				if err := list(sel); !apierrors.IsBadRequest(err) {
					t.Errorf("%s with %s: want 400 BadRequest, got %v", name, sel, err)
				}
			}
		}
		// Sandboxes and templates have no template reference to select on.
		_, err := s.Client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.sandboxTemplateRef.name=python"})
		if !apierrors.IsBadRequest(err) {
			t.Errorf("sandboxes with spec.sandboxTemplateRef.name: want 400 BadRequest, got %v", err)
		}
	})
}
