// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// wakeRounds is how many times the sandbox is suspended and woken by a request.
const wakeRounds = 20

// WakeResult is the content of _output/bench/wake.json.
type WakeResult struct {
	Machine Machine `json:"machine"`
	Rounds  int     `json:"rounds"`
	// From sending a request to a suspended sandbox through kube-apiserver until its answer.
	P50Ms   float64 `json:"p50Ms"`
	P99Ms   float64 `json:"p99Ms"`
	MaxMs   float64 `json:"maxMs"`
	Errors  int     `json:"errors"`
	LoadAvg string  `json:"loadAverageAtStart"`
	Note    string  `json:"note"`
}

// BenchmarkWake measures the time from a request through sandboxes/proxy to a suspended sandbox
// until its answer: the resume write, the controller making the pod, kwok reporting it Ready, the
// status write, and the proxied request itself.
func BenchmarkWake(b *testing.B) {
	c := connect(b)
	ns := c.namespace(b, "wake")
	backend, port := c.kwokServer(b, ns, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer backend.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	sandboxes := c.sandbox.AgentsV1beta1().Sandboxes(ns)
	sb := &agentsv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "sleepy"},
		Spec: agentsv1beta1.SandboxSpec{Replicas: ptr.To[int32](0), PodTemplate: agentsv1beta1.PodTemplate{Spec: onKwok(corev1.PodSpec{
			HostNetwork: true,
			Containers: []corev1.Container{{Name: "agent", Image: "ghcr.io/example/agent:latest",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}},
		})}},
	}
	if _, err := sandboxes.Create(ctx, sb, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.plane, "kubeconfig"))
	if err != nil {
		b.Fatal(err)
	}
	transport, err := restclient.TransportFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: transport, Timeout: time.Minute}
	url := cfg.Host + "/apis/agents.x-k8s.io/v1beta1/namespaces/" + ns + "/sandboxes/" + sb.Name + "/proxy/"

	res := WakeResult{Machine: machine(), Rounds: wakeRounds, LoadAvg: loadAverage(),
		Note: "one machine runs kube-apiserver, etcd, kwok, kube-scheduler, sandbox-apiserver, the HTTP server and the client; " +
			"kwok marks a pod Ready as soon as it is bound, so this is the control plane's share of a wake, without image pull or container start"}
	var took []time.Duration
	for round := range wakeRounds {
		if round > 0 {
			if _, err := c.sandbox.AgentsV1beta1().Sandboxes(ns).Patch(ctx, sb.Name, "application/merge-patch+json",
				[]byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		waitSuspended(ctx, b, c, ns, sb.Name)
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			res.Errors++
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			res.Errors++
			b.Logf("round %d: %d %s", round, resp.StatusCode, body)
			continue
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	if len(took) > 0 {
		res.P50Ms, res.P99Ms, res.MaxMs = ms(percentile(took, 50)), ms(percentile(took, 99)), ms(took[len(took)-1])
	}
	fmt.Printf("\nwake through sandboxes/proxy on %s (%d CPUs), load %s: %d rounds, p50 %.1f ms, p99 %.1f ms, max %.1f ms, %d errors\n",
		res.Machine.CPUModel, res.Machine.NumCPU, res.LoadAvg, wakeRounds, res.P50Ms, res.P99Ms, res.MaxMs, res.Errors)
	if err := writeJSON(c.outFile("wake.json"), res); err != nil {
		b.Fatal(err)
	}
}

// waitSuspended watches the sandbox until its pod is gone (Suspended=True).
func waitSuspended(ctx context.Context, b *testing.B, c *cluster, ns, name string) {
	b.Helper()
	sandboxes := c.sandbox.AgentsV1beta1().Sandboxes(ns)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	list, err := sandboxes.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		b.Fatal(err)
	}
	if len(list.Items) == 1 && meta.IsStatusConditionTrue(list.Items[0].Status.Conditions, "Suspended") {
		return
	}
	w, err := sandboxes.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: list.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if got, ok := ev.Object.(*agentsv1beta1.Sandbox); ok && ev.Type != watch.Deleted && meta.IsStatusConditionTrue(got.Status.Conditions, "Suspended") {
			return
		}
	}
	b.Fatalf("sandbox %s/%s not suspended: %v", ns, name, ctx.Err())
}
