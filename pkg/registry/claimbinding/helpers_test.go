// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package claimbinding

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

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
	templateHash             = claimtest.TemplateHash
	newClaim                 = claimtest.Claim
	named                    = claimtest.Named
	warmpool                 = claimtest.WarmPool
	withEnv                  = claimtest.WithEnv
	withExtraMeta            = claimtest.WithExtraMeta
	withLifecycle            = claimtest.WithLifecycle
	newTemplate              = claimtest.Template
	envPolicy                = claimtest.EnvPolicy
	ownedByClaim             = claimtest.OwnedByClaim
	claimOwnerRef            = claimtest.ClaimOwnerRef
	sandboxReady             = claimtest.SandboxReady
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

// ---- fixture ----

var testBucket = warm.Bucket{Namespace: testNS, TemplateRefHash: templateHash}

// fixture is a Binder with a chooser on informers of a fake API. Until start, the informers do
// not run and the chooser's caches are not synced; once started (on an API holding the objects
// newFixture was given), tests fill the caches by hand.
type fixture struct {
	t        *testing.T
	inf      externalversions.SharedInformerFactory
	recorder *record.FakeRecorder
	chooser  *warm.Chooser
	b        *Binder
	// start runs the informers.
	start func()
}

// newFixture builds the binder and its chooser; objs are in the fake API, for the informers to
// list once started.
func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	return newTracedFixture(t, nil, objs...)
}

// newTracedFixture is newFixture with a chooser that records its spans with tracer.
func newTracedFixture(t *testing.T, tracer trace.TracerProvider, objs ...runtime.Object) *fixture {
	t.Helper()
	// NewClientset's field-managed tracker has no REST mapping for these kinds.
	client := fake.NewSimpleClientset()
	for _, o := range objs {
		gvr := extensionsv1beta1.SchemeGroupVersion.WithResource("sandboxtemplates")
		if _, ok := o.(*agentsv1beta1.Sandbox); ok {
			// The tracker would guess the resource "sandboxs" from the kind.
			gvr = agentsv1beta1.SchemeGroupVersion.WithResource("sandboxes")
		}
		m, err := meta.Accessor(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Tracker().Create(gvr, o, m.GetNamespace()); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range testPools() {
		if err := client.Tracker().Create(extensionsv1beta1.SchemeGroupVersion.WithResource("sandboxwarmpools"), p, p.Namespace); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{t: t, inf: externalversions.NewSharedInformerFactory(client, 0), recorder: record.NewFakeRecorder(100)}
	chooser, err := warm.New(warm.Config{
		Sandboxes: f.inf.Agents().V1beta1().Sandboxes(),
		Templates: f.inf.Extensions().V1beta1().SandboxTemplates(),
		WarmPools: f.inf.Extensions().V1beta1().SandboxWarmPools(),
		Events:    f.recorder,
		Tracer:    tracer,
		Now:       func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatalf("warm.New: %v", err)
	}
	f.chooser, f.b = chooser, &Binder{chooser: chooser}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); f.inf.Shutdown() })
	f.start = func() { f.inf.Start(stop) }
	return f
}

// newBindFixture is a fixture whose chooser's caches are synced, with objs added to them.
func newBindFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := newFixture(t)
	f.sync()
	for _, o := range objs {
		f.add(o)
	}
	return f
}

// sync starts the informers and waits for the chooser's caches.
func (f *fixture) sync() {
	f.t.Helper()
	f.start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !f.chooser.WaitSynced(ctx) {
		f.t.Fatal("the chooser's caches did not sync")
	}
}

// add puts obj into its informer's cache, as a watch event would, without telling the handlers.
func (f *fixture) add(obj runtime.Object) {
	f.t.Helper()
	switch o := obj.(type) {
	case *agentsv1beta1.Sandbox:
		f.must(f.inf.Agents().V1beta1().Sandboxes().Informer().GetIndexer().Add(o.DeepCopy()))
	case *extensionsv1beta1.SandboxTemplate:
		f.must(f.inf.Extensions().V1beta1().SandboxTemplates().Informer().GetIndexer().Add(o.DeepCopy()))
	default:
		f.t.Fatalf("no cache for %T", obj)
	}
}

// updateCache replaces a sandbox in the cache.
func (f *fixture) updateCache(sb *agentsv1beta1.Sandbox) {
	f.t.Helper()
	f.must(f.inf.Agents().V1beta1().Sandboxes().Informer().GetIndexer().Update(sb.DeepCopy()))
}

// warm feeds sandboxes to the chooser's handler, as the informer would.
func (f *fixture) warm(sbs ...*agentsv1beta1.Sandbox) {
	for _, sb := range sbs {
		f.chooser.OnUpdate(nil, sb.DeepCopy())
	}
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// events drains the recorder.
func (f *fixture) events() []string { return claimtest.Events(f.recorder) }

// eventReasons are the reasons of the drained events, in order.
func (f *fixture) eventReasons() []string { return claimtest.EventReasons(f.recorder) }
