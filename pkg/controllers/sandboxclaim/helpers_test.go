// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/claimtest"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/warm"
)

// The builders the claim's adoption tests share (pkg/util/claimtest), by their names here.
const (
	testNS       = claimtest.Namespace
	testClaim    = claimtest.ClaimName
	testClaimUID = claimtest.ClaimUID
	testTemplate = claimtest.TemplateName
	testPool     = claimtest.PoolName
	// collidingPool's template is another whose name hashes as the test template's.
	collidingPool = claimtest.CollidingPoolName
	testGen       = claimtest.Generation
)

var (
	testPools                = claimtest.Pools
	testNow                  = claimtest.Now
	fnvHash                  = claimtest.Hash
	templateHash             = claimtest.TemplateHash
	newClaim                 = claimtest.Claim
	named                    = claimtest.Named
	warmpool                 = claimtest.WarmPool
	withEnv                  = claimtest.WithEnv
	withExtraMeta            = claimtest.WithExtraMeta
	withLifecycle            = claimtest.WithLifecycle
	withClaimStatus          = claimtest.WithClaimStatus
	withClaimLabel           = claimtest.WithClaimLabel
	claimDeleting            = claimtest.ClaimDeleting
	withFinalizers           = claimtest.WithFinalizers
	newTemplate              = claimtest.Template
	envPolicy                = claimtest.EnvPolicy
	newSandbox               = claimtest.Sandbox
	ownedByClaim             = claimtest.OwnedByClaim
	claimOwnerRef            = claimtest.ClaimOwnerRef
	poolOwnerRef             = claimtest.PoolOwnerRef
	withOwner                = claimtest.WithOwner
	inNamespace              = claimtest.InNamespace
	sandboxReady             = claimtest.SandboxReady
	withSandboxCond          = claimtest.WithSandboxCond
	withPodIPs               = claimtest.WithPodIPs
	sandboxDeleting          = claimtest.SandboxDeleting
	withRV                   = claimtest.WithRV
	starting                 = claimtest.Starting
	unofferable              = claimtest.Unofferable
	warmMember               = claimtest.WarmMember
	pvcTemplate              = claimtest.PVCTemplate
	withVolumes              = claimtest.WithVolumes
	volumePolicy             = claimtest.VolumePolicy
	readyOf                  = claimtest.ReadyOf
	checkReady               = claimtest.CheckReady
	expectAdoptedPodTemplate = claimtest.ExpectAdoptedPodTemplate
)

var (
	sandboxesGVR = agentsv1beta1.SchemeGroupVersion.WithResource("sandboxes")
	claimsGVR    = extensionsv1beta1.SchemeGroupVersion.WithResource("sandboxclaims")
	templatesGVR = extensionsv1beta1.SchemeGroupVersion.WithResource("sandboxtemplates")
)

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
	chooser  *warm.Chooser
	// namespaces is the cluster's namespace cache, empty unless a test fills it.
	namespaces cache.Indexer
	// exec records the env deliveries run and answers them.
	exec *fakePodExec
}

// newFixture builds the controller and puts objs into both the fake cluster and the caches.
func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{
		t: t,
		// NewClientset's field-managed tracker has no REST mapping for these kinds.
		client:   fake.NewSimpleClientset(),
		recorder: record.NewFakeRecorder(100),
		exec:     &fakePodExec{},
	}
	f.inf = externalversions.NewSharedInformerFactory(f.client, 0)
	namespaces := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1().Namespaces()
	f.namespaces = namespaces.Informer().GetIndexer()
	chooser, err := warm.New(warm.Config{
		Sandboxes: f.inf.Agents().V1beta1().Sandboxes(),
		Templates: f.inf.Extensions().V1beta1().SandboxTemplates(),
		WarmPools: f.inf.Extensions().V1beta1().SandboxWarmPools(),
		Events:    f.recorder,
		Now:       func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatalf("warm.New: %v", err)
	}
	f.chooser = chooser
	c, err := New(Config{
		Client:     f.client,
		Claims:     f.inf.Extensions().V1beta1().SandboxClaims(),
		Templates:  f.inf.Extensions().V1beta1().SandboxTemplates(),
		Sandboxes:  f.inf.Agents().V1beta1().Sandboxes(),
		Chooser:    chooser,
		Namespaces: namespaces,
		Events:     f.recorder,
		Workers:    1,
		PodExec:    f.exec,
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

// warm feeds sandboxes to the controller's and the chooser's sandbox handlers, as the informers
// would.
func (f *fixture) warm(sbs ...*agentsv1beta1.Sandbox) {
	for _, sb := range sbs {
		f.changed(sb.DeepCopy())
	}
}

// changed feeds an added or updated object to both sandbox handlers.
func (f *fixture) changed(obj any) {
	f.chooser.OnUpdate(nil, obj)
	f.c.sandboxChanged(obj)
}

// deleted feeds a deleted object, or its tombstone, to both sandbox handlers.
func (f *fixture) deleted(obj any) {
	f.chooser.OnDelete(obj)
	f.c.sandboxDeleted(obj)
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
func (f *fixture) events() []string { return claimtest.Events(f.recorder) }

// eventReasons are the reasons of the drained events, in order.
func (f *fixture) eventReasons() []string { return claimtest.EventReasons(f.recorder) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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

// claimCreations is the count of claim creations with the given labels, by their seed names.
var claimCreations = claimtest.ClaimCreations
