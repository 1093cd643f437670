// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package warm

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
)

// ObserveReady records the startup latencies of a claim that just became Ready, by the create-time
// binding or by the claim controller; observedAt is when the one that made it Ready first saw the
// claim.
func ObserveReady(claim *extensionsv1beta1.SandboxClaim, sb *agentsv1beta1.Sandbox, observedAt time.Time) {
	launch := metrics.LaunchCold
	if sb.Annotations[agentsv1beta1.SandboxPodNameAnnotation] != "" {
		launch = metrics.LaunchWarm
	}
	template := claim.Spec.TemplateRef.Name
	metrics.ClaimStartupLatency.WithLabelValues(launch, template).Observe(metrics.SinceMillis(claim.CreationTimestamp.Time))
	metrics.ClaimControllerStartupLatency.WithLabelValues(launch, template).Observe(metrics.SinceMillis(observedAt))
	if requestedAt, ok := clientRequestedAt(claim, time.Now()); ok {
		metrics.ClientClaimStartupLatency.WithLabelValues(launch, template).Observe(metrics.SinceMillis(requestedAt))
	}
	if r := meta.FindStatusCondition(sb.Status.Conditions, sandboxReadyKey); r != nil {
		ms := float64(r.LastTransitionTime.Sub(sb.CreationTimestamp.Time).Microseconds()) / 1000
		metrics.SandboxCreationLatency.WithLabelValues(sb.Namespace, launch, template).Observe(ms)
	}
}

// clientRequestedAt is when the claim's client first asked for it, as its SDK stamped it. A claim
// without the stamp (written by hand) is not measured; neither is one whose stamp does not parse
// or lies in the future (a skewed clock), which is logged.
func clientRequestedAt(claim *extensionsv1beta1.SandboxClaim, now time.Time) (time.Time, bool) {
	stamp, ok := claim.Annotations[agentsv1beta1.ClientRequestedAtAnnotation]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, stamp)
	switch {
	case err != nil:
		klog.V(1).InfoS("Not measuring the client-seen startup: unparseable request time", "claim", klog.KObj(claim), "value", stamp, "err", err)
		return time.Time{}, false
	case t.After(now):
		klog.V(1).InfoS("Not measuring the client-seen startup: request time in the future", "claim", klog.KObj(claim), "value", stamp)
		return time.Time{}, false
	}
	return t, true
}
