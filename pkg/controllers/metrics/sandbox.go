// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	agentslisters "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/listers/agents/v1beta1"
)

// Launch types of a claimed sandbox.
const (
	LaunchWarm = "warm"
	LaunchCold = "cold"
)

// latencyBuckets are in milliseconds, from a warm adoption to a slow cold start.
var latencyBuckets = []float64{5, 10, 25, 50, 100, 200, 300, 500, 1000, 2500, 5000, 10000, 30000, 60000, 120000}

var (
	// ClaimStartupLatency is the time from a claim's creation to its first Ready=True.
	ClaimStartupLatency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "agent_sandbox_claim_startup_latency_ms",
		Help:           "Milliseconds from a SandboxClaim's creation to its first Ready=True.",
		Buckets:        latencyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"launch_type", "sandbox_template"})

	// ClaimControllerStartupLatency is the time from the controller first seeing a claim to Ready.
	ClaimControllerStartupLatency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "agent_sandbox_claim_controller_startup_latency_ms",
		Help:           "Milliseconds from the claim controller first observing a SandboxClaim to its first Ready=True.",
		Buckets:        latencyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"launch_type", "sandbox_template"})

	// SandboxCreationLatency is the time from a Sandbox's creation to its Ready=True.
	SandboxCreationLatency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "agent_sandbox_creation_latency_ms",
		Help:           "Milliseconds from a Sandbox's creation to its Ready=True; for warm launches, the pool member's own start.",
		Buckets:        latencyBuckets,
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "launch_type", "sandbox_template"})

	// ClaimCreations counts claims that got a Sandbox, by how.
	ClaimCreations = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "agent_sandbox_claim_creation_total",
		Help:           "SandboxClaims that got a Sandbox, by launch type, warm pool and the pod's readiness at that moment.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "sandbox_template", "launch_type", "warmpool_name", "pod_condition"})

	sandboxesDesc = metrics.NewDesc("agent_sandboxes",
		"Sandboxes by namespace, readiness, expiry, launch type, template and owner kind.",
		[]string{"namespace", "ready_condition", "expired", "launch_type", "sandbox_template", "owned_by"}, nil,
		metrics.ALPHA, "")
)

// SinceMillis is the time from t to now in milliseconds.
func SinceMillis(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1000
}

// sandboxCollector counts Sandboxes from the controllers' cache at every scrape.
type sandboxCollector struct {
	metrics.BaseStableCollector
	// lister is the cache of the current leadership term; nil while this replica does not lead.
	lister atomic.Pointer[agentslisters.SandboxLister]
}

// RegisterSandboxCollector publishes agent_sandboxes from lister (nil to stop).
func RegisterSandboxCollector(lister agentslisters.SandboxLister) {
	registerCollectorOnce.Do(func() { mustRegisterCollector(&sandboxes) })
	if lister == nil {
		sandboxes.lister.Store(nil)
		return
	}
	sandboxes.lister.Store(&lister)
}

var sandboxes sandboxCollector

func (c *sandboxCollector) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- sandboxesDesc }

func (c *sandboxCollector) CollectWithStability(ch chan<- metrics.Metric) {
	lister := c.lister.Load()
	if lister == nil {
		return
	}
	all, err := (*lister).List(labels.Everything())
	if err != nil {
		return
	}
	type key struct{ ns, ready, expired, launch, template, owner string }
	counts := map[key]float64{}
	for _, sb := range all {
		k := key{ns: sb.Namespace, ready: "false", expired: "false", launch: LaunchCold, template: "unknown", owner: "None"}
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
		if ref := metav1.GetControllerOfNoCopy(sb); ref != nil && (ref.Kind == "SandboxClaim" || ref.Kind == "SandboxWarmPool") {
			k.owner = ref.Kind
		}
		counts[k]++
	}
	for k, n := range counts {
		ch <- metrics.NewLazyConstMetric(sandboxesDesc, metrics.GaugeValue, n, k.ns, k.ready, k.expired, k.launch, k.template, k.owner)
	}
}
