// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	agentsfake "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
)

const (
	testNS   = "default"
	testName = "sb"
	testUID  = types.UID("sb-uid")
	testGen  = int64(3)
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

var testHash = fnvHash(testName)

// testSelector selects the test Sandbox's pod by its UID.
var testSelector = agentsv1beta1.SandboxUIDLabel + "=" + string(testUID)

// newSandbox is a live Sandbox named sb in default with the finalizer, generation 3 and a pod
// template of one container; mods adjust it.
func newSandbox(mods ...func(*agentsv1beta1.Sandbox)) *agentsv1beta1.Sandbox {
	sb := &agentsv1beta1.Sandbox{
		TypeMeta: metav1.TypeMeta{APIVersion: agentsv1beta1.SchemeGroupVersion.String(), Kind: "Sandbox"},
		ObjectMeta: metav1.ObjectMeta{
			Name: testName, Namespace: testNS, UID: testUID, Generation: testGen,
			ResourceVersion: "10",
			Finalizers:      []string{Finalizer},
		},
		Spec: agentsv1beta1.SandboxSpec{
			PodTemplate: agentsv1beta1.PodTemplate{
				Spec: corev1.PodSpec{
					Containers:    []corev1.Container{{Name: "agent", Image: "ghcr.io/example/agent:latest"}},
					RestartPolicy: corev1.RestartPolicyNever,
				},
			},
		},
	}
	for _, m := range mods {
		m(sb)
	}
	return sb
}

func withReplicas(n int32) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.Spec.Replicas = ptr.To(n) }
}

func withService(v *bool) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.Spec.Service = v }
}

func withTemplateMeta(labels, annotations map[string]string) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) {
		sb.Spec.PodTemplate.ObjectMeta = agentsv1beta1.PodMetadata{Labels: labels, Annotations: annotations}
	}
}

func withVCT(names ...string) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) {
		for _, n := range names {
			sb.Spec.VolumeClaimTemplates = append(sb.Spec.VolumeClaimTemplates, agentsv1beta1.PersistentVolumeClaimTemplate{
				EmbeddedObjectMetadata: agentsv1beta1.EmbeddedObjectMetadata{Name: n},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				},
			})
		}
	}
}

func withShutdown(d time.Duration, policy *agentsv1beta1.ShutdownPolicy) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) {
		sb.Spec.ShutdownTime = &metav1.Time{Time: testNow.Add(d)}
		sb.Spec.ShutdownPolicy = policy
	}
}

func withStatus(st agentsv1beta1.SandboxStatus) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) { sb.Status = st }
}

func withAnnotation(k, v string) func(*agentsv1beta1.Sandbox) {
	return func(sb *agentsv1beta1.Sandbox) {
		if sb.Annotations == nil {
			sb.Annotations = map[string]string{}
		}
		sb.Annotations[k] = v
	}
}

func deleting(sb *agentsv1beta1.Sandbox) {
	sb.DeletionTimestamp = &metav1.Time{Time: testNow.Add(-time.Minute)}
}

// cond is a condition as the controller writes it for the test Sandbox's generation.
func cond(typ agentsv1beta1.ConditionType, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: string(typ), Status: status, Reason: reason, Message: msg,
		ObservedGeneration: testGen, LastTransitionTime: metav1.NewTime(testNow.Add(-time.Hour))}
}

// sandboxRef is the controller reference a child of the test Sandbox carries.
func sandboxRef() metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "agents.x-k8s.io/v1beta1", Kind: "Sandbox", Name: testName,
		UID: testUID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// otherRef is a controller reference to some other object.
func otherRef() metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "other",
		UID: "other-uid", Controller: ptr.To(true)}
}

type ownerKind int

const (
	owned ownerKind = iota
	unowned
	ownedByOther
)

func refsFor(o ownerKind) []metav1.OwnerReference {
	switch o {
	case owned:
		return []metav1.OwnerReference{sandboxRef()}
	case ownedByOther:
		return []metav1.OwnerReference{otherRef()}
	}
	return nil
}

// newPod is a pod of the test Sandbox as the controller would have made it, with the given owner
// and mods.
func newPod(name string, o ownerKind, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNS, UID: types.UID(name + "-pod-uid"), ResourceVersion: "5",
			Labels:          map[string]string{agentsv1beta1.SandboxNameHashLabel: testHash, agentsv1beta1.SandboxUIDLabel: string(testUID)},
			OwnerReferences: refsFor(o),
		},
		Spec: *newSandbox().Spec.PodTemplate.Spec.DeepCopy(),
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func phase(ph corev1.PodPhase) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Phase = ph }
}

// readyPod makes the pod Running and Ready with the given IPs.
func readyPod(ips ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		if len(ips) > 0 {
			p.Status.PodIP = ips[0]
		}
	}
}

func terminating(p *corev1.Pod) {
	p.DeletionTimestamp = &metav1.Time{Time: testNow.Add(-time.Second)}
}

func newService(o ownerKind, mods ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: testName, Namespace: testNS, UID: "svc-uid", ResourceVersion: "7",
			Labels:          map[string]string{agentsv1beta1.SandboxNameHashLabel: testHash},
			OwnerReferences: refsFor(o),
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{agentsv1beta1.SandboxUIDLabel: string(testUID)},
		},
	}
	for _, m := range mods {
		m(s)
	}
	return s
}

func newPVC(vct string, o ownerKind, mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: vct + "-" + testName, Namespace: testNS, UID: types.UID(vct + "-pvc-uid"), ResourceVersion: "3",
			Labels:          map[string]string{agentsv1beta1.SandboxNameHashLabel: testHash},
			OwnerReferences: refsFor(o),
		},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

// queueSpy records the AddAfter calls of the controller's queue.
type queueSpy struct {
	workqueue.TypedRateLimitingInterface[string]
	after []delayed
}

type delayed struct {
	key string
	d   time.Duration
}

func (q *queueSpy) AddAfter(key string, d time.Duration) {
	q.after = append(q.after, delayed{key, d})
}

// fixture is a controller on fake clients, with caches filled by hand.
type fixture struct {
	t        *testing.T
	kube     *kubefake.Clientset
	client   *agentsfake.Clientset
	kubeInf  informers.SharedInformerFactory
	agentInf externalversions.SharedInformerFactory
	recorder *record.FakeRecorder
	queue    *queueSpy
	c        *Controller
}

// world is what a test starts from: the Sandbox (nil for none), child objects in both the cluster
// and the cache, and objects only in the cluster (as unlabelled ones are, which the label-filtered
// informers of the manager never see).
type world struct {
	sandbox  *agentsv1beta1.Sandbox
	cached   []runtime.Object
	apiOnly  []runtime.Object
	domain   string
	reactors func(kube *kubefake.Clientset, client *agentsfake.Clientset)
	// firstStatusDelay holds back the first status of a new Sandbox; 0 (most tests) writes at once.
	firstStatusDelay time.Duration
}

func newFixture(t *testing.T, w world) *fixture {
	t.Helper()
	var kubeObjs []runtime.Object
	for _, o := range append(append([]runtime.Object{}, w.cached...), w.apiOnly...) {
		kubeObjs = append(kubeObjs, o.DeepCopyObject())
	}
	f := &fixture{
		t:    t,
		kube: kubefake.NewClientset(kubeObjs...),
		// NewClientset's field-managed tracker has no REST mapping for our kinds.
		client:   agentsfake.NewSimpleClientset(),
		recorder: record.NewFakeRecorder(100),
	}
	f.kubeInf = informers.NewSharedInformerFactory(f.kube, 0)
	f.agentInf = externalversions.NewSharedInformerFactory(f.client, 0)
	if w.sandbox != nil {
		// Added with its resource: the tracker would guess "sandboxs" from the kind.
		f.must(f.client.Tracker().Create(agentsv1beta1.SchemeGroupVersion.WithResource("sandboxes"), w.sandbox.DeepCopy(), testNS))
	}
	if w.reactors != nil {
		w.reactors(f.kube, f.client)
	}
	domain := w.domain
	if domain == "" {
		domain = "cluster.local"
	}
	c, err := New(Config{
		Kube:          f.kube,
		Client:        f.client,
		Sandboxes:     f.agentInf.Agents().V1beta1().Sandboxes(),
		Namespaces:    f.kubeInf.Core().V1().Namespaces(),
		Pods:          f.kubeInf.Core().V1().Pods(),
		Services:      f.kubeInf.Core().V1().Services(),
		PVCs:          f.kubeInf.Core().V1().PersistentVolumeClaims(),
		Events:        f.recorder,
		ClusterDomain: domain,
		Workers:       1,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.now = func() time.Time { return testNow }
	c.firstStatusDelay = w.firstStatusDelay
	f.queue = &queueSpy{TypedRateLimitingInterface: c.loop.Queue}
	c.loop.Queue = f.queue
	t.Cleanup(f.queue.ShutDown)
	f.c = c
	if w.sandbox != nil {
		f.must(f.agentInf.Agents().V1beta1().Sandboxes().Informer().GetIndexer().Add(w.sandbox.DeepCopy()))
	}
	for _, o := range w.cached {
		f.must(f.indexerFor(o).Add(o.DeepCopyObject()))
	}
	return f
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) indexerFor(o runtime.Object) cache.Indexer {
	switch o.(type) {
	case *corev1.Pod:
		return f.kubeInf.Core().V1().Pods().Informer().GetIndexer()
	case *corev1.Service:
		return f.kubeInf.Core().V1().Services().Informer().GetIndexer()
	case *corev1.PersistentVolumeClaim:
		return f.kubeInf.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	case *corev1.Namespace:
		return f.kubeInf.Core().V1().Namespaces().Informer().GetIndexer()
	}
	f.t.Fatalf("no indexer for %T", o)
	return nil
}

// sync runs one sync of the test Sandbox.
func (f *fixture) sync() error {
	return f.c.sync(context.Background(), testNS+"/"+testName)
}

// refreshCaches makes the caches hold exactly what the fake cluster holds now, as the informers
// would once they have seen every event, and forgets the recorded actions and events.
func (f *fixture) refreshCaches() {
	f.t.Helper()
	ctx := context.Background()
	pods, err := f.kube.CoreV1().Pods(testNS).List(ctx, metav1.ListOptions{})
	f.must(err)
	svcs, err := f.kube.CoreV1().Services(testNS).List(ctx, metav1.ListOptions{})
	f.must(err)
	pvcs, err := f.kube.CoreV1().PersistentVolumeClaims(testNS).List(ctx, metav1.ListOptions{})
	f.must(err)
	sbs, err := f.client.AgentsV1beta1().Sandboxes(testNS).List(ctx, metav1.ListOptions{})
	f.must(err)
	replace := func(idx cache.Indexer, items []any) { f.must(idx.Replace(items, "")) }
	var items []any
	for i := range pods.Items {
		items = append(items, &pods.Items[i])
	}
	replace(f.kubeInf.Core().V1().Pods().Informer().GetIndexer(), items)
	items = nil
	for i := range svcs.Items {
		items = append(items, &svcs.Items[i])
	}
	replace(f.kubeInf.Core().V1().Services().Informer().GetIndexer(), items)
	items = nil
	for i := range pvcs.Items {
		items = append(items, &pvcs.Items[i])
	}
	replace(f.kubeInf.Core().V1().PersistentVolumeClaims().Informer().GetIndexer(), items)
	items = nil
	for i := range sbs.Items {
		items = append(items, &sbs.Items[i])
	}
	replace(f.agentInf.Agents().V1beta1().Sandboxes().Informer().GetIndexer(), items)
	f.kube.ClearActions()
	f.client.ClearActions()
	f.events()
}

// writes are the mutating actions of both clients, as "verb resource[/subresource]", in order
// within each client (cluster first).
func (f *fixture) writes() []string {
	var out []string
	for _, a := range append(f.kube.Actions(), f.client.Actions()...) {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			s += "/" + sub
		}
		out = append(out, s)
	}
	return out
}

// actions returns the recorded actions of verb on resource (with subresource after a slash).
func actions(fake *clienttesting.Fake, verb, resource string) []clienttesting.Action {
	res, sub, _ := strings.Cut(resource, "/")
	var out []clienttesting.Action
	for _, a := range fake.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == res && a.GetSubresource() == sub {
			out = append(out, a)
		}
	}
	return out
}

// written returns the object of the only create or update of resource, failing otherwise.
func written[T runtime.Object](t *testing.T, fake *clienttesting.Fake, verb, resource string) T {
	t.Helper()
	acts := actions(fake, verb, resource)
	if len(acts) != 1 {
		t.Fatalf("want one %s %s, got %d", verb, resource, len(acts))
	}
	var obj runtime.Object
	switch a := acts[0].(type) {
	case clienttesting.CreateAction:
		obj = a.GetObject()
	case clienttesting.UpdateAction:
		obj = a.GetObject()
	default:
		t.Fatalf("%s %s is a %T", verb, resource, acts[0])
	}
	out, ok := obj.(T)
	if !ok {
		t.Fatalf("%s %s wrote a %T", verb, resource, obj)
	}
	return out
}

// deletes are the names deleted of resource and the UID preconditions they carried.
func deletes(fake *clienttesting.Fake, resource string) map[string]types.UID {
	out := map[string]types.UID{}
	for _, a := range actions(fake, "delete", resource) {
		d := a.(clienttesting.DeleteActionImpl)
		var uid types.UID
		if p := d.DeleteOptions.Preconditions; p != nil && p.UID != nil {
			uid = *p.UID
		}
		out[d.GetName()] = uid
	}
	return out
}

// status is the status of the last status write, nil when there was none.
func (f *fixture) status() *agentsv1beta1.SandboxStatus {
	acts := actions(&f.client.Fake, "update", "sandboxes/status")
	if len(acts) == 0 {
		return nil
	}
	sb := acts[len(acts)-1].(clienttesting.UpdateAction).GetObject().(*agentsv1beta1.Sandbox)
	return &sb.Status
}

// mustStatus is status, failing when nothing was written.
func (f *fixture) mustStatus() *agentsv1beta1.SandboxStatus {
	f.t.Helper()
	st := f.status()
	if st == nil {
		f.t.Fatalf("no status written; writes: %v", f.writes())
	}
	return st
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

// condSummary is a condition without its transition time, for comparison.
type condSummary struct {
	Type, Status, Reason, Message string
	Gen                           int64
}

func summarize(conds []metav1.Condition) map[string]condSummary {
	out := map[string]condSummary{}
	for _, c := range conds {
		out[c.Type] = condSummary{c.Type, string(c.Status), c.Reason, c.Message, c.ObservedGeneration}
	}
	return out
}

func want(typ agentsv1beta1.ConditionType, status metav1.ConditionStatus, reason, msg string) condSummary {
	return condSummary{string(typ), string(status), reason, msg, testGen}
}

// checkConditions compares conditions by type, ignoring transition times; a message ending in
// "*" matches as a prefix.
func checkConditions(t *testing.T, got []metav1.Condition, wants ...condSummary) {
	t.Helper()
	gotM := summarize(got)
	if len(gotM) != len(wants) {
		t.Errorf("conditions = %+v, want %d: %+v", got, len(wants), wants)
	}
	for _, w := range wants {
		g, ok := gotM[w.Type]
		if !ok {
			t.Errorf("condition %s missing; got %+v", w.Type, got)
			continue
		}
		msgOK := g.Message == w.Message
		if p, ok := strings.CutSuffix(w.Message, "*"); ok {
			msgOK = strings.HasPrefix(g.Message, p)
		}
		if g.Status != w.Status || g.Reason != w.Reason || !msgOK || g.Gen != w.Gen {
			t.Errorf("condition %s = %+v, want %+v", w.Type, g, w)
		}
	}
	for _, c := range got {
		if c.LastTransitionTime.IsZero() {
			t.Errorf("condition %s has no lastTransitionTime", c.Type)
		}
	}
}

func findCond(conds []metav1.Condition, typ agentsv1beta1.ConditionType) *metav1.Condition {
	return meta.FindStatusCondition(conds, string(typ))
}

// syncCase is one row of a table of single syncs.
type syncCase struct {
	name     string
	sandbox  *agentsv1beta1.Sandbox
	cached   []runtime.Object
	apiOnly  []runtime.Object
	domain   string
	reactors func(kube *kubefake.Clientset, client *agentsfake.Clientset)

	// wantErr is a substring of the error sync returns; empty for none.
	wantErr string
	// wantWrites are all mutating actions, in order: cluster ones first, then the Sandbox API's.
	wantWrites []string
	// wantEvents are all events recorded, in order.
	wantEvents []string
	// wantConds are the conditions of the status written; nil skips the check.
	wantConds []condSummary
	// wantStatus, when set, is the status written except its conditions.
	wantStatus *agentsv1beta1.SandboxStatus
	// check makes further assertions.
	check func(t *testing.T, f *fixture)
	// steady: once the caches have caught up, a second sync writes nothing and records no
	// Normal event.
	steady bool
}

func runSyncCases(t *testing.T, cases []syncCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, world{sandbox: tc.sandbox, cached: tc.cached, apiOnly: tc.apiOnly,
				domain: tc.domain, reactors: tc.reactors})
			err := f.sync()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("sync: unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("sync error = %v, want one containing %q", err, tc.wantErr)
			}
			if got := f.writes(); !slices.Equal(got, tc.wantWrites) {
				t.Errorf("writes = %q, want %q", got, tc.wantWrites)
			}
			if got := f.events(); !slices.Equal(got, tc.wantEvents) {
				t.Errorf("events = %q, want %q", got, tc.wantEvents)
			}
			if tc.wantConds != nil {
				checkConditions(t, f.mustStatus().Conditions, tc.wantConds...)
			}
			if tc.wantStatus != nil {
				got := f.mustStatus().DeepCopy()
				got.Conditions = nil
				if !apiequality.Semantic.DeepEqual(*got, *tc.wantStatus) {
					t.Errorf("status = %+v, want %+v", *got, *tc.wantStatus)
				}
			}
			if tc.check != nil {
				tc.check(t, f)
			}
			if tc.steady && !t.Failed() {
				f.refreshCaches()
				_ = f.sync()
				if got := f.writes(); len(got) != 0 {
					t.Errorf("second sync with caught-up caches wrote %q, want nothing", got)
				}
				// A refusal is reported again (as a Warning) while it lasts; nothing else is.
				for _, e := range f.events() {
					if !strings.HasPrefix(e, "Warning ") {
						t.Errorf("second sync recorded event %q", e)
					}
				}
			}
		})
	}
}

// runningStatus is the status of a Sandbox whose pod exists, with the given IPs.
func runningStatus(ips ...string) *agentsv1beta1.SandboxStatus {
	return &agentsv1beta1.SandboxStatus{Replicas: 1, LabelSelector: testSelector, PodIPs: ips}
}
