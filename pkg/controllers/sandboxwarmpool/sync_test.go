// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwarmpool

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

const ns = "team-a"

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t      *testing.T
	client *fake.Clientset
	events *record.FakeRecorder
	clock  *clocktesting.FakePassiveClock
	ctrl   *Controller
	inf    externalversions.SharedInformerFactory
	// namespaces is the cluster's namespace cache, empty unless a test fills it.
	namespaces cache.Indexer

	mu          sync.Mutex
	requeued    map[string]time.Duration
	createdObjs []*agentsv1beta1.Sandbox // by the last sync, as the server made them
}

// newFixture builds the controller on informers that are never started: their indexers hold
// exactly the objects given, as a synced cache would. Created sandboxes get a name from their
// generateName, as the server would give them.
func newFixture(t *testing.T, maxBatch int, objs ...runtime.Object) *fixture {
	t.Helper()
	// The tracker would file a preset Sandbox under the resource "sandboxs" (it guesses plurals),
	// so sandboxes are created in it under their real resource instead.
	var preset []runtime.Object
	var sandboxes []*agentsv1beta1.Sandbox
	for _, o := range objs {
		if sb, ok := o.(*agentsv1beta1.Sandbox); ok {
			sandboxes = append(sandboxes, sb)
		} else {
			preset = append(preset, o)
		}
	}
	f := &fixture{
		t:        t,
		client:   fake.NewSimpleClientset(preset...),
		events:   record.NewFakeRecorder(1000),
		clock:    clocktesting.NewFakePassiveClock(t0),
		requeued: map[string]time.Duration{},
	}
	for _, sb := range sandboxes {
		if err := f.client.Tracker().Create(agentsv1beta1.SchemeGroupVersion.WithResource("sandboxes"), sb, sb.Namespace); err != nil {
			t.Fatal(err)
		}
	}
	var n atomic.Int64
	f.client.PrependReactor("create", "sandboxes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sb := a.(clienttesting.CreateAction).GetObject().(*agentsv1beta1.Sandbox)
		if sb.Name == "" {
			i := n.Add(1)
			sb.Name = fmt.Sprintf("%s%05d", sb.GenerateName, i)
			sb.UID = types.UID(fmt.Sprintf("created-%d", i))
			sb.ResourceVersion = "1"
			sb.CreationTimestamp = metav1.NewTime(f.clock.Now())
		}
		f.mu.Lock()
		f.createdObjs = append(f.createdObjs, sb.DeepCopy())
		f.mu.Unlock()
		return false, nil, nil
	})
	f.inf = externalversions.NewSharedInformerFactory(f.client, 0)
	namespaces := informers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1().Namespaces()
	f.namespaces = namespaces.Informer().GetIndexer()
	ctrl, err := New(Config{
		Client:       f.client,
		Pools:        f.inf.Extensions().V1beta1().SandboxWarmPools(),
		Templates:    f.inf.Extensions().V1beta1().SandboxTemplates(),
		Sandboxes:    f.inf.Agents().V1beta1().Sandboxes(),
		Namespaces:   namespaces,
		Events:       f.events,
		Workers:      1,
		MaxBatchSize: maxBatch,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctrl.clock = f.clock
	ctrl.exp.clock = f.clock
	ctrl.requeueAfter = func(key string, d time.Duration) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if old, ok := f.requeued[key]; !ok || d < old {
			f.requeued[key] = d
		}
	}
	f.ctrl = ctrl
	for _, o := range objs {
		f.cache(o)
	}
	return f
}

// cache puts an object in its informer's indexer, as a watch event would.
func (f *fixture) cache(o runtime.Object) {
	f.t.Helper()
	var err error
	switch o := o.(type) {
	case *extensionsv1beta1.SandboxWarmPool:
		err = f.inf.Extensions().V1beta1().SandboxWarmPools().Informer().GetIndexer().Update(o)
	case *extensionsv1beta1.SandboxTemplate:
		err = f.inf.Extensions().V1beta1().SandboxTemplates().Informer().GetIndexer().Update(o)
	case *agentsv1beta1.Sandbox:
		err = f.inf.Agents().V1beta1().Sandboxes().Informer().GetIndexer().Update(o)
	default:
		f.t.Fatalf("cannot cache %T", o)
	}
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) sync(key string) error {
	f.t.Helper()
	f.client.ClearActions()
	f.mu.Lock()
	f.createdObjs = nil
	f.mu.Unlock()
	return f.ctrl.sync(context.Background(), key)
}

// writes lists verb/resource[/subresource] of the writes of the last sync.
func (f *fixture) writes() []string {
	var out []string
	for _, a := range f.client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		w := a.GetVerb() + "/" + a.GetResource().Resource
		if a.GetSubresource() != "" {
			w += "/" + a.GetSubresource()
		}
		out = append(out, w)
	}
	return out
}

func (f *fixture) count(verb, resource string) int {
	n := 0
	for _, w := range f.writes() {
		if w == verb+"/"+resource {
			n++
		}
	}
	return n
}

// created returns the sandboxes the last sync created, named as the server named them. (The
// recorded actions are copies taken before the reactors run, without the names.)
func (f *fixture) created() []*agentsv1beta1.Sandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.createdObjs)
}

func (f *fixture) deleted() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && a.GetResource().Resource == "sandboxes" {
			out = append(out, d.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func (f *fixture) statusWrites() []extensionsv1beta1.SandboxWarmPoolStatus {
	var out []extensionsv1beta1.SandboxWarmPoolStatus
	for _, a := range f.client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetVerb() == "update" && a.GetSubresource() == "status" {
			out = append(out, u.GetObject().(*extensionsv1beta1.SandboxWarmPool).Status)
		}
	}
	return out
}

func (f *fixture) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-f.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func newTemplate(name, image string) *extensionsv1beta1.SandboxTemplate {
	return &extensionsv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)},
		Spec: extensionsv1beta1.SandboxTemplateSpec{
			PodTemplate: agentsv1beta1.PodTemplate{
				ObjectMeta: agentsv1beta1.PodMetadata{Labels: map[string]string{"team": "a"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
			},
			NetworkPolicyManagement: extensionsv1beta1.NetworkPolicyManagementManaged,
		},
	}
}

func newPool(name, template string, replicas int32, strategy extensionsv1beta1.SandboxWarmPoolUpdateStrategyType) *extensionsv1beta1.SandboxWarmPool {
	return &extensionsv1beta1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), Finalizers: []string{Finalizer}},
		Spec: extensionsv1beta1.SandboxWarmPoolSpec{
			Replicas:       ptr.To(replicas),
			TemplateRef:    extensionsv1beta1.SandboxTemplateRef{Name: template},
			UpdateStrategy: &extensionsv1beta1.SandboxWarmPoolUpdateStrategy{Type: strategy},
		},
	}
}

// memberOf is a member of pool made from tmpl, as the controller would have made it, created age
// ago, Ready or not.
func memberOf(t *testing.T, pool *extensionsv1beta1.SandboxWarmPool, tmpl *extensionsv1beta1.SandboxTemplate, name string, age time.Duration, isReady bool) *agentsv1beta1.Sandbox {
	t.Helper()
	hash, err := controllers.PodTemplateHash(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	sb := (&revision{template: tmpl, refHash: objectmeta.NameHash(tmpl.Name), podHash: hash}).member(pool)
	sb.Name, sb.GenerateName = name, ""
	sb.UID = types.UID("uid-" + name)
	sb.ResourceVersion = "7"
	sb.CreationTimestamp = metav1.NewTime(t0.Add(-age))
	status := metav1.ConditionFalse
	if isReady {
		status = metav1.ConditionTrue
	}
	sb.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: status, Reason: "x"}}
	return sb
}

func orphaned(sb *agentsv1beta1.Sandbox) *agentsv1beta1.Sandbox {
	sb.OwnerReferences = nil
	return sb
}

func TestCreatesUpToReplicas(t *testing.T) {
	for _, tc := range []struct {
		maxBatch    int
		replicas    int32
		wantCreates int
	}{
		{maxBatch: 2, replicas: 5, wantCreates: 2},
		{maxBatch: 300, replicas: 5, wantCreates: 5},
		{maxBatch: 0, replicas: 5, wantCreates: 5}, // the default, 300
		{maxBatch: 300, replicas: 0, wantCreates: 0},
	} {
		t.Run(fmt.Sprintf("max %d replicas %d", tc.maxBatch, tc.replicas), func(t *testing.T) {
			tmpl := newTemplate("tmpl", "img:v1")
			pool := newPool("pool", "tmpl", tc.replicas, extensionsv1beta1.OnReplenishSandboxWarmPoolUpdateStrategyType)
			f := newFixture(t, tc.maxBatch, tmpl, pool)
			if err := f.sync(ns + "/pool"); err != nil {
				t.Fatal(err)
			}
			if got := f.count("create", "sandboxes"); got != tc.wantCreates {
				t.Fatalf("creates = %d, want %d (writes %v)", got, tc.wantCreates, f.writes())
			}
			if tc.wantCreates > 0 {
				if ev := f.drainEvents(); !slices.ContainsFunc(ev, func(e string) bool {
					return strings.Contains(e, "MembersCreated") && strings.Contains(e, fmt.Sprintf("Created %d of %d", tc.wantCreates, tc.wantCreates))
				}) {
					t.Errorf("events = %v", ev)
				}
			}
		})
	}
}

func TestCreatedMember(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	pool := newPool("pool", "tmpl", 1, "")
	f := newFixture(t, 0, tmpl, pool)
	if err := f.sync(ns + "/pool"); err != nil {
		t.Fatal(err)
	}
	created := f.created()
	if len(created) != 1 {
		t.Fatalf("created %d", len(created))
	}
	sb := created[0]
	podHash, _ := controllers.PodTemplateHash(tmpl)
	wantLabels := map[string]string{
		"agents.x-k8s.io/warm-pool-sandbox":         objectmeta.NameHash("pool"),
		"agents.x-k8s.io/sandbox-template-ref-hash": objectmeta.NameHash("tmpl"),
		"agents.x-k8s.io/sandbox-pod-template-hash": podHash,
	}
	for k, v := range wantLabels {
		if sb.Labels[k] != v {
			t.Errorf("sandbox label %s = %q, want %q", k, sb.Labels[k], v)
		}
		if sb.Spec.PodTemplate.ObjectMeta.Labels[k] != v {
			t.Errorf("pod template label %s = %q, want %q", k, sb.Spec.PodTemplate.ObjectMeta.Labels[k], v)
		}
	}
	if sb.Spec.PodTemplate.ObjectMeta.Labels["team"] != "a" {
		t.Errorf("template pod labels lost: %v", sb.Spec.PodTemplate.ObjectMeta.Labels)
	}
	if sb.GenerateName != "pool-" || sb.Namespace != ns {
		t.Errorf("generateName %q namespace %q", sb.GenerateName, sb.Namespace)
	}
	if sb.Annotations["agents.x-k8s.io/sandbox-template-ref"] != "tmpl" {
		t.Errorf("annotations = %v", sb.Annotations)
	}
	ref := metav1.GetControllerOf(sb)
	if ref == nil || ref.APIVersion != "extensions.agents.x-k8s.io/v1beta1" || ref.Kind != "SandboxWarmPool" || ref.Name != "pool" || ref.UID != pool.UID {
		t.Errorf("controller = %+v", ref)
	}
	if sb.Spec.PodTemplate.Spec.Containers[0].Image != "img:v1" || !ptr.Equal(sb.Spec.PodTemplate.Spec.AutomountServiceAccountToken, ptr.To(false)) {
		t.Errorf("pod spec = %+v", sb.Spec.PodTemplate.Spec)
	}
}

func TestCreateFailureStopsTheWave(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	pool := newPool("pool", "tmpl", 10, "")
	f := newFixture(t, 0, tmpl, pool)
	var calls atomic.Int64
	f.client.PrependReactor("create", "sandboxes", func(clienttesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) == 4 { // the first call of the third batch
			return true, nil, apierrors.NewForbidden(agentsv1beta1.Resource("sandboxes"), "", fmt.Errorf("quota"))
		}
		return false, nil, nil
	})
	if err := f.sync(ns + "/pool"); err == nil {
		t.Fatal("want the create error")
	}
	// Batches of 1, 2, 4: the third fails, the fourth (3) is not tried.
	if got := calls.Load(); got != 7 {
		t.Fatalf("create calls = %d, want 7", got)
	}
	// Six were made: the pool waits for those six, not for the ten it planned.
	for range 5 {
		f.ctrl.exp.created(ns + "/pool")
	}
	if ok, _ := f.ctrl.exp.satisfied(ns + "/pool"); ok {
		t.Fatal("satisfied before the sixth create was observed")
	}
	f.ctrl.exp.created(ns + "/pool")
	if ok, _ := f.ctrl.exp.satisfied(ns + "/pool"); !ok {
		t.Fatal("not satisfied after the six creates were observed")
	}
}

func TestSurplusDeletion(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	pool := newPool("pool", "tmpl", 2, "")
	oldReady := memberOf(t, pool, tmpl, "old-ready", 4*time.Hour, true)
	newReady := memberOf(t, pool, tmpl, "new-ready", 1*time.Hour, true)
	midReady := memberOf(t, pool, tmpl, "mid-ready", 2*time.Hour, true)
	oldUnready := memberOf(t, pool, tmpl, "old-unready", 3*time.Minute, false)
	newUnready := memberOf(t, pool, tmpl, "new-unready", 1*time.Minute, false)

	order := []*agentsv1beta1.Sandbox{oldReady, newReady, midReady, oldUnready, newUnready}
	sortForDeletion(order)
	var names []string
	for _, sb := range order {
		names = append(names, sb.Name)
	}
	if want := []string{"new-unready", "old-unready", "new-ready", "mid-ready", "old-ready"}; !slices.Equal(names, want) {
		t.Fatalf("deletion order = %v, want %v", names, want)
	}

	f := newFixture(t, 0, tmpl, pool, oldReady, newReady, midReady, oldUnready, newUnready)
	if err := f.sync(ns + "/pool"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.deleted(), []string{"new-ready", "new-unready", "old-unready"}; !slices.Equal(got, want) {
		t.Fatalf("deleted %v, want %v", got, want)
	}
	if f.count("create", "sandboxes") != 0 {
		t.Errorf("writes = %v", f.writes())
	}
	// The first batch is one call: the first to go.
	first := f.client.Actions()[0].(clienttesting.DeleteAction)
	if first.GetName() != "new-unready" {
		t.Errorf("first delete %s", first.GetName())
	}
	pre := first.GetDeleteOptions().Preconditions
	if pre == nil || *pre.UID != newUnready.UID || *pre.ResourceVersion != newUnready.ResourceVersion {
		t.Errorf("preconditions = %+v", pre)
	}
	if ev := f.drainEvents(); !slices.ContainsFunc(ev, func(e string) bool { return strings.Contains(e, "Deleted 3 members (3 surplus)") }) {
		t.Errorf("events = %v", ev)
	}
}

func TestSurplusDeletionCapped(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	pool := newPool("pool", "tmpl", 0, "")
	objs := []runtime.Object{tmpl, pool}
	for i := range 5 {
		objs = append(objs, memberOf(t, pool, tmpl, fmt.Sprintf("m%d", i), time.Hour, true))
	}
	f := newFixture(t, 2, objs...)
	if err := f.sync(ns + "/pool"); err != nil {
		t.Fatal(err)
	}
	if got := len(f.deleted()); got != 2 {
		t.Fatalf("deleted %d, want 2", got)
	}
}

// A delete refused because the member changed (a claim adopted it) is not an error: the pool looks
// again, and does not wait for that delete.
func TestDeleteConflictReevaluates(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	pool := newPool("pool", "tmpl", 0, "")
	m := memberOf(t, pool, tmpl, "m", time.Hour, true)
	f := newFixture(t, 0, tmpl, pool, m)
	f.client.PrependReactor("delete", "sandboxes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(agentsv1beta1.Resource("sandboxes"), "m", fmt.Errorf("precondition failed"))
	})
	if err := f.sync(ns + "/pool"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := f.ctrl.exp.satisfied(ns + "/pool"); !ok {
		t.Error("still waiting for a delete that did not happen")
	}
	if f.ctrl.loop.Queue.Len() != 1 {
		t.Error("pool not queued again")
	}
}

func TestStuckMembersReplaced(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	pool := newPool("pool", "tmpl", 3, "")
	stuck := memberOf(t, pool, tmpl, "stuck", 5*time.Minute, false)
	young := memberOf(t, pool, tmpl, "young", 1*time.Minute, false)
	younger := memberOf(t, pool, tmpl, "younger", 30*time.Second, false)
	oldReady := memberOf(t, pool, tmpl, "old-ready", time.Hour, true)
	f := newFixture(t, 0, tmpl, pool, stuck, young, oldReady)
	if err := f.sync(ns + "/pool"); err != nil {
		t.Fatal(err)
	}
	if got := f.deleted(); !slices.Equal(got, []string{"stuck"}) {
		t.Fatalf("deleted %v", got)
	}
	if got := f.count("create", "sandboxes"); got != 1 {
		t.Fatalf("creates = %d, want 1", got)
	}
	if got := f.requeued[ns+"/pool"]; got != 4*time.Minute {
		t.Errorf("requeued after %v, want 4m (young's deadline)", got)
	}

	// Earliest deadline wins; before it, nothing is replaced.
	f2 := newFixture(t, 0, tmpl, newPool("pool", "tmpl", 2, ""), young, younger)
	if err := f2.sync(ns + "/pool"); err != nil {
		t.Fatal(err)
	}
	if len(f2.deleted()) != 0 || f2.count("create", "sandboxes") != 0 {
		t.Fatalf("writes = %v", f2.writes())
	}
	if got := f2.requeued[ns+"/pool"]; got != 4*time.Minute {
		t.Errorf("requeued after %v, want 4m", got)
	}
	// Past young's deadline it goes.
	f2.clock.SetTime(t0.Add(4 * time.Minute))
	if err := f2.sync(ns + "/pool"); err != nil {
		t.Fatal(err)
	}
	if got := f2.deleted(); !slices.Equal(got, []string{"young"}) {
		t.Fatalf("deleted %v", got)
	}
}

// TestReadinessGracePeriodOfThePool: spec.readinessGracePeriodSeconds replaces the five minutes in
// either direction, a member past it is replaced with an event and left out of the status, and
// the pool comes back at the next member's deadline rather than polling.
func TestReadinessGracePeriodOfThePool(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	for _, tc := range []struct {
		name        string
		grace       *int32
		wantDeleted []string
		wantRequeue time.Duration
	}{
		{name: "unset: five minutes", grace: nil, wantDeleted: []string{"five-minutes", "six-minutes"}, wantRequeue: 4 * time.Minute},
		{name: "the minimum, 30 s", grace: ptr.To[int32](30), wantDeleted: []string{"five-minutes", "one-minute", "six-minutes"}, wantRequeue: 20 * time.Second},
		{name: "ten minutes", grace: ptr.To[int32](600), wantDeleted: nil, wantRequeue: 4 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := newPool("pool", "tmpl", 5, "")
			pool.Spec.ReadinessGracePeriodSeconds = tc.grace
			members := []runtime.Object{
				memberOf(t, pool, tmpl, "ten-seconds", 10*time.Second, false),
				memberOf(t, pool, tmpl, "one-minute", time.Minute, false),
				// Ready members are never deadline-bound, whatever their age.
				memberOf(t, pool, tmpl, "ready-for-an-hour", time.Hour, true),
				memberOf(t, pool, tmpl, "five-minutes", 5*time.Minute, false),
				memberOf(t, pool, tmpl, "six-minutes", 6*time.Minute, false),
			}
			f := newFixture(t, 0, append([]runtime.Object{tmpl, pool}, members...)...)
			if err := f.sync(ns + "/pool"); err != nil {
				t.Fatal(err)
			}
			if got := f.deleted(); !slices.Equal(got, tc.wantDeleted) {
				t.Fatalf("deleted %v, want %v", got, tc.wantDeleted)
			}
			if got := f.count("create", "sandboxes"); got != len(tc.wantDeleted) {
				t.Errorf("creates = %d, want one per replaced member (%d)", got, len(tc.wantDeleted))
			}
			if got := f.requeued[ns+"/pool"]; got != tc.wantRequeue {
				t.Errorf("requeued after %v, want %v (the next not-Ready member's deadline)", got, tc.wantRequeue)
			}
			st := f.statusWrites()
			if len(st) != 1 || st[0].Replicas != int32(5-len(tc.wantDeleted)) {
				t.Errorf("status writes = %+v, want replicas %d: replaced members are not counted", st, 5-len(tc.wantDeleted))
			}
			ev := f.drainEvents()
			if n := len(tc.wantDeleted); n > 0 {
				noun := "members"
				if n == 1 {
					noun = "member"
				}
				want := fmt.Sprintf("MembersDeleted Deleted %d %s (%d not ready in time)", n, noun, n)
				if !slices.ContainsFunc(ev, func(e string) bool { return strings.Contains(e, want) }) {
					t.Errorf("events = %v, want %q", ev, want)
				}
			}
		})
	}
}

// TestReadinessGracePeriodChangeMakesNothingStale: members made before and after the grace period
// changed are the same members, so under Recreate a change of the field alone deletes nothing.
func TestReadinessGracePeriodChangeMakesNothingStale(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	before := newPool("pool", "tmpl", 2, extensionsv1beta1.RecreateSandboxWarmPoolUpdateStrategyType)
	after := before.DeepCopy()
	after.Spec.ReadinessGracePeriodSeconds = ptr.To[int32](45)
	after.Generation = before.Generation + 1

	hash, err := controllers.PodTemplateHash(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	rev := &revision{template: tmpl, refHash: objectmeta.NameHash(tmpl.Name), podHash: hash}
	if a, b := rev.member(before), rev.member(after); !apiequality.Semantic.DeepEqual(a, b) {
		t.Fatalf("the grace period reached the members: %+v vs %+v", a, b)
	}

	a := memberOf(t, before, tmpl, "a", time.Hour, true)
	b := memberOf(t, before, tmpl, "b", time.Hour, true)
	after.Status = extensionsv1beta1.SandboxWarmPoolStatus{ObservedGeneration: after.Generation, Replicas: 2, ReadyReplicas: 2, Selector: Selector("pool")}
	f := newFixture(t, 0, tmpl, after, a, b)
	if err := f.sync(ns + "/pool"); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Errorf("writes after the grace period changed = %v, want none", w)
	}
}

func TestStaleness(t *testing.T) {
	v1 := newTemplate("tmpl", "img:v1")
	v2 := newTemplate("tmpl", "img:v2")
	other := newTemplate("other", "img:v2")
	for _, tc := range []struct {
		name        string
		strategy    extensionsv1beta1.SandboxWarmPoolUpdateStrategyType
		madeFrom    *extensionsv1beta1.SandboxTemplate
		wantDeleted int
		wantCreates int
	}{
		{name: "Recreate: pod template changed", strategy: extensionsv1beta1.RecreateSandboxWarmPoolUpdateStrategyType, madeFrom: v1, wantDeleted: 2, wantCreates: 2},
		{name: "Recreate: template ref changed", strategy: extensionsv1beta1.RecreateSandboxWarmPoolUpdateStrategyType, madeFrom: other, wantDeleted: 2, wantCreates: 2},
		{name: "Recreate: fresh members stay", strategy: extensionsv1beta1.RecreateSandboxWarmPoolUpdateStrategyType, madeFrom: v2},
		{name: "OnReplenish: stale members stay", strategy: extensionsv1beta1.OnReplenishSandboxWarmPoolUpdateStrategyType, madeFrom: v1},
		{name: "empty strategy is OnReplenish", strategy: "", madeFrom: v1},
		{name: "unknown strategy is OnReplenish", strategy: "Sideways", madeFrom: other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := newPool("pool", "tmpl", 2, tc.strategy)
			pool.Status = extensionsv1beta1.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 2, Selector: Selector("pool")}
			a := memberOf(t, pool, tc.madeFrom, "a", time.Hour, true)
			b := memberOf(t, pool, tc.madeFrom, "b", time.Hour, true)
			f := newFixture(t, 0, v2, pool, a, b)
			if err := f.sync(ns + "/pool"); err != nil {
				t.Fatal(err)
			}
			if got := len(f.deleted()); got != tc.wantDeleted {
				t.Errorf("deleted %d, want %d", got, tc.wantDeleted)
			}
			if got := f.count("create", "sandboxes"); got != tc.wantCreates {
				t.Errorf("creates %d, want %d", got, tc.wantCreates)
			}
			for _, sb := range f.created() {
				if sb.Spec.PodTemplate.Spec.Containers[0].Image != "img:v2" {
					t.Errorf("replacement made from the old template")
				}
			}
			if tc.wantDeleted == 0 && len(f.writes()) != 0 {
				t.Errorf("writes = %v", f.writes())
			}
		})
	}
}

// TestOrphansAndForeignMembers: the pool counts, adopts and deletes only the members it made.
// A Sandbox nobody controls, or another object controls, is left exactly as it is whatever pool
// labels it carries, and the pool makes its own members instead.
func TestOrphansAndForeignMembers(t *testing.T) {
	v1 := newTemplate("tmpl", "img:v1")
	v2 := newTemplate("tmpl", "img:v2")
	pool := newPool("pool", "tmpl", 1, extensionsv1beta1.OnReplenishSandboxWarmPoolUpdateStrategyType)
	spoofed := orphaned(memberOf(t, pool, v2, "spoofed", time.Hour, true))
	spoofed.Spec.PodTemplate.Spec.Containers[0].Image = "evil:latest"
	claimed := memberOf(t, pool, v2, "claimed", time.Hour, true)
	claimed.OwnerReferences = []metav1.OwnerReference{{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxClaim", Name: "c", UID: "uid-c", Controller: ptr.To(true)}}
	recreated := memberOf(t, pool, v2, "old-pool", time.Hour, true)
	recreated.OwnerReferences[0].UID = "uid-of-a-deleted-pool-of-this-name"

	for _, tc := range []struct {
		name        string
		template    *extensionsv1beta1.SandboxTemplate
		member      *agentsv1beta1.Sandbox
		wantCreates int
	}{
		{name: "orphan with the pool's labels and spec ignored", template: v2, member: orphaned(memberOf(t, pool, v2, "o", time.Hour, true)), wantCreates: 1},
		{name: "stale orphan ignored, not deleted", template: v2, member: orphaned(memberOf(t, pool, v1, "o", time.Hour, true)), wantCreates: 1},
		{name: "orphan with copied labels but another spec ignored, not deleted", template: v2, member: spoofed, wantCreates: 1},
		{name: "orphan ignored without a template", template: nil, member: orphaned(memberOf(t, pool, v2, "o", time.Hour, true))},
		{name: "member another object controls ignored", template: v2, member: claimed, wantCreates: 1},
		{name: "member of an earlier pool of the same name ignored", template: v2, member: recreated, wantCreates: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{pool, tc.member}
			if tc.template != nil {
				objs = append(objs, tc.template)
			}
			f := newFixture(t, 0, objs...)
			if err := f.sync(ns + "/pool"); err != nil {
				t.Fatal(err)
			}
			for _, w := range f.writes() {
				if w == "update/sandboxes" || w == "delete/sandboxes" || w == "patch/sandboxes" {
					t.Errorf("the foreign sandbox was written: %v", f.writes())
				}
			}
			if got := f.count("create", "sandboxes"); got != tc.wantCreates {
				t.Errorf("creates = %d, want %d", got, tc.wantCreates)
			}
			for _, st := range f.statusWrites() {
				if st.Replicas != 0 || st.ReadyReplicas != 0 {
					t.Errorf("foreign sandbox counted: %+v", st)
				}
			}
		})
	}
}

func TestExpectationsHoldBackASecondWave(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	pool := newPool("pool", "tmpl", 3, "")
	f := newFixture(t, 0, tmpl, pool)
	key := ns + "/pool"
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	created := f.created()
	if len(created) != 3 {
		t.Fatalf("first wave created %d", len(created))
	}

	// The informer has not shown them yet: no second wave, a requeue for when waiting ends.
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if n := f.count("create", "sandboxes"); n != 0 {
		t.Fatalf("second wave created %d before the informer caught up", n)
	}
	if got := f.requeued[key]; got != ExpectationsTimeout {
		t.Errorf("requeued after %v", got)
	}

	// Two of three arrive: still waiting.
	for _, sb := range created[:2] {
		f.cache(sb)
		f.ctrl.addSandbox(sb)
	}
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if n := f.count("create", "sandboxes"); n != 0 {
		t.Fatalf("created %d with one create unobserved", n)
	}
	// The third arrives: the pool is full, nothing more to do.
	f.cache(created[2])
	f.ctrl.addSandbox(created[2])
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if n := f.count("create", "sandboxes"); n != 0 {
		t.Fatalf("created %d with the pool full", n)
	}

	// A lost event does not stall a pool for good.
	g := newFixture(t, 0, tmpl, pool)
	if err := g.sync(key); err != nil {
		t.Fatal(err)
	}
	g.clock.SetTime(t0.Add(ExpectationsTimeout))
	if err := g.sync(key); err != nil {
		t.Fatal(err)
	}
	if n := g.count("create", "sandboxes"); n != 3 {
		t.Fatalf("after the timeout created %d, want 3", n)
	}
}

func TestDeleteExpectationsCountOnce(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	pool := newPool("pool", "tmpl", 0, "")
	a := memberOf(t, pool, tmpl, "a", time.Hour, true)
	b := memberOf(t, pool, tmpl, "b", time.Hour, true)
	f := newFixture(t, 0, tmpl, pool, a, b)
	key := ns + "/pool"
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if len(f.deleted()) != 2 {
		t.Fatalf("deleted %v", f.deleted())
	}
	// a is marked deleting (its finalizer holds it), then goes: counted once.
	aDeleting := a.DeepCopy()
	aDeleting.ResourceVersion = "8"
	aDeleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	f.ctrl.updateSandbox(a, aDeleting)
	f.ctrl.deleteSandbox(aDeleting)
	if ok, _ := f.ctrl.exp.satisfied(key); ok {
		t.Fatal("satisfied with b's delete unobserved")
	}
	f.ctrl.deleteSandbox(b)
	if ok, _ := f.ctrl.exp.satisfied(key); !ok {
		t.Fatal("not satisfied after both deletes were observed")
	}
}

func TestStatus(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	base := newPool("pool", "tmpl", 3, "")
	claimed := memberOf(t, base, tmpl, "claimed", time.Hour, true)
	claimed.OwnerReferences = []metav1.OwnerReference{{Kind: "SandboxClaim", Name: "c", UID: "uid-c", Controller: ptr.To(true)}}
	deleting := memberOf(t, base, tmpl, "deleting", time.Hour, true)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	members := []runtime.Object{
		memberOf(t, base, tmpl, "r1", time.Hour, true),
		memberOf(t, base, tmpl, "r2", time.Hour, true),
		memberOf(t, base, tmpl, "u1", time.Minute, false),
		claimed, deleting,
	}
	want := extensionsv1beta1.SandboxWarmPoolStatus{Replicas: 3, ReadyReplicas: 2, Selector: "agents.x-k8s.io/warm-pool-sandbox=" + objectmeta.NameHash("pool")}
	for _, tc := range []struct {
		name      string
		status    extensionsv1beta1.SandboxWarmPoolStatus
		wantWrite bool
	}{
		{name: "changed: written", status: extensionsv1beta1.SandboxWarmPoolStatus{Replicas: 1}, wantWrite: true},
		{name: "empty: written", wantWrite: true},
		{name: "unchanged: not written", status: want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := base.DeepCopy()
			pool.Status = tc.status
			f := newFixture(t, 0, append([]runtime.Object{tmpl, pool}, members...)...)
			if err := f.sync(ns + "/pool"); err != nil {
				t.Fatal(err)
			}
			st := f.statusWrites()
			if !tc.wantWrite {
				if len(f.writes()) != 0 {
					t.Fatalf("writes = %v", f.writes())
				}
				return
			}
			if len(st) != 1 || st[0] != want {
				t.Fatalf("status writes = %+v, want %+v", st, want)
			}
		})
	}
}

func TestTemplateMissing(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	pool := newPool("pool", "tmpl", 1, extensionsv1beta1.RecreateSandboxWarmPoolUpdateStrategyType)
	a := memberOf(t, pool, tmpl, "a", time.Hour, true)
	b := memberOf(t, pool, tmpl, "b", 2*time.Hour, true)
	f := newFixture(t, 0, pool, a, b)
	key := ns + "/pool"
	if err := f.sync(key); err != nil {
		t.Fatalf("a missing template is not an error: %v", err)
	}
	// Members are kept and counted (none can be judged stale), the surplus one goes.
	if got := f.deleted(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("deleted %v", got)
	}
	if st := f.statusWrites(); len(st) != 1 || st[0].Replicas != 2 || st[0].ReadyReplicas != 2 {
		t.Errorf("status = %+v", st)
	}
	// Nothing to create from, however short the pool is.
	short := pool.DeepCopy()
	short.Spec.Replicas = ptr.To[int32](5)
	f.cache(short)
	f.ctrl.exp.forget(key)
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if n := f.count("create", "sandboxes"); n != 0 {
		t.Fatalf("created %d without a template", n)
	}
	warnings := 0
	for _, e := range f.drainEvents() {
		if strings.Contains(e, "TemplateNotFound") {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("TemplateNotFound recorded %d times, want once", warnings)
	}
	// Once the template is back, the pool fills.
	f.cache(tmpl)
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if n := f.count("create", "sandboxes"); n != 3 {
		t.Fatalf("created %d, want 3", n)
	}
}

func TestDeletion(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	deletingPool := newPool("pool", "tmpl", 3, "")
	deletingPool.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	live1 := memberOf(t, deletingPool, tmpl, "live1", time.Hour, true)
	live2 := memberOf(t, deletingPool, tmpl, "live2", time.Minute, false)
	live2.Labels = nil // lost its labels, still the pool's
	terminating := memberOf(t, deletingPool, tmpl, "terminating", time.Hour, true)
	terminating.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	claimed := memberOf(t, deletingPool, tmpl, "claimed", time.Hour, true)
	claimed.OwnerReferences = []metav1.OwnerReference{{Kind: "SandboxClaim", Name: "c", UID: "uid-c", Controller: ptr.To(true)}}
	orphan := orphaned(memberOf(t, deletingPool, tmpl, "orphan", time.Hour, true))

	for _, tc := range []struct {
		name        string
		pool        *extensionsv1beta1.SandboxWarmPool
		members     []runtime.Object
		wantDeleted []string
		wantWrites  []string
		wantFinal   bool // finalizer on the stored pool afterwards
	}{
		{
			name: "members deleted, the pool waits", pool: deletingPool,
			members:     []runtime.Object{live1, live2, terminating, claimed, orphan},
			wantDeleted: []string{"live1", "live2"}, wantWrites: []string{"delete/sandboxes", "delete/sandboxes"}, wantFinal: true,
		},
		{
			name: "only terminating members left: wait", pool: deletingPool,
			members: []runtime.Object{terminating, claimed}, wantFinal: true,
		},
		{
			name: "no members left: finalizer removed", pool: deletingPool,
			members: []runtime.Object{claimed, orphan}, wantWrites: []string{"update/sandboxwarmpools"},
		},
		{
			name: "without the finalizer: it is added, nothing else",
			pool: func() *extensionsv1beta1.SandboxWarmPool {
				p := newPool("pool", "tmpl", 3, "")
				p.Finalizers = nil
				return p
			}(),
			wantWrites: []string{"update/sandboxwarmpools"}, wantFinal: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 0, append([]runtime.Object{tmpl, tc.pool}, tc.members...)...)
			if err := f.sync(ns + "/pool"); err != nil {
				t.Fatal(err)
			}
			if got := f.writes(); !slices.Equal(got, tc.wantWrites) {
				t.Fatalf("writes = %v, want %v", got, tc.wantWrites)
			}
			if got := f.deleted(); !slices.Equal(got, tc.wantDeleted) {
				t.Errorf("deleted = %v, want %v", got, tc.wantDeleted)
			}
			stored, err := f.client.ExtensionsV1beta1().SandboxWarmPools(ns).Get(context.Background(), "pool", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(stored.Finalizers, Finalizer); got != tc.wantFinal {
				t.Errorf("finalizers = %v", stored.Finalizers)
			}
		})
	}
}

// A deleted pool waits for its own creates to show before deciding that no member is left.
func TestDeletionWaitsForExpectations(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	pool := newPool("pool", "tmpl", 1, "")
	f := newFixture(t, 0, tmpl, pool)
	key := ns + "/pool"
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	created := f.created()
	deleting := pool.DeepCopy()
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	f.cache(deleting)
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("writes = %v before the member was seen", w)
	}
	f.cache(created[0])
	f.ctrl.addSandbox(created[0])
	if err := f.sync(key); err != nil {
		t.Fatal(err)
	}
	if got := f.deleted(); !slices.Equal(got, []string{created[0].Name}) {
		t.Fatalf("deleted %v", got)
	}
}

func TestPoolGone(t *testing.T) {
	f := newFixture(t, 0)
	f.ctrl.exp.expect(ns+"/gone", 3, nil)
	if err := f.sync(ns + "/gone"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := f.ctrl.exp.satisfied(ns + "/gone"); !ok {
		t.Error("expectations of a gone pool kept")
	}
}

func TestEventHandlersQueuePools(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	pool := newPool("pool", "tmpl", 1, "")
	otherPool := newPool("other", "another-template", 1, "")
	member := memberOf(t, pool, tmpl, "m", time.Hour, true)
	orphan := orphaned(memberOf(t, pool, tmpl, "o", time.Hour, true))
	adopted := member.DeepCopy()
	adopted.ResourceVersion = "8"
	adopted.Labels = nil
	adopted.OwnerReferences = []metav1.OwnerReference{{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxClaim", Name: "c", UID: "uid-c", Controller: ptr.To(true)}}
	unrelated := &agentsv1beta1.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "u", Namespace: ns, ResourceVersion: "1"}}
	unrelated2 := unrelated.DeepCopy()
	unrelated2.ResourceVersion = "2"

	for _, tc := range []struct {
		name string
		fire func(c *Controller)
		want []string
	}{
		{name: "template change queues the pools that use it", fire: func(c *Controller) { c.enqueuePoolsOfTemplate(tmpl) }, want: []string{ns + "/pool"}},
		{name: "member added queues its pool", fire: func(c *Controller) { c.addSandbox(member) }, want: []string{ns + "/pool"}},
		{name: "orphan added queues the pool of its label", fire: func(c *Controller) { c.addSandbox(orphan) }, want: []string{ns + "/pool"}},
		{name: "adopted by a claim queues the pool it left", fire: func(c *Controller) { c.updateSandbox(member, adopted) }, want: []string{ns + "/pool"}},
		{name: "deleted member queues its pool", fire: func(c *Controller) { c.deleteSandbox(member) }, want: []string{ns + "/pool"}},
		{name: "unrelated sandbox queues nothing", fire: func(c *Controller) { c.updateSandbox(unrelated, unrelated2) }},
		{name: "resync without change queues nothing", fire: func(c *Controller) { c.updateSandbox(member, member) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 0, tmpl, pool, otherPool)
			tc.fire(f.ctrl)
			var got []string
			for f.ctrl.loop.Queue.Len() > 0 {
				k, _ := f.ctrl.loop.Queue.Get()
				got = append(got, k)
				f.ctrl.loop.Queue.Done(k)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPoolOfAnEarlierNamespaceMakesNothing: a pool recorded with the UID of an earlier namespace
// of its name (deleted and created again while the server was away) makes no members in the new
// one; namespacecleanup deletes it. Nor does a pool whose namespace is being deleted, where the
// API refuses new Sandboxes.
func TestPoolOfAnEarlierNamespaceMakesNothing(t *testing.T) {
	tmpl := newTemplate("tmpl", "img:v1")
	for _, tc := range []struct {
		name        string
		recorded    string
		terminating bool
		wantCreates int
	}{
		{name: "recorded with the namespace's UID: members made", recorded: "ns-uid-now", wantCreates: 2},
		{name: "recorded with an earlier namespace's UID: nothing made", recorded: "ns-uid-before"},
		{name: "recorded with none (made before UIDs were recorded): members made", wantCreates: 2},
		{name: "namespace being deleted: nothing made", recorded: "ns-uid-now", terminating: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := newPool("pool", "tmpl", 2, extensionsv1beta1.OnReplenishSandboxWarmPoolUpdateStrategyType)
			if tc.recorded != "" {
				pool.Annotations = map[string]string{agentsv1beta1.NamespaceUIDAnnotation: tc.recorded}
			}
			f := newFixture(t, 0, pool, tmpl)
			namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, UID: "ns-uid-now"}}
			if tc.terminating {
				namespace.Status.Phase = corev1.NamespaceTerminating
			}
			if err := f.namespaces.Add(namespace); err != nil {
				t.Fatal(err)
			}
			if err := f.sync(ns + "/pool"); err != nil {
				t.Fatal(err)
			}
			if got := f.count("create", "sandboxes"); got != tc.wantCreates {
				t.Errorf("creates = %d, want %d; writes %v", got, tc.wantCreates, f.writes())
			}
			if tc.wantCreates == 0 && len(f.writes()) != 0 {
				t.Errorf("writes = %v, want none", f.writes())
			}
		})
	}
}
