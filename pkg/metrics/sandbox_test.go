// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// sandbox is a stored Sandbox: running unless a modifier says otherwise, as the defaulter leaves it.
func sandbox(ns string, mods ...func(*agents.Sandbox)) agents.Sandbox {
	sb := agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sb"},
		Spec: agents.SandboxSpec{Replicas: new(int32(1)), OperatingMode: agents.OperatingModeRunning}}
	for _, m := range mods {
		m(&sb)
	}
	return sb
}

func ready(status metav1.ConditionStatus, reason string) func(*agents.Sandbox) {
	return func(sb *agents.Sandbox) {
		sb.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: status, Reason: reason}}
	}
}

func annotated(k, v string) func(*agents.Sandbox) {
	return func(sb *agents.Sandbox) {
		if sb.Annotations == nil {
			sb.Annotations = map[string]string{}
		}
		sb.Annotations[k] = v
	}
}

func suspended(sb *agents.Sandbox) {
	sb.Spec.Replicas, sb.Spec.OperatingMode = new(int32(0)), agents.OperatingModeSuspended
}

func controlledBy(apiVersion, kind string) func(*agents.Sandbox) {
	return func(sb *agents.Sandbox) {
		sb.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "owner", UID: "u", Controller: new(true)}}
	}
}

// TestKeyOf is the seeds' label derivation of agent_sandboxes, with the operating_mode label the
// peer added in v1.0.11.
func TestKeyOf(t *testing.T) {
	cases := []struct {
		name string
		sb   agents.Sandbox
		want sandboxKey
	}{
		{name: "cold, no readiness, no template, no owner", sb: sandbox("default"),
			want: sandboxKey{"default", "false", "false", "cold", "unknown", "None", "Running"}},
		{name: "ready", sb: sandbox("ns", ready(metav1.ConditionTrue, "DependenciesReady")),
			want: sandboxKey{"ns", "true", "false", "cold", "unknown", "None", "Running"}},
		{name: "expired", sb: sandbox("ns", ready(metav1.ConditionFalse, agentsv1beta1.SandboxReasonExpired)),
			want: sandboxKey{"ns", "false", "true", "cold", "unknown", "None", "Running"}},
		{name: "warm: a pod name recorded, from a template, claimed",
			sb: sandbox("ns", annotated(agentsv1beta1.SandboxPodNameAnnotation, "p"), annotated(agentsv1beta1.SandboxTemplateRefAnnotation, "python"),
				controlledBy("extensions.agents.x-k8s.io/v1beta1", "SandboxClaim")),
			want: sandboxKey{"ns", "false", "false", "warm", "python", "SandboxClaim", "Running"}},
		{name: "pool member", sb: sandbox("ns", controlledBy("extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool")),
			want: sandboxKey{"ns", "false", "false", "cold", "unknown", "SandboxWarmPool", "Running"}},
		{name: "another controller kind", sb: sandbox("ns", controlledBy("apps/v1", "ReplicaSet")),
			want: sandboxKey{"ns", "false", "false", "cold", "unknown", "None", "Running"}},
		{name: "suspended", sb: sandbox("ns", suspended),
			want: sandboxKey{"ns", "false", "false", "cold", "unknown", "None", "Suspended"}},
		{name: "suspended claimed sandbox, ready condition kept", sb: sandbox("ns", suspended, ready(metav1.ConditionTrue, "DependenciesReady"),
			controlledBy("extensions.agents.x-k8s.io/v1beta1", "SandboxClaim")),
			want: sandboxKey{"ns", "true", "false", "cold", "unknown", "SandboxClaim", "Suspended"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := keyOf(&tc.sb); got != tc.want {
				t.Errorf("keyOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestSandboxCollector: sandboxes of one key are counted in one series, running and suspended ones
// apart; a failed list gives none.
func TestSandboxCollector(t *testing.T) {
	listed := []agents.Sandbox{sandbox("a"), sandbox("a"), sandbox("a", suspended), sandbox("b", ready(metav1.ConditionTrue, "DependenciesReady"))}
	var listErr error
	source := SandboxSource(func(context.Context) ([]agents.Sandbox, error) { return listed, listErr })
	collector := func() *sandboxCollector {
		c := &sandboxCollector{}
		c.source.Store(&source)
		return c
	}
	want := `
# HELP agent_sandboxes [ALPHA] Sandboxes by namespace, readiness, expiry, launch type, template, owner kind and operating mode.
# TYPE agent_sandboxes gauge
agent_sandboxes{expired="false",launch_type="cold",namespace="a",operating_mode="Running",owned_by="None",ready_condition="false",sandbox_template="unknown"} 2
agent_sandboxes{expired="false",launch_type="cold",namespace="a",operating_mode="Suspended",owned_by="None",ready_condition="false",sandbox_template="unknown"} 1
agent_sandboxes{expired="false",launch_type="cold",namespace="b",operating_mode="Running",owned_by="None",ready_condition="true",sandbox_template="unknown"} 1
`
	if err := testutil.CustomCollectAndCompare(collector(), strings.NewReader(want), "agent_sandboxes"); err != nil {
		t.Error(err)
	}
	listErr = errors.New("storage down")
	if err := testutil.CustomCollectAndCompare(collector(), strings.NewReader(""), "agent_sandboxes"); err != nil {
		t.Errorf("after a failed list: %v", err)
	}
}

// TestSeedLabelsAndBuckets: the label values and buckets the seeds name.
func TestSeedLabelsAndBuckets(t *testing.T) {
	if PodCondition(true) != "ready" || PodCondition(false) != "not_ready" || NoWarmPool != "none" {
		t.Errorf("pod_condition %q/%q, warmpool_name %q; want ready/not_ready, none", PodCondition(true), PodCondition(false), NoWarmPool)
	}
	wantClaim := []float64{100, 250, 500, 750, 1000, 1250, 1500, 2000, 2500, 5000, 10000, 30000, 60000, 120000, 240000}
	if !equal(claimLatencyBuckets, wantClaim) {
		t.Errorf("claim buckets %v, want %v", claimLatencyBuckets, wantClaim)
	}
	if last := sandboxLatencyBuckets[len(sandboxLatencyBuckets)-1]; last != 600000 || !equal(sandboxLatencyBuckets[:len(wantClaim)], wantClaim) {
		t.Errorf("sandbox buckets %v, want the claim buckets up to 600000", sandboxLatencyBuckets)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
