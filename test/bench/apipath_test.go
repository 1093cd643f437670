// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
)

// listRepeats is how many times each full list is taken; the figures are their median.
const listRepeats = 5

// APIPathResult is the content of _output/bench/apipath.json.
type APIPathResult struct {
	Machine Machine `json:"machine"`
	CreateFigures
	CreatesRetried int `json:"createsRetriedByTheClient"`
	// CPUMsPerCreate is the CPU each process of the plane spent per create while they ran.
	CPUMsPerCreate   map[string]float64 `json:"cpuMsPerCreate"`
	ListPageSize     int                `json:"listPageSize"`
	ListPages        int                `json:"listPages"`
	ListJSONSeconds  float64            `json:"listJSONSeconds"`
	ListJSONRuns     []float64          `json:"listJSONRunsSeconds"`
	ListProtoSeconds float64            `json:"listProtobufSeconds"`
	ListProtoRuns    []float64          `json:"listProtobufRunsSeconds"`
	// CPUMsPerJSONList and CPUMsPerProtoList are the CPU each process spent on one full list.
	CPUMsPerJSONList  map[string]float64 `json:"cpuMsPerJSONList"`
	CPUMsPerProtoList map[string]float64 `json:"cpuMsPerProtobufList"`
	LoadAverage       string             `json:"loadAverage"`
	Note              string             `json:"note"`
}

// BenchmarkAPIPath measures the path every client of the cluster takes: through kube-apiserver
// and its aggregator to sandbox-apiserver. 5,000 Sandboxes of 2.4 KiB are created by 32 clients
// (as protobuf), then all of them are listed in pages of 500, as JSON and as protobuf. The
// Sandboxes ask for no Pod and no Service, so the controllers make no children: the figures are
// the API path alone, not the cluster's work for the Sandboxes.
func BenchmarkAPIPath(b *testing.B) {
	c := connect(b)
	ns := c.namespace(b, "apipath")
	protoClient := clientWith(b, c.config, runtime.ContentTypeProtobuf)
	jsonClient := clientWith(b, c.config, runtime.ContentTypeJSON)
	// The creates go as protobuf, as client-go's clients of our kinds send them, unless the run
	// asks for JSON alone (hack/bench-compare.sh: commits before protobuf serve only JSON); the
	// protobuf lists are then left out too.
	jsonOnly := os.Getenv("SANDBOX_BENCH_CONTENT_TYPE") == runtime.ContentTypeJSON
	createClient := protoClient
	if jsonOnly {
		createClient = jsonClient
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()

	noChildren := func(sb *agentsv1beta1.Sandbox) {
		sb.Spec.Replicas = ptr.To[int32](0)
		sb.Spec.Service = ptr.To(false)
	}
	sample := benchSandbox(ns, 0)
	noChildren(sample)
	size, err := json.Marshal(sample)
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	cpuBefore := c.readPlaneCPU()
	latencies, createWall, retried, err := createAll(ctx, createClient, ns, noChildren)
	if err != nil {
		b.Fatal(err)
	}
	cpuPerCreate := cpuPerOp(cpuBefore, c.readPlaneCPU(), objects)
	// The controller writes each new Sandbox's first status after its create; lists taken while
	// those 5,000 writes drain measure that backlog more than the list.
	c.waitSettled(ctx, b)
	var jsonRuns, protoRuns []float64
	pages := 0
	// CPU each process spent on the lists of each encoding, summed over the repeats.
	jsonCPU, protoCPU := planeCPU{}, planeCPU{}
	lists := []struct {
		client versioned.Interface
		into   *[]float64
		cpu    planeCPU
	}{{jsonClient, &jsonRuns, jsonCPU}, {protoClient, &protoRuns, protoCPU}}
	if jsonOnly {
		lists = lists[:1]
	}
	for range listRepeats {
		for _, run := range lists {
			before := c.readPlaneCPU()
			wall, n, items, err := listAll(ctx, run.client, ns)
			if err != nil {
				b.Fatal(err)
			}
			for name, ms := range cpuPerOp(before, c.readPlaneCPU(), 1) {
				run.cpu[name] += ms
			}
			if items != objects {
				b.Fatalf("the paginated list returned %d sandboxes, want %d", items, objects)
			}
			pages = n
			*run.into = append(*run.into, wall.Seconds())
		}
	}
	b.StopTimer()
	for _, cpu := range []planeCPU{jsonCPU, protoCPU} {
		for name := range cpu {
			cpu[name] = round2(cpu[name] / listRepeats)
		}
	}

	res := APIPathResult{
		Machine:           machine(),
		CreateFigures:     createFigures(latencies, createWall, len(size)),
		CreatesRetried:    retried,
		CPUMsPerCreate:    cpuPerCreate,
		ListPageSize:      pageSize,
		ListPages:         pages,
		ListJSONSeconds:   median(jsonRuns),
		ListJSONRuns:      jsonRuns,
		ListProtoSeconds:  median(protoRuns),
		ListProtoRuns:     protoRuns,
		CPUMsPerJSONList:  jsonCPU,
		CPUMsPerProtoList: protoCPU,
		LoadAverage:       loadAverage(),
		Note: "through kube-apiserver on the local plane; Sandboxes at replicas 0 without a Service, so no " +
			"children are made; lists start once the controller's status writes are done, and are the median of " +
			fmt.Sprint(listRepeats) + " runs each, alternating JSON and protobuf",
	}
	b.ReportMetric(res.CreatesPerSecond, "creates/s")
	b.ReportMetric(res.CreateLatencyP99Ms, "p99-ms")
	b.ReportMetric(res.ListJSONSeconds, "list-json-s")
	b.ReportMetric(res.ListProtoSeconds, "list-proto-s")

	fmt.Println("\nAPI path through kube-apiserver")
	fmt.Printf("  %-18s %d Sandboxes of %d B JSON from %d concurrent clients\n", "objects x clients", res.Objects, res.ObjectBytes, res.Clients)
	fmt.Printf("  %-18s %.1f /s; p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", "creates", res.CreatesPerSecond, res.CreateLatencyP50Ms, res.CreateLatencyP99Ms, res.CreateLatencyMaxMs)
	fmt.Printf("  %-18s %s\n", "CPU per create", formatCPUPerOp(res.CPUMsPerCreate))
	fmt.Printf("  %-18s %d creates found their own retried first attempt stored\n", "client retries", res.CreatesRetried)
	fmt.Printf("  %-18s JSON %.3f s %v; protobuf %.3f s %v (%d pages of %d)\n", "full list", res.ListJSONSeconds, jsonRuns, res.ListProtoSeconds, protoRuns, res.ListPages, res.ListPageSize)
	fmt.Printf("  %-18s JSON: %s\n  %-18s protobuf: %s\n", "CPU per list", formatCPUPerOp(res.CPUMsPerJSONList), "", formatCPUPerOp(res.CPUMsPerProtoList))
	fmt.Printf("  %-18s %s\n", "load average", res.LoadAverage)
	out := c.outFile("apipath.json")
	if err := writeJSON(out, res); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("wrote %s\n", out)
}

// clientWith is a clientset of cfg that sends and accepts only mediaType.
func clientWith(b *testing.B, cfg *rest.Config, mediaType string) versioned.Interface {
	b.Helper()
	cfg = rest.CopyConfig(cfg)
	// The clients share one HTTP/2 connection; client-side rate limiting must not be measured.
	cfg.QPS, cfg.Burst = 1e6, 1e6
	cfg.ContentType, cfg.AcceptContentTypes = mediaType, mediaType
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// median is the middle of v, 0 when v is empty (a list not taken).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
