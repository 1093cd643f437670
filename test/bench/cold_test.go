// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/informers/externalversions"
)

// ColdResult is the content of _output/bench/cold.json.
type ColdResult struct {
	Machine    Machine `json:"machine"`
	Sandboxes  int     `json:"sandboxes"`
	Clients    int     `json:"clients"`
	AllReadyMs float64 `json:"allReadyMs"`
	// From the start of a Sandbox's create request to the watch seeing it Ready=True.
	ReadyP50Ms float64 `json:"createToReadyP50Ms"`
	ReadyP99Ms float64 `json:"createToReadyP99Ms"`
	// From a watch seeing the Sandbox to a watch seeing its Pod: the controller's own overhead.
	PodCreateP50Ms float64 `json:"sandboxToPodP50Ms"`
	PodCreateP99Ms float64 `json:"sandboxToPodP99Ms"`
	// MainWritesPerSandbox counts the controller's own writes to the main API (pods, services,
	// PVCs); MainAllWritesPerSandbox every workload write there, as issue 13 counts them: those,
	// events, and the scheduler's bindings and kwok's pod status writes (the kubelet's share).
	MainWritesPerSandbox    float64     `json:"mainAPIWritesPerSandbox"`
	MainAllWritesPerSandbox float64     `json:"mainAPIAllWritesPerSandbox"`
	OurWritesPerSandbox     float64     `json:"ourAPIWritesPerSandbox"`
	MainWrites              writeCounts `json:"mainAPIWrites"`
	OurWrites               writeCounts `json:"ourAPIWrites"`
	// CPUMsPerSandbox is the CPU each process of the plane spent per Sandbox, from the first
	// create until all were Ready.
	CPUMsPerSandbox map[string]float64 `json:"cpuMsPerSandbox"`
	Note            string             `json:"note"`
}

// BenchmarkColdStart creates SANDBOX_BENCH_COLD_SANDBOXES Sandboxes (default 300, as issue 13
// measures) at once from 16 clients on the local control plane and measures how long they take to
// be Ready, and how long the controller takes to make their pods.
func BenchmarkColdStart(b *testing.B) {
	const clients = 16
	sandboxes := int(envFloats(b, "SANDBOX_BENCH_COLD_SANDBOXES", []float64{300})[0])
	c := connect(b)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	ns := c.namespace(b, "cold")
	res := ColdResult{Machine: machine(), Sandboxes: sandboxes, Clients: clients,
		Note: "mainAPIWritesPerSandbox leaves out pod status writes by kwok (the kubelet's share), bindings (the scheduler's) " +
			"and events; mainAPIAllWritesPerSandbox counts them all"}

	// Informers rather than bare watches: under this load a watch may be closed and must resume.
	var mu sync.Mutex
	podSeen := map[string]time.Time{}
	sandboxSeen := map[string]time.Time{}
	readyAt := &readyTimes{at: map[string]time.Time{}}
	firstSeen := func(m map[string]time.Time, name string) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if _, ok := m[name]; !ok {
			m[name] = now
		}
	}
	kubeFactory := informers.NewSharedInformerFactoryWithOptions(c.kube, 0, informers.WithNamespace(ns))
	podInformer := kubeFactory.Core().V1().Pods().Informer()
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		firstSeen(podSeen, obj.(*corev1.Pod).Name)
	}}); err != nil {
		b.Fatal(err)
	}
	ourFactory := externalversions.NewSharedInformerFactoryWithOptions(c.sandbox, 0, externalversions.WithNamespace(ns))
	sbInformer := ourFactory.Agents().V1beta1().Sandboxes().Informer()
	onSandbox := func(obj any) {
		sb := obj.(*agentsv1beta1.Sandbox)
		firstSeen(sandboxSeen, sb.Name)
		if meta.IsStatusConditionTrue(sb.Status.Conditions, "Ready") {
			readyAt.see(sb.Name, time.Now())
		}
	}
	if _, err := sbInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onSandbox, UpdateFunc: func(_, obj any) { onSandbox(obj) },
	}); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	kubeFactory.Start(stop)
	ourFactory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced, sbInformer.HasSynced) {
		b.Fatal("informers did not sync")
	}

	mainBefore, oursBefore := c.bothWrites(ctx, b)
	startAt := make([]time.Time, sandboxes)
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, sandboxes)
	cpuBefore := c.readPlaneCPU()
	first := time.Now()
	for range clients {
		wg.Go(func() {
			for i := range next {
				sb := &agentsv1beta1.Sandbox{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cold-%04d", i)},
					Spec: agentsv1beta1.SandboxSpec{PodTemplate: agentsv1beta1.PodTemplate{Spec: onKwok(corev1.PodSpec{
						Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/example/agent:latest"}},
					})}},
				}
				startAt[i] = time.Now()
				if _, err := c.sandbox.AgentsV1beta1().Sandboxes(ns).Create(ctx, sb, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range sandboxes {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("creating a sandbox: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
		return readyAt.len() == sandboxes, nil
	}); err != nil {
		b.Fatalf("%d of %d sandboxes Ready: %v", readyAt.len(), sandboxes, err)
	}
	res.CPUMsPerSandbox = cpuPerOp(cpuBefore, c.readPlaneCPU(), sandboxes)

	var ready, toPod []time.Duration
	last := first
	for i := range sandboxes {
		name := fmt.Sprintf("cold-%04d", i)
		t := readyAt.get(name)
		ready = append(ready, t.Sub(startAt[i]))
		if t.After(last) {
			last = t
		}
		mu.Lock()
		seen, podOK := podSeen[name]
		created, sbOK := sandboxSeen[name]
		mu.Unlock()
		if !podOK || !sbOK {
			b.Fatalf("the watches missed sandbox %s or its pod", name)
		}
		toPod = append(toPod, seen.Sub(created))
	}
	sort.Slice(ready, func(i, j int) bool { return ready[i] < ready[j] })
	sort.Slice(toPod, func(i, j int) bool { return toPod[i] < toPod[j] })
	res.AllReadyMs = ms(last.Sub(first))
	res.ReadyP50Ms, res.ReadyP99Ms = ms(percentile(ready, 50)), ms(percentile(ready, 99))
	res.PodCreateP50Ms, res.PodCreateP99Ms = ms(percentile(toPod, 50)), ms(percentile(toPod, 99))

	mainAfter, oursAfter := c.bothWrites(ctx, b)
	res.MainWrites = mainAfter.minus(mainBefore).workload()
	res.OurWrites = oursAfter.minus(oursBefore).workload()
	// Pod status (kwok, the kubelet's share) and bindings (the scheduler's) are not the controller's.
	res.MainWritesPerSandbox = (res.MainWrites.sum("pods", "services", "persistentvolumeclaims") -
		res.MainWrites["pods/status PATCH"] - res.MainWrites["pods/status PUT"] - res.MainWrites["pods/binding POST"]) / float64(sandboxes)
	res.MainAllWritesPerSandbox = res.MainWrites.sum() / float64(sandboxes)
	res.OurWritesPerSandbox = res.OurWrites.sum("sandboxes") / float64(sandboxes)

	fmt.Printf("\nCold start of %d Sandboxes from %d clients on %s (%d CPUs)\n", sandboxes, clients, res.Machine.CPUModel, res.Machine.NumCPU)
	fmt.Printf("all Ready %.0f ms; create->Ready p50 %.1f ms p99 %.1f ms; sandbox->pod p50 %.1f ms p99 %.1f ms; writes per sandbox: main %.2f by the controller, %.2f in all; ours %.2f\n",
		res.AllReadyMs, res.ReadyP50Ms, res.ReadyP99Ms, res.PodCreateP50Ms, res.PodCreateP99Ms, res.MainWritesPerSandbox, res.MainAllWritesPerSandbox, res.OurWritesPerSandbox)
	b.Logf("main writes %v", res.MainWrites)
	b.Logf("our writes %v", res.OurWrites)
	fmt.Printf("CPU per sandbox: %s\n", formatCPUPerOp(res.CPUMsPerSandbox))
	if err := writeJSON(c.outFile("cold.json"), res); err != nil {
		b.Fatal(err)
	}
}
