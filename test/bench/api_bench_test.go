// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package bench measures the API server in-process: create throughput and latency under
// concurrent clients, full paginated lists, and the process's peak memory. Results are printed
// and written to _output/bench/ as JSON; they never pass or fail on a time threshold.
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

const (
	objects   = 5000
	clients   = 32
	pageSize  = 500
	namespace = "bench"
	// runTimeout bounds the whole measurement; on a slow machine it fails rather than hangs.
	runTimeout = 10 * time.Minute
)

// Machine describes where the figures were taken.
type Machine struct {
	NumCPU      int    `json:"numCPU"`
	GOOS        string `json:"goos"`
	GOARCH      string `json:"goarch"`
	CPUModel    string `json:"cpuModel"`
	MemTotalMiB int64  `json:"memTotalMiB"`
	GoVersion   string `json:"goVersion"`
}

// CreateFigures are the figures of createAll's run: objects Sandboxes of objectBytes from clients
// concurrent clients. Embedded, its fields stay at the top level of the JSON.
type CreateFigures struct {
	Objects            int     `json:"objects"`
	Clients            int     `json:"clients"`
	ObjectBytes        int     `json:"objectBytes"`
	CreateSeconds      float64 `json:"createSeconds"`
	CreatesPerSecond   float64 `json:"createsPerSecond"`
	CreateLatencyP50Ms float64 `json:"createLatencyP50Ms"`
	CreateLatencyP99Ms float64 `json:"createLatencyP99Ms"`
	CreateLatencyMaxMs float64 `json:"createLatencyMaxMs"`
}

// createFigures summarizes createAll's latencies (sorted here) and wall time.
func createFigures(latencies []time.Duration, wall time.Duration, objectBytes int) CreateFigures {
	slices.Sort(latencies)
	return CreateFigures{
		Objects:            objects,
		Clients:            clients,
		ObjectBytes:        objectBytes,
		CreateSeconds:      wall.Seconds(),
		CreatesPerSecond:   float64(objects) / wall.Seconds(),
		CreateLatencyP50Ms: ms(percentile(latencies, 50)),
		CreateLatencyP99Ms: ms(percentile(latencies, 99)),
		CreateLatencyMaxMs: ms(latencies[len(latencies)-1]),
	}
}

// Result is the content of _output/bench/api.json.
type Result struct {
	Machine Machine `json:"machine"`
	CreateFigures
	ListPageSize        int     `json:"listPageSize"`
	ListPages           int     `json:"listPages"`
	ListItems           int     `json:"listItems"`
	FullListMs          float64 `json:"fullListMs"`
	PeakRSSMiB          float64 `json:"peakRSSMiB"`
	PeakRSSIncludesLoad bool    `json:"peakRSSIncludesLoadGenerator"`
	Note                string  `json:"note"`
}

// BenchmarkAPI creates 5,000 Sandboxes with realistic pod templates from 32 concurrent clients,
// then lists them all in pages of 500. The server runs in this process, so the peak RSS covers the
// server, its embedded etcd and the load generator together.
func BenchmarkAPI(b *testing.B) {
	root, err := repoRoot()
	if err != nil {
		b.Fatal(err)
	}
	s := framework.StartServer(b, b.TempDir())
	cfg := rest.CopyConfig(s.Config)
	// The clients share one clientset (and one HTTP/2 connection); client-side rate limiting
	// must not be what is measured.
	cfg.QPS, cfg.Burst = 1e6, 1e6
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()

	size, err := json.Marshal(benchSandbox(namespace, 0))
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	latencies, createWall, _, err := createAll(ctx, client, namespace, nil)
	if err != nil {
		b.Fatal(err)
	}
	listWall, pages, items, err := listAll(ctx, client, namespace)
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if items != objects {
		b.Fatalf("the paginated list returned %d sandboxes, want %d", items, objects)
	}

	res := Result{
		Machine:             machine(),
		CreateFigures:       createFigures(latencies, createWall, len(size)),
		ListPageSize:        pageSize,
		ListPages:           pages,
		ListItems:           items,
		FullListMs:          ms(listWall),
		PeakRSSMiB:          peakRSSMiB(),
		PeakRSSIncludesLoad: true,
		Note: "in-process server with embedded etcd; peak RSS (VmHWM) is this test process's, so it includes " +
			"the load generator and the embedded etcd as well as the API server",
	}

	b.ReportMetric(res.CreatesPerSecond, "creates/s")
	b.ReportMetric(res.CreateLatencyP50Ms, "p50-ms")
	b.ReportMetric(res.CreateLatencyP99Ms, "p99-ms")
	b.ReportMetric(res.FullListMs, "list-ms")
	b.ReportMetric(res.PeakRSSMiB, "peak-RSS-MiB")

	printTable(res)
	out := filepath.Join(root, "_output", "bench", "api.json")
	if err := writeJSON(out, res); err != nil {
		b.Fatal(err)
	}
	fmt.Printf("wrote %s\n", out)
}

// createAll creates the Sandboxes in ns from clients goroutines and returns each create's latency
// and the wall time of the whole phase. change, when not nil, changes every Sandbox before its
// create. Any failed create is an error.
func createAll(ctx context.Context, client versioned.Interface, ns string, change func(*agentsv1beta1.Sandbox)) (latencies []time.Duration, wall time.Duration, retried int, err error) {
	latencies = make([]time.Duration, objects)
	work := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		failures int
	)
	sandboxes := client.AgentsV1beta1().Sandboxes(ns)
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				t0 := time.Now()
				sb := benchSandbox(ns, i)
				if change != nil {
					change(sb)
				}
				_, err := sandboxes.Create(ctx, sb, metav1.CreateOptions{})
				latencies[i] = time.Since(t0)
				// A create the client retried (after a 429 or a dropped connection) may find its
				// own first attempt stored.
				if apierrors.IsAlreadyExists(err) {
					mu.Lock()
					retried++
					mu.Unlock()
					err = nil
				}
				if err != nil {
					mu.Lock()
					failures++
					if len(errs) < 5 {
						errs = append(errs, fmt.Errorf("create %d: %w", i, err))
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range objects {
		select {
		case work <- i:
		case <-ctx.Done():
			close(work)
			wg.Wait()
			return nil, 0, 0, ctx.Err()
		}
	}
	close(work)
	wg.Wait()
	wall = time.Since(start)
	if failures > 0 {
		return nil, 0, 0, fmt.Errorf("%d of %d creates failed, first ones: %w", failures, objects, errors.Join(errs...))
	}
	return latencies, wall, retried, nil
}

// listAll lists every Sandbox of ns in pages and returns the wall time, the number of pages and of
// items.
func listAll(ctx context.Context, client versioned.Interface, ns string) (time.Duration, int, int, error) {
	sandboxes := client.AgentsV1beta1().Sandboxes(ns)
	opts := metav1.ListOptions{Limit: pageSize}
	pages, items := 0, 0
	start := time.Now()
	for {
		list, err := sandboxes.List(ctx, opts)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("list page %d: %w", pages+1, err)
		}
		pages++
		items += len(list.Items)
		if list.Continue == "" {
			return time.Since(start), pages, items, nil
		}
		if pages > objects/pageSize+1 {
			return 0, 0, 0, fmt.Errorf("pagination did not end after %d pages", pages)
		}
		opts.Continue = list.Continue
	}
}

// benchSandbox is a Sandbox of about 2 KiB of JSON: an agent with a sidecar and an init container,
// with environment, resources, probes, mounts and a restrictive security context, the shape of a
// real agent workload.
func benchSandbox(ns string, i int) *agentsv1beta1.Sandbox {
	security := &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](1000),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	resources := func(cpu, mem string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
		}
	}
	return &agentsv1beta1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("bench-%05d", i),
			Namespace:   ns,
			Labels:      map[string]string{"app.kubernetes.io/name": "agent", "team": "benchmark"},
			Annotations: map[string]string{"example.com/owner": "bench"},
		},
		Spec: agentsv1beta1.SandboxSpec{
			Service: ptr.To(true),
			PodTemplate: agentsv1beta1.PodTemplate{
				ObjectMeta: agentsv1beta1.PodMetadata{Labels: map[string]string{"app": "agent", "tier": "sandbox"}},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{
						Name:            "fetch-workspace",
						Image:           "registry.example.com/tools/git-sync:v4.2.1",
						Args:            []string{"--repo=https://git.example.com/agents/workspace.git", "--one-time", "--root=/workspace"},
						VolumeMounts:    []corev1.VolumeMount{{Name: "workspace", MountPath: "/workspace"}},
						Resources:       resources("50m", "64Mi"),
						SecurityContext: security,
					}},
					Containers: []corev1.Container{
						{
							Name:    "agent",
							Image:   "registry.example.com/agents/python-runtime:3.12.4",
							Command: []string{"python", "-m", "agent.server"},
							Args:    []string{"--port=8888", "--workspace=/workspace"},
							Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8888}},
							Env: []corev1.EnvVar{
								{Name: "AGENT_MODE", Value: "interactive"},
								{Name: "WORKSPACE", Value: "/workspace"},
								{Name: "LOG_LEVEL", Value: "info"},
								{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							},
							Resources: resources("500m", "1Gi"),
							ReadinessProbe: &corev1.Probe{
								ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
								PeriodSeconds: 5,
							},
							LivenessProbe: &corev1.Probe{
								ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8888)}},
								InitialDelaySeconds: 10,
								PeriodSeconds:       20,
							},
							VolumeMounts: []corev1.VolumeMount{
								{Name: "workspace", MountPath: "/workspace"},
								{Name: "tmp", MountPath: "/tmp"},
							},
							SecurityContext: security,
						},
						{
							Name:  "proxy",
							Image: "registry.example.com/net/egress-proxy:1.8.0",
							Args:  []string{"--listen=:3128", "--allow=pypi.org,files.pythonhosted.org"},
							Env:   []corev1.EnvVar{{Name: "PROXY_LOG", Value: "json"}},
							Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 3128}},
							ReadinessProbe: &corev1.Probe{
								ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("proxy")}},
							},
							Resources:       resources("100m", "128Mi"),
							VolumeMounts:    []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
							SecurityContext: security,
						},
					},
					Volumes: []corev1.Volume{
						{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("5Gi"))}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
					},
					RestartPolicy:                 corev1.RestartPolicyAlways,
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					AutomountServiceAccountToken:  ptr.To(false),
				},
			},
		},
	}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// peakRSSMiB is VmHWM of this process, in MiB, or 0 where /proc is not available.
func peakRSSMiB() float64 {
	kib := procField("/proc/self/status", "VmHWM")
	return float64(kib) / 1024
}

// procField returns the kB value of a "Name:   123 kB" line of a /proc file, or 0.
func procField(path, name string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || key != name {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0
		}
		v, _ := strconv.ParseInt(fields[0], 10, 64)
		return v
	}
	return 0
}

func machine() Machine {
	m := Machine{
		NumCPU:      runtime.NumCPU(),
		GOOS:        runtime.GOOS,
		GOARCH:      runtime.GOARCH,
		MemTotalMiB: procField("/proc/meminfo", "MemTotal") / 1024,
		GoVersion:   runtime.Version(),
		CPUModel:    "unknown",
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if key, value, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(key) == "model name" {
				m.CPUModel = strings.TrimSpace(value)
				break
			}
		}
	}
	return m
}

func printTable(r Result) {
	rows := [][2]string{
		{"machine", fmt.Sprintf("%d CPU %s, %s/%s, %d MiB RAM, %s", r.Machine.NumCPU, r.Machine.CPUModel, r.Machine.GOOS, r.Machine.GOARCH, r.Machine.MemTotalMiB, r.Machine.GoVersion)},
		{"objects x clients", fmt.Sprintf("%d Sandboxes of %d B JSON from %d concurrent clients", r.Objects, r.ObjectBytes, r.Clients)},
		{"creates", fmt.Sprintf("%.1f /s (%.2f s in all)", r.CreatesPerSecond, r.CreateSeconds)},
		{"create latency", fmt.Sprintf("p50 %.2f ms, p99 %.2f ms, max %.2f ms", r.CreateLatencyP50Ms, r.CreateLatencyP99Ms, r.CreateLatencyMaxMs)},
		{"full list", fmt.Sprintf("%.1f ms for %d items in %d pages of %d", r.FullListMs, r.ListItems, r.ListPages, r.ListPageSize)},
		{"peak RSS", fmt.Sprintf("%.1f MiB (VmHWM of the test process: server, embedded etcd and load generator)", r.PeakRSSMiB)},
	}
	fmt.Println("\nsandbox-apiserver API benchmark")
	for _, row := range rows {
		fmt.Printf("  %-18s %s\n", row[0], row[1])
	}
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute averages, to note how busy the machine was.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(data))
	return strings.Join(fields[:min(3, len(fields))], " ")
}
