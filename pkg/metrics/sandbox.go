// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/klog/v2"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/version"
)

// Launch types of a claimed sandbox.
const (
	LaunchWarm = "warm"
	LaunchCold = "cold"
)

// Values of the warmpool_name and pod_condition labels of agent_sandbox_claim_creation_total: a
// cold creation has no pool and a pod still to start.
const (
	NoWarmPool     = "none"
	PodReady       = "ready"
	PodNotReady    = "not_ready"
	collectTimeout = 5 * time.Second
)

// PodCondition is the pod_condition label value of a sandbox handed to a claim.
func PodCondition(ready bool) string {
	if ready {
		return PodReady
	}
	return PodNotReady
}

// claimLatencyBuckets are in milliseconds, as the seeds bucket a claim's startup: from a warm
// adoption to a cold start that took minutes.
var claimLatencyBuckets = []float64{100, 250, 500, 750, 1000, 1250, 1500, 2000, 2500, 5000, 10000, 30000, 60000, 120000, 240000}

// sandboxLatencyBuckets reach ten minutes: a sandbox's own start includes scheduling and pulling
// its image.
var sandboxLatencyBuckets = append(slices.Clone(claimLatencyBuckets), 600000)

var (
	// ClaimStartupLatency is the time from a claim's creation to its first Ready=True.
	ClaimStartupLatency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "agent_sandbox_claim_startup_latency_ms",
		Help:           "Milliseconds from a SandboxClaim's creation to its first Ready=True.",
		Buckets:        claimLatencyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"launch_type", "sandbox_template"})

	// ClaimControllerStartupLatency is the time from the controller first seeing a claim to Ready.
	ClaimControllerStartupLatency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "agent_sandbox_claim_controller_startup_latency_ms",
		Help:           "Milliseconds from the claim controller first observing a SandboxClaim to its first Ready=True.",
		Buckets:        claimLatencyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"launch_type", "sandbox_template"})

	// ClientClaimStartupLatency is the time from a client's first request for a claim (the SDKs'
	// stamp) to the claim's first Ready=True: the startup as the client saw it, clock skew
	// included.
	ClientClaimStartupLatency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "agent_sandbox_client_claim_startup_latency_ms",
		Help:           "Milliseconds from a client's first request for a SandboxClaim (its agents.x-k8s.io/client-first-requested-at annotation) to its first Ready=True; clock skew between client and server included.",
		Buckets:        claimLatencyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"launch_type", "sandbox_template"})

	// SandboxCreationLatency is the time from a Sandbox's creation to its Ready=True.
	SandboxCreationLatency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "agent_sandbox_creation_latency_ms",
		Help:           "Milliseconds from a Sandbox's creation to its Ready=True; for warm launches, the pool member's own start.",
		Buckets:        sandboxLatencyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "launch_type", "sandbox_template"})

	// ClaimCreations counts claims that got a Sandbox, by how.
	ClaimCreations = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "agent_sandbox_claim_creation_total",
		Help:           "SandboxClaims that got a Sandbox, by launch type, warm pool (none when cold) and the pod's readiness at that moment.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "sandbox_template", "launch_type", "warmpool_name", "pod_condition"})

	sandboxesDesc = metrics.NewDesc("agent_sandboxes",
		"Sandboxes by namespace, readiness, expiry, launch type, template, owner kind and operating mode.",
		[]string{"namespace", "ready_condition", "expired", "launch_type", "sandbox_template", "owned_by", "operating_mode"}, nil,
		metrics.ALPHA, "")
)

// buildInfo is 1, with the running build as labels (set once registered).
var buildInfo = func() *metrics.Gauge {
	v := version.Get()
	return metrics.NewGauge(&metrics.GaugeOpts{
		Name: "agent_sandbox_build_info",
		Help: "A metric with a constant '1' value labeled by git_version, git_commit, build_date, go_version, compiler and platform of the running build.",
		ConstLabels: map[string]string{
			"git_version": v.GitVersion, "git_commit": v.GitCommit, "build_date": v.BuildDate,
			"go_version": v.GoVersion, "compiler": v.Compiler, "platform": v.Platform,
		},
		StabilityLevel: metrics.ALPHA,
	})
}()

// SinceMillis is the time from t to now in milliseconds.
func SinceMillis(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1000
}

// SandboxSource lists every stored Sandbox for a scrape.
type SandboxSource func(ctx context.Context) ([]agents.Sandbox, error)

// sandboxCollector counts Sandboxes at every scrape, from the server's own storage: any replica
// answers, whether or not it runs the controllers.
type sandboxCollector struct {
	metrics.BaseStableCollector
	source atomic.Pointer[SandboxSource]
}

var sandboxes sandboxCollector

// RegisterSandboxCollector publishes agent_sandboxes from source, in place of any source
// registered before (tests run several servers in one process; the newest one is reported).
func RegisterSandboxCollector(source SandboxSource) {
	registerCollectorOnce.Do(func() { mustRegisterCollector(&sandboxes) })
	sandboxes.source.Store(&source)
}

func (c *sandboxCollector) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- sandboxesDesc }

func (c *sandboxCollector) CollectWithStability(ch chan<- metrics.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	source := c.source.Load()
	if source == nil {
		return
	}
	all, err := (*source)(ctx)
	if err != nil {
		klog.ErrorS(err, "Listing sandboxes for agent_sandboxes")
		return
	}
	counts := map[sandboxKey]float64{}
	for i := range all {
		counts[keyOf(&all[i])]++
	}
	for k, n := range counts {
		ch <- metrics.NewLazyConstMetric(sandboxesDesc, metrics.GaugeValue, n, k.ns, k.ready, k.expired, k.launch, k.template, k.owner, k.mode)
	}
}

// sandboxKey is the agent_sandboxes series one Sandbox counts in.
type sandboxKey struct{ ns, ready, expired, launch, template, owner, mode string }

// keyOf derives the labels of one Sandbox. operating_mode is its spec.operatingMode, Running or
// Suspended, as the peer labels it (agent-sandbox v1.0.11); storage always holds one, as the
// defaulter derives it from spec.replicas when a client set neither.
func keyOf(sb *agents.Sandbox) sandboxKey {
	k := sandboxKey{ns: sb.Namespace, ready: "false", expired: "false", launch: LaunchCold, template: "unknown", owner: "None",
		mode: string(sb.Spec.OperatingMode)}
	if cond := meta.FindStatusCondition(sb.Status.Conditions, string(agentsv1beta1.SandboxConditionReady)); cond != nil {
		if cond.Status == metav1.ConditionTrue {
			k.ready = "true"
		}
		if cond.Reason == agentsv1beta1.SandboxReasonExpired {
			k.expired = "true"
		}
	}
	if sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation] != "" {
		k.launch = LaunchWarm
	}
	if t := sb.Annotations[agentsv1beta1.SandboxTemplateRefAnnotation]; t != "" {
		k.template = t
	}
	for _, kind := range []string{"SandboxClaim", "SandboxWarmPool"} {
		if objectmeta.ControllerOf(sb, extensionsv1beta1.SchemeGroupVersion.WithKind(kind).GroupKind()) != nil {
			k.owner = kind
		}
	}
	return k
}
