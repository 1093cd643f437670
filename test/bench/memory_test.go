// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// MemoryResult is the content of _output/bench/memory.json.
type MemoryResult struct {
	Machine   Machine `json:"machine"`
	Sandboxes int     `json:"sandboxes"`
	Claims    int     `json:"claims"`
	Pods      int     `json:"pods"`
	// Before is the server before the objects are made; Loaded once they all are and the plane
	// has settled; AfterGC right after the heap profile's forced garbage collection.
	Before  memorySample `json:"before"`
	Loaded  memorySample `json:"loaded"`
	AfterGC memorySample `json:"afterGC"`
	Note    string       `json:"note"`
}

// BenchmarkMemory fills the local plane's sandbox-apiserver with 5,000 Sandboxes: 4,000 suspended
// ones with the realistic pod template of BenchmarkAPI, and 1,000 made for as many claims, each
// with its pod. It reports the server's RSS and Go heap and keeps the top of a heap profile in
// _output/bench/memory-heap.txt.
func BenchmarkMemory(b *testing.B) {
	const suspended, claims, clients = 4000, 1000, 32
	c := connect(b)
	srv := c.ourServer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	ns := c.namespace(b, "memory")
	res := MemoryResult{Machine: machine(),
		Note: "local control plane and the load generator on one machine; RSS of the sandbox-apiserver process from /proc, heap from its go_memstats metrics"}
	start := time.Now()
	var err error
	if res.Before, err = srv.sample(ctx, start); err != nil {
		b.Fatal(err)
	}
	c.makePool(ctx, b, ns, 0)

	// Clients take indexes from one channel; a create is retried a few times (under this load the
	// server may answer 503 for a moment while its etcd is slow), then its error stops the run.
	run := func(n int, do func(i int) error) {
		next := make(chan int)
		errs := make(chan error, clients)
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for i := range next {
					err := retry.OnError(wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 6},
						func(err error) bool { return !apierrors.IsAlreadyExists(err) }, func() error { return do(i) })
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	feed:
		for i := range n {
			select {
			case next <- i:
			case err := <-errs:
				b.Error(err)
				break feed
			}
		}
		close(next)
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		if b.Failed() {
			b.FailNow()
		}
	}
	sandboxes := c.sandbox.AgentsV1beta1().Sandboxes(ns)
	run(suspended, func(i int) error {
		sb := benchSandbox(ns, i)
		sb.Spec.Replicas = ptr.To(int32(0))
		sb.Spec.Service = nil
		_, err := sandboxes.Create(ctx, sb, metav1.CreateOptions{})
		return ignoreExists(err)
	})
	b.Logf("memory: %d suspended sandboxes in %s", suspended, time.Since(start).Round(time.Millisecond))
	claimClient := c.sandbox.ExtensionsV1beta1().SandboxClaims(ns)
	run(claims, func(i int) error {
		_, err := claimClient.Create(ctx, &extensionsv1beta1.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("claim-%04d", i)},
			Spec:       extensionsv1beta1.SandboxClaimSpec{TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: "agent"}},
		}, metav1.CreateOptions{})
		return ignoreExists(err)
	})
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := claimClient.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, cl := range list.Items {
			if meta.IsStatusConditionTrue(cl.Status.Conditions, "Ready") {
				ready++
			}
		}
		return ready == claims, nil
	}); err != nil {
		b.Fatalf("claims not all Ready: %v", err)
	}
	b.Logf("memory: %d claims Ready after %s", claims, time.Since(start).Round(time.Millisecond))
	c.waitSettled(ctx, b)

	sbList, err := sandboxes.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		b.Fatal(err)
	}
	pods, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		b.Fatal(err)
	}
	res.Sandboxes, res.Claims, res.Pods = len(sbList.Items), claims, len(pods.Items)
	if res.Loaded, err = srv.sample(ctx, start); err != nil {
		b.Fatal(err)
	}
	if err := srv.heapTop(ctx, c.outFile("memory-heap.txt"), 40); err != nil {
		b.Fatal(err)
	}
	if res.AfterGC, err = srv.sample(ctx, start); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("\nsandbox-apiserver memory on %s (%d CPUs), holding %d Sandboxes, %d claims, %d pods\n",
		res.Machine.CPUModel, res.Machine.NumCPU, res.Sandboxes, res.Claims, res.Pods)
	for _, s := range []struct {
		name string
		m    memorySample
	}{{"before", res.Before}, {"loaded", res.Loaded}, {"after GC", res.AfterGC}} {
		fmt.Printf("  %-9s RSS %6.0f MiB (files %3.0f), heap live %6.0f MiB, in use %6.0f MiB, idle not released %6.0f MiB, %5.0f goroutines\n",
			s.name, s.m.RSSMiB, s.m.RSSFileMiB, s.m.HeapLiveMiB, s.m.HeapInuseMiB, s.m.HeapIdleMiB-s.m.HeapReleasedMiB, s.m.Goroutines)
	}
	limit := "none"
	if res.Loaded.LimitMiB > 0 {
		limit = fmt.Sprintf("%.0f MiB", res.Loaded.LimitMiB)
	}
	gc, user := res.Loaded.GCCPUSeconds-res.Before.GCCPUSeconds, res.Loaded.UserCPUSeconds-res.Before.UserCPUSeconds
	fmt.Printf("  Go memory limit %s; while loading, garbage collection took %.0f s of CPU, %.0f%% of the server's %.0f s\n",
		limit, gc, 100*gc/max(gc+user, 1e-9), gc+user)
	fmt.Println("  heap profile top:", c.outFile("memory-heap.txt"))
	if err := writeJSON(c.outFile("memory.json"), res); err != nil {
		b.Fatal(err)
	}
}

// ignoreExists passes a create whose earlier attempt, retried by client-go after a 429 or 503
// with Retry-After, was stored after all.
func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
