// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
)

// churnWindow counts what happened in one 10 s window of a churn run.
type churnWindow struct {
	StartS float64 `json:"startSeconds"`
	// Created claims (create requests that started in the window), claims seen Ready (the
	// completions) and claims seen deleted, per second.
	CreatedPerS float64 `json:"createdPerSecond"`
	ReadyPerS   float64 `json:"readyPerSecond"`
	DeletedPerS float64 `json:"deletedPerSecond"`
}

// ChurnResult is the content of _output/bench/churn.json.
type ChurnResult struct {
	Machine   Machine `json:"machine"`
	RatePerS  float64 `json:"ratePerSecond"`
	HoldS     float64 `json:"holdSeconds"`
	DurationS float64 `json:"durationSeconds"`
	PoolSize  int     `json:"poolSize"`
	Created   int     `json:"created"`
	Ready     int     `json:"ready"`
	Deleted   int     `json:"deleted"`
	// CreateErrors counts create requests that failed; those claims are not in the latencies.
	CreateErrors int `json:"createErrors"`
	// From the start of a claim's create request to a watch of the namespace's claims seeing it
	// Ready=True; a claim never seen Ready counts as the longest wait.
	WatchP50Ms    float64       `json:"watchCreateToReadyP50Ms"`
	WatchP99Ms    float64       `json:"watchCreateToReadyP99Ms"`
	WatchMaxMs    float64       `json:"watchCreateToReadyMaxMs"`
	NotReadyIn5s  int           `json:"notReadyWithin5s"`
	NotReadyIn60s int           `json:"notReadyWithin60s"`
	Windows       []churnWindow `json:"windows"`
	// LeftBehind is what was still there, beyond the pool's own members, when the cleanup wait
	// ended; CleanupMs is how long after the last delete request the namespace held only the pool.
	LeftBehindClaims    int     `json:"leftBehindClaims"`
	LeftBehindSandboxes int     `json:"leftBehindSandboxes"`
	LeftBehindPods      int     `json:"leftBehindPods"`
	CleanupMs           float64 `json:"cleanupMs"`
	// Memory of sandbox-apiserver every 5 s from before the first create to SettleS after the
	// load; RSSAfterMiB is the last sample, taken SettleS after the cleanup.
	Memory       []memorySample `json:"memory"`
	RSSStartMiB  float64        `json:"rssStartMiB"`
	RSSPeakMiB   float64        `json:"rssPeakMiB"`
	RSSAfterMiB  float64        `json:"rssAfterMiB"`
	HeapAfterMiB float64        `json:"heapInuseAfterMiB"`
	SettleS      float64        `json:"settleSeconds"`
	// CPUMsPerClaim is the CPU each process of the plane spent per claim, and MainWrites and
	// OurWrites the writes each API served, from the first create until the namespace held only
	// the pool again.
	CPUMsPerClaim map[string]float64 `json:"cpuMsPerClaim"`
	MainWrites    writeCounts        `json:"mainAPIWrites"`
	OurWrites     writeCounts        `json:"ourAPIWrites"`
	Note          string             `json:"note"`
}

// churnParams reads the run's shape from the environment: SANDBOX_BENCH_CHURN_RATE (claims/s),
// SANDBOX_BENCH_CHURN_HOLD (how long each claim is kept after it is Ready),
// SANDBOX_BENCH_CHURN_DURATION (how long claims are created), SANDBOX_BENCH_CHURN_POOL (warm pool
// size) and SANDBOX_BENCH_CHURN_SETTLE (how long after the load RSS is read again).
func churnParams(b *testing.B) (rate float64, hold, duration time.Duration, pool int, settle time.Duration) {
	rate, hold, duration, pool, settle = 30, 2*time.Second, 10*time.Minute, 200, time.Minute
	env := func(name string, parse func(string) error) {
		if v := os.Getenv(name); v != "" {
			if err := parse(v); err != nil {
				b.Fatalf("%s=%q: %v", name, v, err)
			}
		}
	}
	env("SANDBOX_BENCH_CHURN_RATE", func(v string) (err error) { rate, err = strconv.ParseFloat(v, 64); return })
	env("SANDBOX_BENCH_CHURN_HOLD", func(v string) (err error) { hold, err = time.ParseDuration(v); return })
	env("SANDBOX_BENCH_CHURN_DURATION", func(v string) (err error) { duration, err = time.ParseDuration(v); return })
	env("SANDBOX_BENCH_CHURN_POOL", func(v string) (err error) { pool, err = strconv.Atoi(v); return })
	env("SANDBOX_BENCH_CHURN_SETTLE", func(v string) (err error) { settle, err = time.ParseDuration(v); return })
	if rate <= 0 || rate > 1000 || duration <= 0 || duration > time.Hour || pool <= 0 || hold < 0 || settle < 0 {
		b.Fatalf("churn parameters out of range: rate %v/s (0-1000], duration %s (0-1h], pool %d, hold %s, settle %s", rate, duration, pool, hold, settle)
	}
	return rate, hold, duration, pool, settle
}

// claimLife records when each claim of a churn run was created, seen Ready and seen deleted.
type claimLife struct {
	mu      sync.Mutex
	created map[string]time.Time
	ready   map[string]time.Time
	deleted map[string]time.Time
	// deleting holds the claims whose delete is scheduled; once closing, the end of the run
	// deletes the rest and Ready no longer schedules any.
	deleting map[string]bool
	closing  bool
}

func (l *claimLife) mark(m map[string]time.Time, name string, t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := m[name]; ok {
		return false
	}
	m[name] = t
	return true
}

func (l *claimLife) counts() (created, ready, deleted int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.created), len(l.ready), len(l.deleted)
}

// BenchmarkChurn is the shape of RL and evaluation runs: claims created at a steady rate from a
// warm pool, each deleted a hold time after it is Ready. Defaults: 30 claims/s for 10 minutes,
// 2 s hold, pool of 200 (see churnParams).
func BenchmarkChurn(b *testing.B) {
	rate, hold, duration, poolSize, settle := churnParams(b)
	c := connect(b)
	srv := c.ourServer()
	ctx, cancel := context.WithTimeout(context.Background(), duration+20*time.Minute)
	defer cancel()
	ns := c.namespace(b, "churn")
	res := ChurnResult{Machine: machine(), RatePerS: rate, HoldS: hold.Seconds(), DurationS: duration.Seconds(), PoolSize: poolSize, SettleS: settle.Seconds(),
		Note: "local control plane (kube-apiserver, etcd, kwok) and sandbox-apiserver on one machine with the load generator; " +
			"completions are claims seen Ready; RSS of the sandbox-apiserver process from /proc"}
	c.makePool(ctx, b, ns, poolSize)

	start := time.Now()
	var samplesMu sync.Mutex
	sampleNow := func() {
		s, err := srv.sample(ctx, start)
		if err != nil {
			b.Logf("memory sample: %v", err)
			return
		}
		samplesMu.Lock()
		res.Memory = append(res.Memory, s)
		samplesMu.Unlock()
	}
	sampleNow()
	samplerCtx, stopSampler := context.WithCancel(ctx)
	var samplerDone sync.WaitGroup
	samplerDone.Go(func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-samplerCtx.Done():
				return
			case <-tick.C:
				sampleNow()
			}
		}
	})

	life := &claimLife{created: map[string]time.Time{}, ready: map[string]time.Time{}, deleted: map[string]time.Time{}, deleting: map[string]bool{}}
	claims := c.sandbox.ExtensionsV1beta1().SandboxClaims(ns)
	var deletes sync.WaitGroup
	var lastDeleteMu sync.Mutex
	var lastDelete time.Time
	deleteClaim := func(name string) {
		defer deletes.Done()
		err := claims.Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			b.Logf("deleting claim %s: %v", name, err)
		}
		lastDeleteMu.Lock()
		lastDelete = time.Now()
		lastDeleteMu.Unlock()
	}
	onClaim := func(obj any) {
		claim, ok := obj.(*extensionsv1beta1.SandboxClaim)
		if !ok || !meta.IsStatusConditionTrue(claim.Status.Conditions, "Ready") {
			return
		}
		if life.mark(life.ready, claim.Name, time.Now()) {
			life.mu.Lock()
			defer life.mu.Unlock()
			if life.deleting[claim.Name] || life.closing {
				return
			}
			life.deleting[claim.Name] = true
			deletes.Add(1)
			time.AfterFunc(hold, func() { deleteClaim(claim.Name) })
		}
	}
	factory := externalversions.NewSharedInformerFactoryWithOptions(c.sandbox, 0, externalversions.WithNamespace(ns))
	informer := factory.Extensions().V1beta1().SandboxClaims().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onClaim,
		UpdateFunc: func(_, obj any) { onClaim(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if claim, ok := obj.(*extensionsv1beta1.SandboxClaim); ok {
				life.mark(life.deleted, claim.Name, time.Now())
			}
		},
	}); err != nil {
		b.Fatal(err)
	}
	stopInformer := make(chan struct{})
	factory.Start(stopInformer)
	defer func() { close(stopInformer); factory.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		b.Fatal("claim informer did not sync")
	}

	// Creates run at the rate whatever the server does; at most maxInFlight wait at once, and a
	// create that cannot start then is late, which its latency shows.
	const maxInFlight = 512
	total := int(rate * duration.Seconds())
	var creates sync.WaitGroup
	var errMu sync.Mutex
	sem := make(chan struct{}, maxInFlight)
	mainBefore, oursBefore := c.bothWrites(ctx, b)
	cpuBefore := c.readPlaneCPU()
	first := time.Now()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	for i := range total {
		<-tick.C
		name := fmt.Sprintf("churn-%06d", i)
		creates.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			life.mark(life.created, name, time.Now())
			claim := &extensionsv1beta1.SandboxClaim{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       extensionsv1beta1.SandboxClaimSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: "agent"}},
			}
			if _, err := claims.Create(ctx, claim, metav1.CreateOptions{}); err != nil {
				errMu.Lock()
				res.CreateErrors++
				if res.CreateErrors <= 5 {
					b.Logf("creating claim %s: %v", name, err)
				}
				errMu.Unlock()
			}
		})
	}
	tick.Stop()
	creates.Wait()
	loadEnd := time.Now()
	b.Logf("churn: %d creates issued in %s", total, loadEnd.Sub(first).Round(time.Millisecond))

	// Every claim Ready, or 60 s past the last create for those that are not.
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		created, ready, _ := life.counts()
		return ready >= created-res.CreateErrors, nil
	})
	// The deletes of the Ready claims are issued a hold time after each; the claims still not
	// Ready are deleted now. Then the namespace must hold only the pool's members again.
	life.mu.Lock()
	life.closing = true
	for name := range life.created {
		if !life.deleting[name] {
			life.deleting[name] = true
			deletes.Add(1)
			go deleteClaim(name)
		}
	}
	life.mu.Unlock()
	deletes.Wait()
	lastDeleteMu.Lock()
	cleanupFrom := lastDelete
	lastDeleteMu.Unlock()
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		res.LeftBehindClaims, res.LeftBehindSandboxes, res.LeftBehindPods = c.leftBehind(ctx, b, ns, poolSize)
		return res.LeftBehindClaims+res.LeftBehindSandboxes+res.LeftBehindPods == 0, nil
	})
	res.CleanupMs = ms(time.Since(cleanupFrom))
	res.CPUMsPerClaim = cpuPerOp(cpuBefore, c.readPlaneCPU(), total)
	mainAfter, oursAfter := c.bothWrites(ctx, b)
	res.MainWrites, res.OurWrites = mainAfter.minus(mainBefore).workload(), oursAfter.minus(oursBefore).workload()
	if err != nil {
		b.Logf("churn: left behind after %s: %d claims, %d sandboxes, %d pods", time.Since(cleanupFrom).Round(time.Second),
			res.LeftBehindClaims, res.LeftBehindSandboxes, res.LeftBehindPods)
	}
	b.Logf("churn: cleanup took %s after the last delete", time.Duration(res.CleanupMs*float64(time.Millisecond)).Round(time.Millisecond))

	// The memory a while after the load: the run's last samples.
	settled := time.NewTimer(settle)
	select {
	case <-settled.C:
	case <-ctx.Done():
	}
	stopSampler()
	samplerDone.Wait()
	sampleNow()
	if err := srv.heapTop(ctx, c.outFile("churn-heap.txt"), 40); err != nil {
		b.Logf("heap profile: %v", err)
	}

	res.summarize(life, first)
	fmt.Printf("\nChurn on %s (%d CPUs): %.0f claims/s for %s, hold %s, pool %d\n", res.Machine.CPUModel, res.Machine.NumCPU, rate, duration, hold, poolSize)
	fmt.Printf("  claims: %d created (%d errors), %d Ready, %d deleted\n", res.Created, res.CreateErrors, res.Ready, res.Deleted)
	fmt.Printf("  watcher create->Ready: p50 %.0f ms, p99 %.0f ms, max %.0f ms; not Ready within 5 s: %d, within 60 s: %d\n",
		res.WatchP50Ms, res.WatchP99Ms, res.WatchMaxMs, res.NotReadyIn5s, res.NotReadyIn60s)
	fmt.Printf("  left behind: %d claims, %d sandboxes, %d pods; only the pool left %.1f s after the last delete\n",
		res.LeftBehindClaims, res.LeftBehindSandboxes, res.LeftBehindPods, res.CleanupMs/1000)
	fmt.Printf("  sandbox-apiserver RSS: %.0f MiB at the start, peak %.0f MiB, %.0f MiB %s after the load (heap in use %.0f MiB)\n",
		res.RSSStartMiB, res.RSSPeakMiB, res.RSSAfterMiB, settle, res.HeapAfterMiB)
	fmt.Printf("  CPU per claim: %s\n", formatCPUPerOp(res.CPUMsPerClaim))
	fmt.Printf("  main writes: %v\n  our writes: %v\n", res.MainWrites, res.OurWrites)
	fmt.Printf("  %8s %10s %10s %10s\n", "window", "created/s", "Ready/s", "deleted/s")
	for _, w := range res.Windows {
		fmt.Printf("  %7.0fs %10.1f %10.1f %10.1f\n", w.StartS, w.CreatedPerS, w.ReadyPerS, w.DeletedPerS)
	}
	if err := writeJSON(c.outFile("churn.json"), res); err != nil {
		b.Fatal(err)
	}
}

// summarize fills the latencies, the per-window rates and the memory figures.
func (r *ChurnResult) summarize(life *claimLife, first time.Time) {
	life.mu.Lock()
	defer life.mu.Unlock()
	r.Created, r.Ready, r.Deleted = len(life.created), len(life.ready), len(life.deleted)
	var lat []time.Duration
	never := time.Duration(1<<63 - 1)
	for name, created := range life.created {
		ready, ok := life.ready[name]
		switch {
		case !ok:
			lat = append(lat, never)
		default:
			lat = append(lat, ready.Sub(created))
		}
	}
	slices.Sort(lat)
	for _, d := range lat {
		if d > 5*time.Second {
			r.NotReadyIn5s++
		}
		if d > 60*time.Second {
			r.NotReadyIn60s++
		}
	}
	capped := func(d time.Duration) float64 {
		if d == never {
			return -1
		}
		return ms(d)
	}
	if len(lat) > 0 {
		r.WatchP50Ms, r.WatchP99Ms, r.WatchMaxMs = capped(percentile(lat, 50)), capped(percentile(lat, 99)), capped(lat[len(lat)-1])
	}

	const window = 10 * time.Second
	bucket := func(m map[string]time.Time, field func(*churnWindow) *float64) {
		for _, t := range m {
			i := int(t.Sub(first) / window)
			if i < 0 {
				continue
			}
			for len(r.Windows) <= i {
				r.Windows = append(r.Windows, churnWindow{StartS: float64(len(r.Windows)) * window.Seconds()})
			}
			*field(&r.Windows[i]) += 1 / window.Seconds()
		}
	}
	bucket(life.created, func(w *churnWindow) *float64 { return &w.CreatedPerS })
	bucket(life.ready, func(w *churnWindow) *float64 { return &w.ReadyPerS })
	bucket(life.deleted, func(w *churnWindow) *float64 { return &w.DeletedPerS })

	if len(r.Memory) > 0 {
		r.RSSStartMiB = r.Memory[0].RSSMiB
		last := r.Memory[len(r.Memory)-1]
		r.RSSAfterMiB, r.HeapAfterMiB = last.RSSMiB, last.HeapInuseMiB
		for _, s := range r.Memory {
			r.RSSPeakMiB = max(r.RSSPeakMiB, s.RSSMiB)
		}
	}
}

// leftBehind counts what in ns is not the pool's: claims, sandboxes beyond the pool's members,
// and sandbox pods beyond one per member.
func (c *cluster) leftBehind(ctx context.Context, b *testing.B, ns string, poolSize int) (claims, sandboxes, pods int) {
	cl, err := c.sandbox.ExtensionsV1beta1().SandboxClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Logf("listing claims: %v", err)
		return -1, -1, -1
	}
	sb, err := c.sandbox.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Logf("listing sandboxes: %v", err)
		return -1, -1, -1
	}
	po, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: agentsv1beta1.SandboxNameHashLabel})
	if err != nil {
		b.Logf("listing pods: %v", err)
		return -1, -1, -1
	}
	return len(cl.Items), max(0, len(sb.Items)-poolSize), max(0, len(po.Items)-poolSize)
}

// makePool creates the template "agent" and a warm pool "pool" of size members in ns, waits until
// they are all Ready and the plane has settled.
func (c *cluster) makePool(ctx context.Context, b *testing.B, ns string, size int) {
	template := &extensionsv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "agent"},
		Spec: extensionsv1beta1.SandboxTemplateSpec{PodTemplate: agentsv1beta1.PodTemplate{Spec: onKwok(corev1.PodSpec{
			Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/example/agent:latest"}},
		})}},
	}
	if _, err := c.sandbox.ExtensionsV1beta1().SandboxTemplates(ns).Create(ctx, template, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if size == 0 {
		return
	}
	pool := &extensionsv1beta1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: "pool"},
		Spec:       extensionsv1beta1.SandboxWarmPoolSpec{Replicas: ptr.To(int32(size)), TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: "agent"}},
	}
	if _, err := c.sandbox.ExtensionsV1beta1().SandboxWarmPools(ns).Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.sandbox.ExtensionsV1beta1().SandboxWarmPools(ns).Get(ctx, "pool", metav1.GetOptions{})
		return err == nil && p.Status.ReadyReplicas == int32(size), nil
	}); err != nil {
		b.Fatalf("pool of %d not Ready: %v", size, err)
	}
	b.Logf("%s: pool of %d Ready in %s", ns, size, time.Since(start).Round(time.Millisecond))
	c.waitSettled(ctx, b)
}
