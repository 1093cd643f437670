// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// realNodeImage is the sandbox image hack/local-up.sh imports into the real node's containerd.
const realNodeImage = "localhost/sandbox:local"

// FirstCommandRun is one series of time-to-first-command measurements.
type FirstCommandRun struct {
	Source string `json:"source"` // warm or cold, and the pool or template claimed from
	Runs   int    `json:"runs"`
	// From the start of the claim's create to the first byte of the first command's output, as
	// the SDK's caller sees it: Claim (create, watch until Ready), then Run.
	P50Ms float64 `json:"createToFirstOutputP50Ms"`
	P90Ms float64 `json:"createToFirstOutputP90Ms"`
	P99Ms float64 `json:"createToFirstOutputP99Ms"`
	MaxMs float64 `json:"createToFirstOutputMaxMs"`
	// The two parts: Claim returning Ready, and the exec from its request to the first output.
	ReadyP50Ms float64 `json:"createToReadyP50Ms"`
	ReadyP99Ms float64 `json:"createToReadyP99Ms"`
	ExecP50Ms  float64 `json:"execToFirstOutputP50Ms"`
	ExecP99Ms  float64 `json:"execToFirstOutputP99Ms"`
	// A second command right after the first: the exec path alone, once the sandbox is known.
	SecondExecP50Ms float64 `json:"secondExecToFirstOutputP50Ms"`
	SecondExecP99Ms float64 `json:"secondExecToFirstOutputP99Ms"`
	// WarmAdoptions counts the claims served by a pool member.
	WarmAdoptions int `json:"warmAdoptions"`
	// ClaimWritesPerClaim is the claims' own writes to our API per claim: its create (which, bound
	// at create time, stores the adopted sandbox in the same transaction) and its status writes.
	ClaimWritesPerClaim float64 `json:"claimWritesPerClaim"`
}

// FirstCommandResult is the content of _output/bench/first-command.json.
type FirstCommandResult struct {
	Machine Machine         `json:"machine"`
	Node    string          `json:"node"`
	Warm    FirstCommandRun `json:"warm"`
	// WarmEnv is warm claims carrying five values of their own (spec.env), delivered to the
	// member's process by the template's file before the claim is Ready.
	WarmEnv FirstCommandRun `json:"warmEnv"`
	Cold    FirstCommandRun `json:"cold"`
	Note    string          `json:"note"`
}

// BenchmarkTimeToFirstCommand is the figure an agent builder feels: from creating a claim to the
// first output of a command in its sandbox, on a real container of the plane's real node. One
// claim at a time (SANDBOX_BENCH_FIRST_COMMAND_RUNS, default 25): cold from the template alone,
// warm from a pool of as many Ready members, then warm with five values of the claim's own. Each claim is deleted once measured.
func BenchmarkTimeToFirstCommand(b *testing.B) {
	runs := int(envFloats(b, "SANDBOX_BENCH_FIRST_COMMAND_RUNS", []float64{25})[0])
	c := connect(b)
	node := c.realNode(b)
	client, err := sandbox.NewClient(c.config)
	if err != nil {
		b.Fatal(err)
	}
	res := FirstCommandResult{Machine: machine(), Node: node,
		Note: "one claim at a time through the Go SDK as its caller sees it (Claim, then Run of echo); " +
			"real kubelet, containerd and runc on the plane's machine; the pool refills meanwhile"}

	ns := c.namespace(b, "first-command")
	c.firstCommandTemplate(b, ns)
	res.Cold = c.firstCommandRuns(b, client, ns, sandbox.FromTemplate("shell"), "cold", runs)

	// The warm pool holds a Ready member for every claim: each claim is served by one. One pool
	// at a time, so that both series run beside as many pods.
	ctx := context.Background()
	c.firstCommandPool(b, ns, "pool", "shell", runs)
	res.Warm = c.firstCommandRuns(b, client, ns, sandbox.FromPool("pool"), "warm", runs)
	if err := c.sandbox.ExtensionsV1beta1().SandboxWarmPools(ns).Delete(ctx, "pool", metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	c.firstCommandPool(b, ns, "env-pool", "shell-env", runs)
	res.WarmEnv = c.firstCommandRuns(b, client, ns, sandbox.FromPool("env-pool"), "warm-env", runs,
		sandbox.WithEnv("TASK_ID", "task-1"), sandbox.WithEnv("USER_TOKEN", "tok"), sandbox.WithEnv("CALLBACK_URL", "http://cb.example/1"),
		sandbox.WithEnv("REGION", "eu"), sandbox.WithEnv("ATTEMPT", "1"))

	fmt.Printf("\nTime to first command on the real node %s, %s (%d CPUs), one claim at a time\n", node, res.Machine.CPUModel, res.Machine.NumCPU)
	fmt.Printf("%-26s %5s %9s %9s %9s %9s %12s %12s %11s %11s %11s %11s %6s %13s\n", "source", "runs", "p50 ms", "p90 ms", "p99 ms", "max ms", "Ready p50", "Ready p99", "exec p50", "exec p99", "2nd p50", "2nd p99", "warm", "claim writes")
	for _, r := range []FirstCommandRun{res.Warm, res.WarmEnv, res.Cold} {
		fmt.Printf("%-26s %5d %9.1f %9.1f %9.1f %9.1f %10.1fms %10.1fms %9.1fms %9.1fms %9.1fms %9.1fms %6d %13.2f\n", r.Source, r.Runs,
			r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs, r.ReadyP50Ms, r.ReadyP99Ms, r.ExecP50Ms, r.ExecP99Ms, r.SecondExecP50Ms, r.SecondExecP99Ms, r.WarmAdoptions, r.ClaimWritesPerClaim)
	}
	if res.Warm.P50Ms > 0 && res.WarmEnv.P50Ms > 0 {
		fmt.Printf("warm with five values / warm: Ready p50 %.2fx, first output p50 %.2fx; cold / warm with values: first output p50 %.2fx\n",
			res.WarmEnv.ReadyP50Ms/res.Warm.ReadyP50Ms, res.WarmEnv.P50Ms/res.Warm.P50Ms, res.Cold.P50Ms/res.WarmEnv.P50Ms)
	}
	if err := writeJSON(c.outFile("first-command.json"), res); err != nil {
		b.Fatal(err)
	}
}

// firstCommandPool makes a warm pool of template with size members and waits until all are Ready
// and the plane is quiet.
func (c *cluster) firstCommandPool(b *testing.B, ns, name, template string, size int) {
	b.Helper()
	ctx := context.Background()
	pool := &extensionsv1beta1.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       extensionsv1beta1.SandboxWarmPoolSpec{Replicas: ptr.To(int32(size)), TemplateRef: extensionsv1beta1.SandboxTemplateRef{Name: template}},
	}
	if _, err := c.sandbox.ExtensionsV1beta1().SandboxWarmPools(ns).Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.sandbox.ExtensionsV1beta1().SandboxWarmPools(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.ReadyReplicas == int32(size), nil
	}); err != nil {
		b.Fatalf("pool %s of %d not Ready: %v", name, size, err)
	}
	c.waitSettled(ctx, b)
}

// realNode returns the name of the plane's real node (a Ready Node kwok does not fake), or skips
// the benchmark when there is none.
func (c *cluster) realNode(b *testing.B) string {
	b.Helper()
	nodes, err := c.kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range nodes.Items {
		if n.Annotations["kwok.x-k8s.io/node"] == "fake" {
			continue
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return n.Name
			}
		}
	}
	b.Skip("no real node in the plane (hack/local-up.sh runs one only as root on Linux)")
	return ""
}

// firstCommandTemplate makes the templates "shell" (the sandbox image, waiting) and "shell-env"
// (the same, taking claims' env, delivered in a file).
func (c *cluster) firstCommandTemplate(b *testing.B, ns string) {
	b.Helper()
	template := &extensionsv1beta1.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "shell"},
		Spec: extensionsv1beta1.SandboxTemplateSpec{PodTemplate: agentsv1beta1.PodTemplate{Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To(int64(1)),
			Containers: []corev1.Container{{Name: "agent", Image: realNodeImage,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 600 & wait $!; done"}}},
		}}},
	}
	withEnv := template.DeepCopy()
	withEnv.Name = "shell-env"
	withEnv.Spec.EnvVarsInjectionPolicy = extensionsv1beta1.EnvVarsInjectionPolicyAllowed
	withEnv.Spec.EnvVarsDelivery = &extensionsv1beta1.EnvVarsDelivery{File: "/run/claim/env"}
	for _, t := range []*extensionsv1beta1.SandboxTemplate{template, withEnv} {
		if _, err := c.sandbox.ExtensionsV1beta1().SandboxTemplates(ns).Create(context.Background(), t, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// firstCommandRuns claims runs sandboxes from source one after the other and measures each one's
// time to the first output of `echo first`.
func (c *cluster) firstCommandRuns(b *testing.B, client *sandbox.Client, ns string, source sandbox.Source, prefix string, runs int, opts ...sandbox.ClaimOption) FirstCommandRun {
	b.Helper()
	run := FirstCommandRun{Source: prefix + " (" + source.String() + ")", Runs: runs}
	var total, ready, execs, second []time.Duration
	_, oursBefore := c.bothWrites(context.Background(), b)
	for i := range runs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		start := time.Now()
		sb, err := client.Claim(ctx, ns, source, append([]sandbox.ClaimOption{sandbox.WithName(fmt.Sprintf("%s-%03d", prefix, i))}, opts...)...)
		if err != nil {
			cancel()
			b.Fatalf("claim %d from %s: %v", i, source, err)
		}
		readyAt := time.Now()
		out := &firstByte{}
		err = sb.Exec(ctx, sandbox.ExecOptions{Command: []string{"echo", "first"}, Stdout: out})
		if err != nil || out.at.IsZero() {
			cancel()
			b.Fatalf("first command in %s: %v", sb, err)
		}
		again, againStart := &firstByte{}, time.Now()
		if err := sb.Exec(ctx, sandbox.ExecOptions{Command: []string{"echo", "second"}, Stdout: again}); err != nil {
			cancel()
			b.Fatalf("second command in %s: %v", sb, err)
		}
		second = append(second, again.at.Sub(againStart))
		total = append(total, out.at.Sub(start))
		ready = append(ready, readyAt.Sub(start))
		execs = append(execs, out.at.Sub(readyAt))
		claim, err := c.sandbox.ExtensionsV1beta1().SandboxClaims(ns).Get(ctx, sb.Name(), metav1.GetOptions{})
		if err == nil && claim.Status.SandboxStatus.Name != sb.Name() {
			run.WarmAdoptions++ // a pool member, not a sandbox of the claim's own name
		}
		// The next claim need not wait for this one's pod to go.
		if err := sb.Close(ctx); err != nil {
			b.Logf("deleting %s: %v", sb, err)
		}
		cancel()
	}
	_, oursAfter := c.bothWrites(context.Background(), b)
	ours := oursAfter.minus(oursBefore).workload()
	run.ClaimWritesPerClaim = (ours["sandboxclaims POST"] + ours["sandboxclaims/status PUT"]) / float64(runs)
	for _, d := range [][]time.Duration{total, ready, execs, second} {
		slices.Sort(d)
	}
	run.P50Ms, run.P90Ms, run.P99Ms, run.MaxMs = ms(percentile(total, 50)), ms(percentile(total, 90)), ms(percentile(total, 99)), ms(total[len(total)-1])
	run.ReadyP50Ms, run.ReadyP99Ms = ms(percentile(ready, 50)), ms(percentile(ready, 99))
	run.ExecP50Ms, run.ExecP99Ms = ms(percentile(execs, 50)), ms(percentile(execs, 99))
	run.SecondExecP50Ms, run.SecondExecP99Ms = ms(percentile(second, 50)), ms(percentile(second, 99))
	return run
}

// firstByte records when the first byte was written to it.
type firstByte struct {
	mu sync.Mutex
	at time.Time
}

func (f *firstByte) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at.IsZero() && len(p) > 0 {
		f.at = time.Now()
	}
	return len(p), nil
}
