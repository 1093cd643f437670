// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
)

// WarmRun is one warm-pool measurement.
type WarmRun struct {
	PoolSize int     `json:"poolSize"`
	Claims   int     `json:"claims"`
	Clients  int     `json:"clients"`
	RatePerS float64 `json:"ratePerSecond,omitempty"` // 0: all at once
	// Per claim, from the start of its create request to a watch of all the run's claims, through
	// the aggregator, seeing it Ready=True: what another client following the claims sees.
	P50Ms float64 `json:"createToReadyP50Ms"`
	P90Ms float64 `json:"createToReadyP90Ms"`
	P99Ms float64 `json:"createToReadyP99Ms"`
	MaxMs float64 `json:"createToReadyMaxMs"`
	// AllReadyMs is from the first create to the watch seeing the last claim Ready.
	AllReadyMs float64 `json:"allReadyMs"`
	// The same as the claim's creator sees it: Ready at the earlier of its create response saying
	// Ready=True and the watch seeing it so.
	CreatorP50Ms      float64 `json:"creatorCreateToReadyP50Ms"`
	CreatorP90Ms      float64 `json:"creatorCreateToReadyP90Ms"`
	CreatorP99Ms      float64 `json:"creatorCreateToReadyP99Ms"`
	CreatorMaxMs      float64 `json:"creatorCreateToReadyMaxMs"`
	CreatorAllReadyMs float64 `json:"creatorAllReadyMs"`
	// Per claim, the create request alone.
	CreateP50Ms float64 `json:"createP50Ms"`
	CreateP99Ms float64 `json:"createP99Ms"`
	// Claims per second achieved: created (first create sent to last create answered) and Ready as
	// the watch sees them (first create sent to the last claim seen Ready).
	CreatedPerS float64 `json:"createdPerSecond"`
	ReadyPerS   float64 `json:"readyPerSecond"`
	// ReadyInCreateResponse counts the claims bound at create time: Ready in the create response.
	ReadyInCreateResponse int `json:"readyInCreateResponse"`
	WarmAdoptions         int `json:"warmAdoptions"`
	// Writes caused by the claims themselves; the pool's refill is counted apart.
	MainWritesPerClaim float64     `json:"mainAPIWritesPerClaim"`
	OurWritesPerClaim  float64     `json:"ourAPIWritesPerClaim"`
	MainWrites         writeCounts `json:"mainAPIWrites"`
	OurWrites          writeCounts `json:"ourAPIWrites"`
	// CPUMsPerClaim is the CPU each process of the plane spent per claim, from the first create
	// until the claimed pods were relabelled; it includes the pool's refill meanwhile.
	CPUMsPerClaim map[string]float64 `json:"cpuMsPerClaim"`
}

// WarmResult is the content of _output/bench/warm.json.
type WarmResult struct {
	Machine Machine `json:"machine"`
	Burst   WarmRun `json:"burst"`
	Stream  WarmRun `json:"stream"`
	Note    string  `json:"note"`
}

// BenchmarkWarmClaims is the headline figure: claims served from a warm pool on the local control
// plane. A burst of 300 claims from 32 clients against a pool of 300 Ready members, then a steady
// stream of 75 claims/s (750 claims) against a pool of 1,050.
func BenchmarkWarmClaims(b *testing.B) {
	c := connect(b)
	res := WarmResult{Machine: machine(),
		Note: "local control plane (kube-apiserver, etcd, kwok) and sandbox-apiserver on one machine; " +
			"writes per claim leave out the pool's refill (new members and their pods), pod status writes by kwok and events"}
	res.Burst = c.warmRun(b, warmSpec{prefix: "warm-burst", poolSize: 300, claims: 300, clients: 32})
	res.Stream = c.warmRun(b, warmSpec{prefix: "warm-stream", poolSize: 1050, claims: 750, clients: 32, rate: 75})

	fmt.Printf("\nWarm claims on %s (%d CPUs)\n", res.Machine.CPUModel, res.Machine.NumCPU)
	fmt.Printf("%-8s %-8s %6s %6s %9s %9s %9s %9s %11s %10s %10s %12s %12s\n", "run", "Ready to", "pool", "claims", "p50 ms", "p90 ms", "p99 ms", "max ms", "all ready", "main w/c", "ours w/c", "create p99", "Ready in resp")
	for _, r := range []struct {
		name string
		run  WarmRun
	}{{"burst", res.Burst}, {"stream", res.Stream}} {
		fmt.Printf("%-8s %-8s %6d %6d %9.1f %9.1f %9.1f %9.1f %9.0fms %10.2f %10.2f %10.1fms %13d\n", r.name, "creator", r.run.PoolSize, r.run.Claims,
			r.run.CreatorP50Ms, r.run.CreatorP90Ms, r.run.CreatorP99Ms, r.run.CreatorMaxMs, r.run.CreatorAllReadyMs, r.run.MainWritesPerClaim, r.run.OurWritesPerClaim,
			r.run.CreateP99Ms, r.run.ReadyInCreateResponse)
		fmt.Printf("%-8s %-8s %6s %6s %9.1f %9.1f %9.1f %9.1f %9.0fms\n", "", "watch", "", "",
			r.run.P50Ms, r.run.P90Ms, r.run.P99Ms, r.run.MaxMs, r.run.AllReadyMs)
	}
	if err := writeJSON(c.outFile("warm.json"), res); err != nil {
		b.Fatal(err)
	}
}

// warmSpec is one warm run: a pool of poolSize, then claims created by at most clients at a time,
// all at once (rate 0) or at rate per second.
type warmSpec struct {
	prefix                    string
	poolSize, claims, clients int
	rate                      float64
	// during, when set, is called as the first claim is created; what it returns is called once
	// the last claim is Ready (the burst's CPU profiles).
	during func(ctx context.Context) (stop func())
}

// warmRun fills a pool, creates claims (all at once, or at a steady rate) and measures them.
func (c *cluster) warmRun(b *testing.B, spec warmSpec) WarmRun {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	prefix, poolSize, claims, clients, rate := spec.prefix, spec.poolSize, spec.claims, spec.clients, spec.rate
	ns := c.namespace(b, prefix)
	run := WarmRun{PoolSize: poolSize, Claims: claims, Clients: clients, RatePerS: rate}

	template := &extensionsv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: extensionsv1beta1.SandboxTemplateSpec{PodTemplate: agentsv1beta1.PodTemplate{Spec: onKwok(corev1.PodSpec{
			Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/example/agent:latest"}},
		})}},
	}
	if _, err := c.sandbox.ExtensionsV1beta1().SandboxTemplates(ns).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	pool := &extensionsv1beta1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: "pool"},
		Spec:       extensionsv1beta1.SandboxWarmPoolSpec{Replicas: ptr.To(int32(poolSize)), TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: "agent"}},
	}
	if _, err := c.sandbox.ExtensionsV1beta1().SandboxWarmPools(ns).Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.sandbox.ExtensionsV1beta1().SandboxWarmPools(ns).Get(ctx, "pool", metav1.GetOptions{})
		return err == nil && p.Status.ReadyReplicas == int32(poolSize), nil
	}); err != nil {
		b.Fatalf("pool of %d not Ready: %v", poolSize, err)
	}
	b.Logf("%s: pool of %d Ready in %s", prefix, poolSize, time.Since(start).Round(time.Millisecond))
	// A pool is filled long before claims come: let the plane finish the pool's own work (events,
	// the members' last status writes) so that the claims are measured, not the fill's tail.
	quiet := time.Now()
	c.waitSettled(ctx, b)
	b.Logf("%s: plane settled in %s", prefix, time.Since(quiet).Round(time.Millisecond))

	mainBefore, oursBefore := c.bothWrites(ctx, b)

	readyAt, stopWatch := c.watchClaimsReady(ctx, b, ns)
	createdAt := make([]time.Time, claims)
	createTook := make([]time.Duration, claims)
	// readyInResponseAt is when a create response said Ready, zero when it did not.
	readyInResponseAt := make([]time.Time, claims)
	var readyInResponse atomic.Int32
	var wg sync.WaitGroup
	sem := make(chan struct{}, clients)
	errs := make(chan error, claims)
	respondedAt := make([]time.Time, claims)
	// create sends claim i. At a steady rate a claim is due when its tick comes: time spent waiting
	// for a free client counts against it, so a rate the server cannot keep up with shows.
	create := func(i int, due time.Time) {
		defer wg.Done()
		sem <- struct{}{}
		defer func() { <-sem }()
		claim := &extensionsv1beta1.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("claim-%04d", i)},
			Spec:       extensionsv1beta1.SandboxClaimSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: "agent"}},
		}
		sent := time.Now()
		createdAt[i] = sent
		if !due.IsZero() {
			createdAt[i] = due
		}
		created, err := c.sandbox.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, claim, metav1.CreateOptions{})
		respondedAt[i] = time.Now()
		createTook[i] = respondedAt[i].Sub(sent)
		if err != nil {
			errs <- err
			return
		}
		if meta.IsStatusConditionTrue(created.Status.Conditions, "Ready") {
			readyInResponseAt[i] = respondedAt[i]
			readyInResponse.Add(1)
		}
	}
	stopDuring := func() {}
	if spec.during != nil {
		stopDuring = spec.during(ctx)
	}
	cpuBefore := c.readPlaneCPU()
	first := time.Now()
	if rate == 0 {
		for i := range claims {
			wg.Add(1)
			go create(i, time.Time{})
		}
	} else {
		interval := time.Duration(float64(time.Second) / rate)
		tick := time.NewTicker(interval)
		for i := range claims {
			<-tick.C
			wg.Add(1)
			go create(i, first.Add(time.Duration(i+1)*interval))
		}
		tick.Stop()
	}
	wg.Wait()
	run.CreatedPerS = float64(claims) / slices.MaxFunc(respondedAt, time.Time.Compare).Sub(first).Seconds()
	close(errs)
	for err := range errs {
		b.Fatalf("creating a claim: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		return readyAt.len() == claims, nil
	}); err != nil {
		b.Fatalf("%d of %d claims Ready: %v", readyAt.len(), claims, err)
	}
	stopDuring()
	stopWatch()

	watched, byCreator := make([]time.Time, claims), make([]time.Time, claims)
	for i := range claims {
		watched[i] = readyAt.get(fmt.Sprintf("claim-%04d", i))
		byCreator[i] = watched[i]
		if t := readyInResponseAt[i]; !t.IsZero() && t.Before(byCreator[i]) {
			byCreator[i] = t
		}
	}
	run.P50Ms, run.P90Ms, run.P99Ms, run.MaxMs, run.AllReadyMs = readyFigures(first, createdAt, watched)
	run.CreatorP50Ms, run.CreatorP90Ms, run.CreatorP99Ms, run.CreatorMaxMs, run.CreatorAllReadyMs = readyFigures(first, createdAt, byCreator)
	run.ReadyPerS = float64(claims) / (run.AllReadyMs / 1000)
	slices.Sort(createTook)
	run.CreateP50Ms, run.CreateP99Ms = ms(percentile(createTook, 50)), ms(percentile(createTook, 99))
	run.ReadyInCreateResponse = int(readyInResponse.Load())

	// Let the claims' follow-up writes land (the pod of each adopted sandbox relabelled) before
	// counting them.
	sandboxes, err := c.sandbox.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, sb := range sandboxes.Items {
		if sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation] != "" && metav1.GetControllerOfNoCopy(&sb).Kind == "SandboxClaim" {
			run.WarmAdoptions++
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: extensionsv1beta1.SandboxIDLabel})
		return err == nil && len(pods.Items) >= claims, nil
	}); err != nil {
		b.Fatalf("pods of the claimed sandboxes not relabelled: %v", err)
	}
	run.CPUMsPerClaim = cpuPerOp(cpuBefore, c.readPlaneCPU(), claims)
	mainAfter, oursAfter := c.bothWrites(ctx, b)
	run.MainWrites = mainAfter.minus(mainBefore).workload()
	run.OurWrites = oursAfter.minus(oursBefore).workload()
	// Claim path: pod relabels (PUT/PATCH pods) on the main API; the claim's create (which, bound at
	// create time, stores the adopted sandbox in the same etcd transaction), its status and the
	// adoption (PUT sandboxes) when the controller does it, on ours. New members (POST) and the
	// sandboxes' status writes (the adopted ones report their new generation) are left out.
	run.MainWritesPerClaim = (run.MainWrites["pods PUT"] + run.MainWrites["pods PATCH"]) / float64(claims)
	run.OurWritesPerClaim = (run.OurWrites["sandboxclaims POST"] + run.OurWrites["sandboxclaims/status PUT"] +
		run.OurWrites["sandboxes PUT"]) / float64(claims)
	// Each run's figures are logged as it ends, so a later run's failure does not lose them.
	b.Logf("%s: %d claims, created/s %.0f, Ready/s %.0f, creator p50/p99 %.1f/%.1f ms, watcher p50/p99 %.1f/%.1f ms, all Ready %.0f ms",
		prefix, claims, run.CreatedPerS, run.ReadyPerS, run.CreatorP50Ms, run.CreatorP99Ms, run.P50Ms, run.P99Ms, run.AllReadyMs)
	b.Logf("%s: main writes %v", prefix, run.MainWrites)
	b.Logf("%s: our writes %v", prefix, run.OurWrites)
	b.Logf("%s: CPU per claim: %s", prefix, formatCPUPerOp(run.CPUMsPerClaim))
	c.deleteNamespace(b, ns)
	return run
}

// readyFigures summarizes when claims created at createdAt were Ready (readyAt): the percentiles
// of their create-to-Ready latencies and the time from first to the last of them, in ms.
func readyFigures(first time.Time, createdAt, readyAt []time.Time) (p50, p90, p99, maxMs, allReady float64) {
	lat := make([]time.Duration, len(readyAt))
	last := first
	for i, t := range readyAt {
		lat[i] = t.Sub(createdAt[i])
		if t.After(last) {
			last = t
		}
	}
	slices.Sort(lat)
	return ms(percentile(lat, 50)), ms(percentile(lat, 90)), ms(percentile(lat, 99)), ms(lat[len(lat)-1]), ms(last.Sub(first))
}

// readyTimes records when each claim was first seen Ready=True.
type readyTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (r *readyTimes) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.at)
}

func (r *readyTimes) get(name string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.at[name]
}

// watchClaimsReady follows the claims of ns with an informer (which lists and watches again
// whenever a watch is closed under load) and records when each turns Ready.
func (c *cluster) watchClaimsReady(ctx context.Context, b *testing.B, ns string) (*readyTimes, func()) {
	r := &readyTimes{at: map[string]time.Time{}}
	record := func(obj any) {
		claim, ok := obj.(*extensionsv1beta1.SandboxClaim)
		if !ok || !meta.IsStatusConditionTrue(claim.Status.Conditions, "Ready") {
			return
		}
		r.see(claim.Name, time.Now())
	}
	factory := externalversions.NewSharedInformerFactoryWithOptions(c.sandbox, 0, externalversions.WithNamespace(ns))
	informer := factory.Extensions().V1beta1().SandboxClaims().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		b.Fatal("claim informer did not sync")
	}
	return r, func() { close(stop); factory.Shutdown() }
}

// see records t as when name turned Ready, unless it was seen before.
func (r *readyTimes) see(name string, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.at[name]; !seen {
		r.at[name] = t
	}
}
