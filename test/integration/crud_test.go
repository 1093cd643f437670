// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// resourceClient is what the generated typed client of every kind offers, for the checks the four
// kinds share.
type resourceClient[T runtime.Object, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// patchCase is one patch of a CRUD test and the check of its result.
type patchCase[T runtime.Object] struct {
	name  string
	typ   types.PatchType
	body  string
	check func(t *testing.T, got T)
}

// crudCase describes the CRUD round of one kind.
type crudCase[T runtime.Object, L runtime.Object] struct {
	client  resourceClient[T, L]
	obj     T
	mutate  func(T)             // the change of the update
	checkUp func(*testing.T, T) // the check of the update's result
	patches []patchCase[T]      // run in order, after the update
}

// runCRUD creates, gets, lists, updates, patches and deletes one object while a watch on its name
// sees ADDED, one MODIFIED per write and DELETED.
func runCRUD[T runtime.Object, L runtime.Object](t *testing.T, c crudCase[T, L]) {
	ctx := testContext(t)
	m, err := meta.Accessor(c.obj)
	if err != nil {
		t.Fatal(err)
	}
	name := m.GetName()

	w, err := c.client.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	created, err := c.client.Create(ctx, c.obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	cm, _ := meta.Accessor(created)
	if ts := cm.GetCreationTimestamp(); cm.GetUID() == "" || cm.GetResourceVersion() == "" || ts.IsZero() {
		t.Fatalf("create did not fill uid, resourceVersion and creationTimestamp: %+v", cm)
	}
	added := expectEvent(t, w, watch.Added, name)
	if added.GetResourceVersion() != cm.GetResourceVersion() {
		t.Errorf("ADDED event at resourceVersion %s, create returned %s", added.GetResourceVersion(), cm.GetResourceVersion())
	}

	got, err := c.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if jsonOf(t, got) != jsonOf(t, created) {
		t.Errorf("get differs from create:\n get: %s\ncreate: %s", jsonOf(t, got), jsonOf(t, created))
	}

	list, err := c.client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, item := range items {
		if im, _ := meta.Accessor(item); im.GetName() == name {
			found++
		}
	}
	if found != 1 {
		t.Errorf("list holds %d objects named %s, want 1", found, name)
	}

	c.mutate(got)
	updated, err := c.client.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	c.checkUp(t, updated)
	um, _ := meta.Accessor(updated)
	if um.GetResourceVersion() == cm.GetResourceVersion() {
		t.Errorf("update kept resourceVersion %s", um.GetResourceVersion())
	}
	expectEvent(t, w, watch.Modified, name)

	// An update from a stale copy is a conflict.
	stale := created.DeepCopyObject().(T)
	c.mutate(stale)
	if _, err := c.client.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with a stale resourceVersion: want 409 Conflict, got %v", err)
	}

	for _, p := range c.patches {
		patched, err := c.client.Patch(ctx, name, p.typ, []byte(p.body), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		p.check(t, patched)
		ev := expectEvent(t, w, watch.Modified, name)
		if pm, _ := meta.Accessor(patched); ev.GetResourceVersion() != pm.GetResourceVersion() {
			t.Errorf("%s: MODIFIED event at resourceVersion %s, patch returned %s", p.name, ev.GetResourceVersion(), pm.GetResourceVersion())
		}
	}

	if err := c.client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	expectEvent(t, w, watch.Deleted, name)
	if _, err := c.client.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: want 404 NotFound, got %v", err)
	}
	if err := c.client.Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: want 404 NotFound, got %v", err)
	}
}

// Patch bodies shared by the kinds that embed a pod template. A strategic merge patch merges the
// containers list by name (the Go PodSpec carries the patch strategy), a JSON merge patch replaces it.
const (
	addSidecarStrategic = `{"spec":{"podTemplate":{"spec":{"containers":[{"name":"sidecar","image":"envoy:1.30"}]}}}}`
	labelMergePatch     = `{"metadata":{"labels":{"patched":"merge"}}}`
)

// containerNames returns the sorted names of the containers of a pod template.
func containerNames(pt agentsv1beta1.PodTemplate) []string {
	var names []string
	for _, c := range pt.Spec.Containers {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}

// container returns the named container of a pod template, or nil.
func container(pt agentsv1beta1.PodTemplate, name string) *corev1.Container {
	for i := range pt.Spec.Containers {
		if pt.Spec.Containers[i].Name == name {
			return &pt.Spec.Containers[i]
		}
	}
	return nil
}

// expectContainers checks the names of the containers of a pod template, in any order.
func expectContainers(t *testing.T, pt agentsv1beta1.PodTemplate, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := containerNames(pt); jsonOf(t, got) != jsonOf(t, want) {
		t.Errorf("containers %v, want %v", got, want)
	}
}

func TestCRUD(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "crud"

	t.Run("Sandbox", func(t *testing.T) {
		runCRUD(t, crudCase[*agentsv1beta1.Sandbox, *agentsv1beta1.SandboxList]{
			client: s.Client.AgentsV1beta1().Sandboxes(ns),
			obj:    newSandbox(ns, "sb"),
			mutate: func(o *agentsv1beta1.Sandbox) { o.Spec.Service = ptr.To(true) },
			checkUp: func(t *testing.T, o *agentsv1beta1.Sandbox) {
				if o.Spec.Service == nil || !*o.Spec.Service {
					t.Errorf("update: spec.service %v, want true", o.Spec.Service)
				}
			},
			patches: []patchCase[*agentsv1beta1.Sandbox]{
				{"merge patch", types.MergePatchType, `{"spec":{"replicas":0}}`, func(t *testing.T, o *agentsv1beta1.Sandbox) {
					if int32Of(o.Spec.Replicas) != 0 {
						t.Errorf("merge patch: replicas %d, want 0", int32Of(o.Spec.Replicas))
					}
					if o.Spec.Service == nil || !*o.Spec.Service {
						t.Errorf("merge patch lost spec.service")
					}
				}},
				{"json patch", types.JSONPatchType, `[{"op":"replace","path":"/spec/shutdownPolicy","value":"Delete"},{"op":"add","path":"/metadata/labels/patched","value":"json"}]`,
					func(t *testing.T, o *agentsv1beta1.Sandbox) {
						if o.Spec.ShutdownPolicy == nil || *o.Spec.ShutdownPolicy != agentsv1beta1.ShutdownPolicyDelete {
							t.Errorf("json patch: shutdownPolicy %v, want Delete", o.Spec.ShutdownPolicy)
						}
						if o.Labels["patched"] != "json" || o.Labels["app"] != "agent" {
							t.Errorf("json patch: labels %v", o.Labels)
						}
					}},
				{"strategic merge patch", types.StrategicMergePatchType, addSidecarStrategic, func(t *testing.T, o *agentsv1beta1.Sandbox) {
					expectContainers(t, o.Spec.PodTemplate, "agent", "sidecar")
					if c := container(o.Spec.PodTemplate, "agent"); c == nil || len(c.Command) == 0 {
						t.Errorf("strategic merge patch did not merge the agent container: %s", jsonOf(t, c))
					}
				}},
				{"merge patch replaces lists", types.MergePatchType, `{"spec":{"podTemplate":{"spec":{"containers":[{"name":"only","image":"busybox"}]}}}}`,
					func(t *testing.T, o *agentsv1beta1.Sandbox) { expectContainers(t, o.Spec.PodTemplate, "only") }},
			},
		})
	})

	t.Run("SandboxTemplate", func(t *testing.T) {
		runCRUD(t, crudCase[*extv1beta1.SandboxTemplate, *extv1beta1.SandboxTemplateList]{
			client: s.Client.ExtensionsV1beta1().SandboxTemplates(ns),
			obj:    newTemplate(ns, "tmpl"),
			mutate: func(o *extv1beta1.SandboxTemplate) {
				o.Spec.EnvVarsInjectionPolicy = extv1beta1.EnvVarsInjectionPolicyAllowed
			},
			checkUp: func(t *testing.T, o *extv1beta1.SandboxTemplate) {
				if o.Spec.EnvVarsInjectionPolicy != extv1beta1.EnvVarsInjectionPolicyAllowed {
					t.Errorf("update: envVarsInjectionPolicy %q, want Allowed", o.Spec.EnvVarsInjectionPolicy)
				}
			},
			patches: []patchCase[*extv1beta1.SandboxTemplate]{
				{"merge patch", types.MergePatchType, `{"spec":{"service":true}}`, func(t *testing.T, o *extv1beta1.SandboxTemplate) {
					if o.Spec.Service == nil || !*o.Spec.Service {
						t.Errorf("merge patch: service %v, want true", o.Spec.Service)
					}
				}},
				{"json patch", types.JSONPatchType, `[{"op":"replace","path":"/spec/networkPolicyManagement","value":"Unmanaged"}]`,
					func(t *testing.T, o *extv1beta1.SandboxTemplate) {
						if o.Spec.NetworkPolicyManagement != extv1beta1.NetworkPolicyManagementUnmanaged {
							t.Errorf("json patch: networkPolicyManagement %q, want Unmanaged", o.Spec.NetworkPolicyManagement)
						}
					}},
				{"strategic merge patch", types.StrategicMergePatchType, addSidecarStrategic, func(t *testing.T, o *extv1beta1.SandboxTemplate) {
					expectContainers(t, o.Spec.PodTemplate, "agent", "sidecar")
				}},
			},
		})
	})

	t.Run("SandboxClaim", func(t *testing.T) {
		runCRUD(t, crudCase[*extv1beta1.SandboxClaim, *extv1beta1.SandboxClaimList]{
			client: s.Client.ExtensionsV1beta1().SandboxClaims(ns),
			obj:    newClaim(ns, "claim", "tmpl"),
			mutate: func(o *extv1beta1.SandboxClaim) {
				o.Spec.AdditionalPodMetadata.Labels = map[string]string{"tier": "gold"}
			},
			checkUp: func(t *testing.T, o *extv1beta1.SandboxClaim) {
				if o.Spec.AdditionalPodMetadata.Labels["tier"] != "gold" {
					t.Errorf("update: additionalPodMetadata %v", o.Spec.AdditionalPodMetadata)
				}
			},
			patches: []patchCase[*extv1beta1.SandboxClaim]{
				{"merge patch", types.MergePatchType, `{"spec":{"lifecycle":{"shutdownPolicy":"Delete","ttlSecondsAfterFinished":60}}}`,
					func(t *testing.T, o *extv1beta1.SandboxClaim) {
						if lc := o.Spec.Lifecycle; lc == nil || lc.ShutdownPolicy == nil || *lc.ShutdownPolicy != extv1beta1.ShutdownPolicyDelete ||
							int32Of(lc.TTLSecondsAfterFinished) != 60 {
							t.Errorf("merge patch: lifecycle %s", jsonOf(t, lc))
						}
					}},
				{"json patch", types.JSONPatchType, `[{"op":"add","path":"/spec/additionalPodMetadata/annotations","value":{"cost-center":"42"}}]`,
					func(t *testing.T, o *extv1beta1.SandboxClaim) {
						if o.Spec.AdditionalPodMetadata.Annotations["cost-center"] != "42" || o.Spec.AdditionalPodMetadata.Labels["tier"] != "gold" {
							t.Errorf("json patch: additionalPodMetadata %s", jsonOf(t, o.Spec.AdditionalPodMetadata))
						}
					}},
				{"strategic merge patch", types.StrategicMergePatchType, `{"spec":{"additionalPodMetadata":{"labels":{"zone":"a"}}}}`,
					func(t *testing.T, o *extv1beta1.SandboxClaim) {
						if l := o.Spec.AdditionalPodMetadata.Labels; l["zone"] != "a" || l["tier"] != "gold" {
							t.Errorf("strategic merge patch: labels %v", l)
						}
					}},
			},
		})
	})

	t.Run("SandboxWarmPool", func(t *testing.T) {
		runCRUD(t, crudCase[*extv1beta1.SandboxWarmPool, *extv1beta1.SandboxWarmPoolList]{
			client:  s.Client.ExtensionsV1beta1().SandboxWarmPools(ns),
			obj:     newPool(ns, "pool", "tmpl", 2),
			mutate:  func(o *extv1beta1.SandboxWarmPool) { o.Spec.Replicas = ptr.To[int32](3) },
			checkUp: func(t *testing.T, o *extv1beta1.SandboxWarmPool) { expectPoolReplicas(t, o, 3) },
			patches: []patchCase[*extv1beta1.SandboxWarmPool]{
				{"merge patch", types.MergePatchType, `{"spec":{"updateStrategy":{"type":"Recreate"}}}`, func(t *testing.T, o *extv1beta1.SandboxWarmPool) {
					if o.Spec.UpdateStrategy == nil || o.Spec.UpdateStrategy.Type != extv1beta1.RecreateSandboxWarmPoolUpdateStrategyType {
						t.Errorf("merge patch: updateStrategy %s", jsonOf(t, o.Spec.UpdateStrategy))
					}
					expectPoolReplicas(t, o, 3)
				}},
				{"json patch", types.JSONPatchType, `[{"op":"test","path":"/spec/replicas","value":3},{"op":"replace","path":"/spec/replicas","value":4}]`,
					func(t *testing.T, o *extv1beta1.SandboxWarmPool) { expectPoolReplicas(t, o, 4) }},
				{"strategic merge patch", types.StrategicMergePatchType, labelMergePatch, func(t *testing.T, o *extv1beta1.SandboxWarmPool) {
					if o.Labels["patched"] != "merge" {
						t.Errorf("strategic merge patch: labels %v", o.Labels)
					}
				}},
			},
		})
	})

	t.Run("failed JSON patch test is refused", func(t *testing.T) {
		ctx := testContext(t)
		pools := s.Client.ExtensionsV1beta1().SandboxWarmPools(ns)
		if _, err := pools.Create(ctx, newPool(ns, "tested", "tmpl", 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := pools.Patch(ctx, "tested", types.JSONPatchType,
			[]byte(`[{"op":"test","path":"/spec/replicas","value":7},{"op":"replace","path":"/spec/replicas","value":8}]`), metav1.PatchOptions{})
		if err == nil {
			t.Fatal("a JSON patch whose test operation fails was applied")
		}
		got, err := pools.Get(ctx, "tested", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		expectPoolReplicas(t, got, 1)
	})

	t.Run("patch of a missing object is NotFound", func(t *testing.T) {
		ctx := testContext(t)
		_, err := s.Client.AgentsV1beta1().Sandboxes(ns).Patch(ctx, "missing", types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("want 404 NotFound, got %v", err)
		}
	})

	t.Run("create of an existing name is AlreadyExists", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		if _, err := sandboxes.Create(ctx, newSandbox(ns, "twice"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := sandboxes.Create(ctx, newSandbox(ns, "twice"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Errorf("want 409 AlreadyExists, got %v", err)
		}
	})

	t.Run("dry run stores nothing", func(t *testing.T) {
		ctx := testContext(t)
		sandboxes := s.Client.AgentsV1beta1().Sandboxes(ns)
		got, err := sandboxes.Create(ctx, newSandbox(ns, "dry"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		if int32Of(got.Spec.Replicas) != 1 {
			t.Errorf("a dry-run create is not defaulted: replicas %d", int32Of(got.Spec.Replicas))
		}
		if _, err := sandboxes.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a dry-run create stored the Sandbox: %v", err)
		}
		bad := newSandbox(ns, "dry")
		bad.Spec.Replicas = ptr.To[int32](2)
		_, err = sandboxes.Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		expectInvalid(t, err, "spec.replicas")
	})

	t.Run("delete preconditions and delete collection", func(t *testing.T) {
		ctx := testContext(t)
		const ns = "crud-collection"
		templates := s.Client.ExtensionsV1beta1().SandboxTemplates(ns)
		var first *extv1beta1.SandboxTemplate
		for _, name := range []string{"t1", "t2", "t3"} {
			tmpl := newTemplate(ns, name)
			tmpl.Labels = map[string]string{"batch": "x"}
			created, err := templates.Create(ctx, tmpl, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = created
			}
		}
		wrongUID := types.UID("not-" + string(first.UID))
		err := templates.Delete(ctx, "t1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrongUID}})
		if !apierrors.IsConflict(err) {
			t.Errorf("delete with a wrong UID precondition: want 409 Conflict, got %v", err)
		}
		staleRV := "1"
		err = templates.Delete(ctx, "t1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &staleRV}})
		if !apierrors.IsConflict(err) {
			t.Errorf("delete with a stale resourceVersion precondition: want 409 Conflict, got %v", err)
		}
		if err := templates.Delete(ctx, "t1", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &first.UID}}); err != nil {
			t.Errorf("delete with the right UID precondition: %v", err)
		}
		if err := templates.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "batch=x"}); err != nil {
			t.Fatalf("delete collection: %v", err)
		}
		left, err := templates.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(left.Items) != 0 {
			t.Errorf("%d templates left after delete collection", len(left.Items))
		}
	})

	t.Run("generateName", func(t *testing.T) {
		ctx := testContext(t)
		sb := newSandbox(ns, "")
		sb.GenerateName = "gen-"
		got, err := s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, sb, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Name) <= len("gen-") || got.Name[:4] != "gen-" {
			t.Errorf("generated name %q", got.Name)
		}
	})
}

func expectPoolReplicas(t *testing.T, o *extv1beta1.SandboxWarmPool, want int32) {
	t.Helper()
	if got := ptr.Deref(o.Spec.Replicas, -1); got != want {
		t.Errorf("pool replicas %d, want %d", got, want)
	}
}
