// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
)

const (
	testNS       = "default"
	testClaim    = "my-claim"
	testClaimUID = types.UID("claim-uid-1")
	testTemplate = "python"
	testPool     = "fast-pool"
	testGen      = int64(4)
)

// testNow is the controller's clock in every test.
var testNow = time.Date(2026, 4, 13, 12, 0, 0, 0, time.UTC)

// fnvHash is the 32-bit FNV-1a of s in 8 hex digits, computed here rather than through the
// naming package the controller uses.
func fnvHash(s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("%08x", h.Sum32())
}

var (
	templateHash = fnvHash(testTemplate)
	poolHash     = fnvHash(testPool)

	sandboxesGVR = agentsv1beta1.SchemeGroupVersion.WithResource("sandboxes")
	claimsGVR    = extensionsv1beta1.SchemeGroupVersion.WithResource("sandboxclaims")
	templatesGVR = extensionsv1beta1.SchemeGroupVersion.WithResource("sandboxtemplates")
)

// ---- object builders ----

// newClaim is a live claim of the test template with the finalizer; mods adjust it.
func newClaim(mods ...func(*extensionsv1beta1.SandboxClaim)) *extensionsv1beta1.SandboxClaim {
	c := &extensionsv1beta1.SandboxClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: extensionsv1beta1.SchemeGroupVersion.String(), Kind: "SandboxClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name: testClaim, Namespace: testNS, UID: testClaimUID, Generation: testGen,
			ResourceVersion:   "100",
			CreationTimestamp: metav1.NewTime(testNow.Add(-time.Minute)),
			Finalizers:        []string{extensionsv1beta1.ClaimSandboxFinalizer},
		},
		Spec: extensionsv1beta1.SandboxClaimSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: testTemplate}},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func named(name string, uid types.UID) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) { c.Name, c.UID = name, uid }
}

func warmpool(p extensionsv1beta1.WarmPoolPolicy) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) { c.Spec.WarmPool = ptr.To(p) }
}

func withEnv(env ...extensionsv1beta1.EnvVar) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) { c.Spec.Env = env }
}

func withExtraMeta(labels, annotations map[string]string) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) {
		c.Spec.AdditionalPodMetadata = agentsv1beta1.PodMetadata{Labels: labels, Annotations: annotations}
	}
}

func withLifecycle(shutdownIn *time.Duration, ttl *int32, policy *extensionsv1beta1.ShutdownPolicy) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) {
		lc := &extensionsv1beta1.Lifecycle{TTLSecondsAfterFinished: ttl, ShutdownPolicy: policy}
		if shutdownIn != nil {
			lc.ShutdownTime = &metav1.Time{Time: testNow.Add(*shutdownIn)}
		}
		c.Spec.Lifecycle = lc
	}
}

func withClaimStatus(st extensionsv1beta1.SandboxClaimStatus) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) { c.Status = st }
}

func withClaimLabel(k, v string) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[k] = v
	}
}

func claimDeleting(c *extensionsv1beta1.SandboxClaim) {
	c.DeletionTimestamp = &metav1.Time{Time: testNow.Add(-time.Second)}
}

func withFinalizers(f ...string) func(*extensionsv1beta1.SandboxClaim) {
	return func(c *extensionsv1beta1.SandboxClaim) { c.Finalizers = f }
}

// newTemplate is the test template: one init and one regular container, each with one variable,
// pod labels and annotations, managed networking with the secure default.
func newTemplate(mods ...func(*extensionsv1beta1.SandboxTemplate)) *extensionsv1beta1.SandboxTemplate {
	t := &extensionsv1beta1.SandboxTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: extensionsv1beta1.SchemeGroupVersion.String(), Kind: "SandboxTemplate"},
		ObjectMeta: metav1.ObjectMeta{
			Name: testTemplate, Namespace: testNS, UID: "template-uid", ResourceVersion: "7",
		},
		Spec: extensionsv1beta1.SandboxTemplateSpec{
			PodTemplate: agentsv1beta1.PodTemplate{
				ObjectMeta: agentsv1beta1.PodMetadata{
					Labels:      map[string]string{"app": "python", "tier": "sandbox"},
					Annotations: map[string]string{"team": "ml"},
				},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: "setup", Image: "busybox",
						Env: []corev1.EnvVar{{Name: "INIT_MODE", Value: "fast"}}}},
					Containers: []corev1.Container{
						{Name: "agent", Image: "python:3.12", Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}}},
						{Name: "sidecar", Image: "envoy"},
					},
					RestartPolicy: corev1.RestartPolicyNever,
				},
			},
			NetworkPolicyManagement: extensionsv1beta1.NetworkPolicyManagementManaged,
			EnvVarsInjectionPolicy:  extensionsv1beta1.EnvVarsInjectionPolicyDisallowed,
		},
	}
	for _, m := range mods {
		m(t)
	}
	return t
}

func envPolicy(p extensionsv1beta1.EnvVarsInjectionPolicy) func(*extensionsv1beta1.SandboxTemplate) {
	return func(t *extensionsv1beta1.SandboxTemplate) { t.Spec.EnvVarsInjectionPolicy = p }
}

// newSandbox is a bare Sandbox in the test namespace; mods adjust it.
func newSandbox(name string, mods ...func(*agentsv1beta1.Sandbox)) *agentsv1beta1.Sandbox {
	sb := &agentsv1beta1.Sandbox{
		TypeMeta: metav1.TypeMeta{APIVersion: agentsv1beta1.SchemeGroupVersion.String(), Kind: "Sandbox"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNS, UID: types.UID(name + "-uid"), ResourceVersion: "11",
			CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour)),
		},
		Spec: agentsv1beta1.SandboxSpec{
			PodTemplate: agentsv1beta1.PodTemplate{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "python:3.12"}}},
			},
			Replicas: ptr.To[int32](1),
		},
	}
	for _, m := range mods {
		m(sb)
	}
	return sb
}

// ownedByClaim makes the claim of that name and UID the sandbox's controller.
func ownedByClaim(name string, uid types.UID) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) {
		sb.OwnerReferences = []metav1.OwnerReference{claimOwnerRef(name, uid)}
	}
}

func claimOwnerRef(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxClaim",
		Name: name, UID: uid, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

func poolOwnerRef(pool string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxWarmPool",
		Name: pool, UID: types.UID(pool + "-uid"), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

func withOwner(ref metav1.OwnerReference) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.OwnerReferences = []metav1.OwnerReference{ref} }
}

func inNamespace(ns string) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.Namespace = ns }
}

func sandboxReady(status metav1.ConditionStatus, reason, msg string) func(*agentsv1beta1.Sandbox) {
	return withSandboxCond(metav1.Condition{Type: "Ready", Status: status, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(testNow.Add(-10 * time.Minute))})
}

func withSandboxCond(c metav1.Condition) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { meta.SetStatusCondition(&sb.Status.Conditions, c) }
}

func withPodIPs(ips ...string) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.Status.PodIPs = ips }
}

func sandboxDeleting(sb *agentsv1beta1.Sandbox) {
	sb.DeletionTimestamp = &metav1.Time{Time: testNow.Add(-time.Second)}
	sb.Finalizers = []string{agentsv1beta1.SandboxChildrenFinalizer}
}

func withRV(rv string) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.ResourceVersion = rv }
}

// testPools are the warm pools the tests' members belong to, as their controller references
// name them (poolOwnerRef).
func testPools() []*extensionsv1beta1.SandboxWarmPool {
	var out []*extensionsv1beta1.SandboxWarmPool
	for _, name := range []string{testPool, "other-pool"} {
		ref := poolOwnerRef(name)
		out = append(out, &extensionsv1beta1.SandboxWarmPool{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: ref.UID},
			Spec: extensionsv1beta1.SandboxWarmPoolSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: testTemplate}}})
	}
	return out
}

// starting are members of the test pool whose pod is not Ready yet: the controller's adoption and
// the binding at create take them when no Ready member is left.
func starting() []struct {
	why    string
	member *agentsv1beta1.Sandbox
} {
	return []struct {
		why    string
		member *agentsv1beta1.Sandbox
	}{
		{"not Ready", warmMember("m1", testPool, sandboxReady(metav1.ConditionFalse, agentsv1beta1.SandboxReasonDependenciesNotReady, "Pod is not Ready"))},
		{"with no Ready condition", warmMember("m1", testPool, func(sb *agentsv1beta1.Sandbox) { sb.Status.Conditions = nil })},
	}
}

// unofferable are members of the test pool that no claim of the test template in testNS may take,
// each with what rules it out; the adoption and the binding at create both check them.
func unofferable() []struct {
	why    string
	member *agentsv1beta1.Sandbox
} {
	return []struct {
		why    string
		member *agentsv1beta1.Sandbox
	}{
		{"being deleted", warmMember("m1", testPool, sandboxDeleting)},
		{"in another namespace", warmMember("m1", testPool, inNamespace("elsewhere"))},
		{"of another template", warmMember("m1", testPool, func(sb *agentsv1beta1.Sandbox) {
			sb.Labels[extensionsv1beta1.SandboxTemplateRefHashLabel] = fnvHash("node")
		})},
		// A Sandbox someone dressed up as a member: the labels, but not made by the pool.
		{"controlled by nobody", warmMember("m1", "")},
		{"controlled by another kind", warmMember("m1", testPool, withOwner(metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment",
			Name: testPool, UID: poolOwnerRef(testPool).UID, Controller: ptr.To(true)}))},
		{"controlled by a pool of another group", warmMember("m1", testPool, func(sb *agentsv1beta1.Sandbox) {
			sb.OwnerReferences[0].APIVersion = "example.com/v1"
		})},
		{"only a non-controller owner reference to the pool", warmMember("m1", testPool, func(sb *agentsv1beta1.Sandbox) {
			sb.OwnerReferences[0].Controller = nil
		})},
		{"controlled by another pool than its label names", warmMember("m1", testPool, withOwner(poolOwnerRef("other-pool")))},
		{"controlled by a pool of its label's name but another UID (forged, or a deleted pool)", warmMember("m1", testPool, func(sb *agentsv1beta1.Sandbox) {
			sb.OwnerReferences[0].UID = "forged-uid"
		})},
		{"controlled by a pool that does not exist", warmMember("m1", "gone-pool")},
	}
}

// warmMember is a Ready member of pool (empty: no controller) of the test template, as the warm
// pool controller makes it.
func warmMember(name, pool string, mods ...func(*agentsv1beta1.Sandbox)) *agentsv1beta1.Sandbox {
	hash := poolHash
	if pool != testPool && pool != "" {
		hash = fnvHash(pool)
	}
	base := []func(*agentsv1beta1.Sandbox){
		func(sb *agentsv1beta1.Sandbox) {
			sb.Labels = map[string]string{
				extensionsv1beta1.WarmPoolSandboxLabel:        hash,
				extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash,
				agentsv1beta1.SandboxPodTemplateHashLabel:     "podtmpl1",
			}
			sb.Annotations = map[string]string{agentsv1beta1.SandboxTemplateRefAnnotation: testTemplate}
			sb.Spec.PodTemplate.ObjectMeta = agentsv1beta1.PodMetadata{
				Labels: map[string]string{
					"app": "python", "tier": "sandbox",
					extensionsv1beta1.WarmPoolSandboxLabel:        hash,
					extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash,
					agentsv1beta1.SandboxPodTemplateHashLabel:     "podtmpl1",
				},
				Annotations: map[string]string{"team": "ml"},
			}
			if pool != "" {
				sb.OwnerReferences = []metav1.OwnerReference{poolOwnerRef(pool)}
			}
		},
		sandboxReady(metav1.ConditionTrue, agentsv1beta1.SandboxReasonDependenciesReady, "Pod is Ready"),
		withPodIPs("10.0.0.9"),
	}
	return newSandbox(name, append(base, mods...)...)
}

// ---- fixture ----

// queueSpy keeps the controller's queue and records its delayed adds.
type queueSpy struct {
	workqueue.TypedRateLimitingInterface[string]
	after map[string]time.Duration
}

func (q *queueSpy) AddAfter(key string, d time.Duration) { q.after[key] = d }

// fixture is a controller on a fake clientset whose informers never start; the caches are filled
// by hand.
type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	inf      externalversions.SharedInformerFactory
	recorder *record.FakeRecorder
	queue    *queueSpy
	c        *Controller
	// namespaces is the cluster's namespace cache, empty unless a test fills it.
	namespaces cache.Indexer
}

// newFixture builds the controller and puts objs into both the fake cluster and the caches.
func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{
		t: t,
		// NewClientset's field-managed tracker has no REST mapping for these kinds.
		client:   fake.NewSimpleClientset(),
		recorder: record.NewFakeRecorder(100),
	}
	f.inf = externalversions.NewSharedInformerFactory(f.client, 0)
	namespaces := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1().Namespaces()
	f.namespaces = namespaces.Informer().GetIndexer()
	c, err := New(Config{
		Client:     f.client,
		Claims:     f.inf.Extensions().V1beta1().SandboxClaims(),
		Templates:  f.inf.Extensions().V1beta1().SandboxTemplates(),
		WarmPools:  f.inf.Extensions().V1beta1().SandboxWarmPools(),
		Sandboxes:  f.inf.Agents().V1beta1().Sandboxes(),
		Namespaces: namespaces,
		Events:     f.recorder,
		Workers:    1,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, p := range testPools() {
		f.must(f.inf.Extensions().V1beta1().SandboxWarmPools().Informer().GetIndexer().Add(p))
	}
	c.now = func() time.Time { return testNow }
	f.queue = &queueSpy{TypedRateLimitingInterface: c.loop.Queue, after: map[string]time.Duration{}}
	c.loop.Queue = f.queue
	t.Cleanup(f.queue.ShutDown)
	f.c = c
	for _, o := range objs {
		f.add(o)
	}
	return f
}

// add puts obj into the fake cluster and the cache.
func (f *fixture) add(obj runtime.Object) {
	f.t.Helper()
	f.addAPI(obj)
	f.addCache(obj)
}

// addAPI puts obj into the fake cluster only.
func (f *fixture) addAPI(obj runtime.Object) {
	f.t.Helper()
	gvr, ns := f.gvrOf(obj)
	f.must(f.client.Tracker().Create(gvr, obj.DeepCopyObject(), ns))
}

// addCache puts obj into its informer's cache only.
func (f *fixture) addCache(obj runtime.Object) {
	f.t.Helper()
	switch o := obj.(type) {
	case *agentsv1beta1.Sandbox:
		f.must(f.inf.Agents().V1beta1().Sandboxes().Informer().GetIndexer().Add(o.DeepCopy()))
	case *extensionsv1beta1.SandboxClaim:
		f.must(f.inf.Extensions().V1beta1().SandboxClaims().Informer().GetIndexer().Add(o.DeepCopy()))
		f.c.firstSight(o) // as the informer's add handler does
	case *extensionsv1beta1.SandboxTemplate:
		f.must(f.inf.Extensions().V1beta1().SandboxTemplates().Informer().GetIndexer().Add(o.DeepCopy()))
	default:
		f.t.Fatalf("no cache for %T", obj)
	}
}

// updateCache replaces obj in its cache, as the informer would on an update event.
func (f *fixture) updateCache(obj runtime.Object) {
	f.t.Helper()
	switch o := obj.(type) {
	case *agentsv1beta1.Sandbox:
		f.must(f.inf.Agents().V1beta1().Sandboxes().Informer().GetIndexer().Update(o.DeepCopy()))
	case *extensionsv1beta1.SandboxClaim:
		f.must(f.inf.Extensions().V1beta1().SandboxClaims().Informer().GetIndexer().Update(o.DeepCopy()))
	default:
		f.t.Fatalf("no cache for %T", obj)
	}
}

func (f *fixture) deleteCache(obj runtime.Object) {
	f.t.Helper()
	switch o := obj.(type) {
	case *agentsv1beta1.Sandbox:
		f.must(f.inf.Agents().V1beta1().Sandboxes().Informer().GetIndexer().Delete(o))
	default:
		f.t.Fatalf("no cache for %T", obj)
	}
}

func (f *fixture) gvrOf(obj runtime.Object) (schema.GroupVersionResource, string) {
	f.t.Helper()
	m, err := meta.Accessor(obj)
	f.must(err)
	switch obj.(type) {
	case *agentsv1beta1.Sandbox:
		return sandboxesGVR, m.GetNamespace()
	case *extensionsv1beta1.SandboxClaim:
		return claimsGVR, m.GetNamespace()
	case *extensionsv1beta1.SandboxTemplate:
		return templatesGVR, m.GetNamespace()
	}
	f.t.Fatalf("no resource for %T", obj)
	return schema.GroupVersionResource{}, ""
}

// warm feeds sandboxes to the controller's sandbox handler, as the informer would.
func (f *fixture) warm(sbs ...*agentsv1beta1.Sandbox) {
	for _, sb := range sbs {
		f.c.sandboxChanged(sb.DeepCopy())
	}
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// sync runs one sync of the claim ns/name.
func (f *fixture) sync(name string) error {
	return f.c.sync(context.Background(), testNS+"/"+name)
}

// mustSync runs one sync of the claim and fails on an error.
func (f *fixture) mustSync(name string) {
	f.t.Helper()
	if err := f.sync(name); err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
}

// reset forgets the recorded actions and events.
func (f *fixture) reset() {
	f.client.ClearActions()
	f.events()
}

// writes are the mutating actions, as "verb resource[/subresource] name".
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			s += "/" + sub
		}
		switch a := a.(type) {
		case clienttesting.CreateAction:
			s += " " + objName(a.GetObject())
		case clienttesting.UpdateAction:
			s += " " + objName(a.GetObject())
		case clienttesting.DeleteAction:
			s += " " + a.GetName()
		}
		out = append(out, s)
	}
	return out
}

func objName(o runtime.Object) string {
	m, err := meta.Accessor(o)
	if err != nil {
		return "?"
	}
	return m.GetName()
}

// actionsOf returns the recorded actions of verb on resource ("sandboxclaims/status" for a
// subresource).
func (f *fixture) actionsOf(verb, resource string) []clienttesting.Action {
	res, sub, _ := strings.Cut(resource, "/")
	var out []clienttesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == res && a.GetSubresource() == sub {
			out = append(out, a)
		}
	}
	return out
}

// createdSandboxes are the sandboxes created, in order.
func (f *fixture) createdSandboxes() []*agentsv1beta1.Sandbox {
	var out []*agentsv1beta1.Sandbox
	for _, a := range f.actionsOf("create", "sandboxes") {
		out = append(out, a.(clienttesting.CreateAction).GetObject().(*agentsv1beta1.Sandbox))
	}
	return out
}

// updatedSandboxes are the sandboxes updated, in order.
func (f *fixture) updatedSandboxes() []*agentsv1beta1.Sandbox {
	var out []*agentsv1beta1.Sandbox
	for _, a := range f.actionsOf("update", "sandboxes") {
		out = append(out, a.(clienttesting.UpdateAction).GetObject().(*agentsv1beta1.Sandbox))
	}
	return out
}

// updatedClaims are the claims written through the main resource, in order.
func (f *fixture) updatedClaims() []*extensionsv1beta1.SandboxClaim {
	var out []*extensionsv1beta1.SandboxClaim
	for _, a := range f.actionsOf("update", "sandboxclaims") {
		out = append(out, a.(clienttesting.UpdateAction).GetObject().(*extensionsv1beta1.SandboxClaim))
	}
	return out
}

// deletes maps each deleted name of resource to the UID precondition it carried.
func (f *fixture) deletes(resource string) map[string]types.UID {
	out := map[string]types.UID{}
	for _, a := range f.actionsOf("delete", resource) {
		d := a.(clienttesting.DeleteActionImpl)
		var uid types.UID
		if p := d.DeleteOptions.Preconditions; p != nil && p.UID != nil {
			uid = *p.UID
		}
		out[d.GetName()] = uid
	}
	return out
}

// statusWrites are the claims written through the status subresource, in order.
func (f *fixture) statusWrites() []*extensionsv1beta1.SandboxClaim {
	var out []*extensionsv1beta1.SandboxClaim
	for _, a := range f.actionsOf("update", "sandboxclaims/status") {
		out = append(out, a.(clienttesting.UpdateAction).GetObject().(*extensionsv1beta1.SandboxClaim))
	}
	return out
}

// lastStatus is the claim of the last status write, failing when there was none.
func (f *fixture) lastStatus() *extensionsv1beta1.SandboxClaim {
	f.t.Helper()
	ws := f.statusWrites()
	if len(ws) == 0 {
		f.t.Fatalf("no status written; writes: %v", f.writes())
	}
	return ws[len(ws)-1]
}

// events drains the recorder.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// eventReasons are the reasons of the drained events, in order.
func (f *fixture) eventReasons() []string {
	var out []string
	for _, e := range f.events() {
		// FakeRecorder formats events as "<type> <reason> <message>".
		parts := strings.SplitN(e, " ", 3)
		if len(parts) >= 2 {
			out = append(out, parts[1])
		}
	}
	return out
}

// readyOf is the claim's Ready condition, failing when it has none.
func readyOf(t *testing.T, c *extensionsv1beta1.SandboxClaim) metav1.Condition {
	t.Helper()
	r := meta.FindStatusCondition(c.Status.Conditions, "Ready")
	if r == nil {
		t.Fatalf("claim %s has no Ready condition: %+v", c.Name, c.Status.Conditions)
	}
	return *r
}

// checkReady compares the claim's Ready condition; a message ending in "*" matches as a prefix
// and an empty one is not compared.
func checkReady(t *testing.T, c *extensionsv1beta1.SandboxClaim, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	r := readyOf(t, c)
	if r.Status != status || r.Reason != reason {
		t.Errorf("Ready = %s/%s (%q), want %s/%s", r.Status, r.Reason, r.Message, status, reason)
	}
	if msg != "" {
		if p, ok := strings.CutSuffix(msg, "*"); ok {
			if !strings.HasPrefix(r.Message, p) {
				t.Errorf("Ready message = %q, want prefix %q", r.Message, p)
			}
		} else if r.Message != msg {
			t.Errorf("Ready message = %q, want %q", r.Message, msg)
		}
	}
	if r.ObservedGeneration != c.Generation {
		t.Errorf("Ready observedGeneration = %d, want %d", r.ObservedGeneration, c.Generation)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// expectAdoptedPodTemplate checks the pod template of member once adopted by the test claim (with
// owner=alice and cost-center=1234 as extra metadata): the template's, the member's and the
// claim's metadata merged, the running pod spec untouched.
func expectAdoptedPodTemplate(t *testing.T, adopted, member *agentsv1beta1.Sandbox) {
	t.Helper()
	want := agentsv1beta1.PodMetadata{
		Labels: map[string]string{
			"app": "python", "tier": "sandbox", "owner": "alice",
			extensionsv1beta1.SandboxIDLabel:              string(testClaimUID),
			extensionsv1beta1.SandboxTemplateRefHashLabel: templateHash,
		},
		Annotations: map[string]string{"team": "ml", "cost-center": "1234"},
	}
	if !apiequality.Semantic.DeepEqual(adopted.Spec.PodTemplate.ObjectMeta, want) {
		t.Errorf("pod template metadata = %+v, want %+v", adopted.Spec.PodTemplate.ObjectMeta, want)
	}
	if !apiequality.Semantic.DeepEqual(adopted.Spec.PodTemplate.Spec, member.Spec.PodTemplate.Spec) {
		t.Errorf("the running member's pod spec changed: %+v", adopted.Spec.PodTemplate.Spec)
	}
}

// expectSandboxNameLabel checks that the claim's last write through the main resource labelled it
// with its sandbox's name.
func expectSandboxNameLabel(t *testing.T, f *fixture, want string) {
	t.Helper()
	claims := f.updatedClaims()
	if len(claims) == 0 {
		t.Fatalf("the claim was not labelled with its sandbox %s", want)
	}
	if got := claims[len(claims)-1].Labels[extensionsv1beta1.ClaimSandboxNameLabel]; got != want {
		t.Errorf("label %s = %q, want %q", extensionsv1beta1.ClaimSandboxNameLabel, got, want)
	}
}
