// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

func validWarmPool() *extensions.SandboxWarmPool {
	return &extensions.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: "sandboxwarmpool-example", Namespace: "default", ResourceVersion: "1"},
		Spec: extensions.SandboxWarmPoolSpec{
			Replicas:    3,
			TemplateRef: extensions.SandboxTemplateRef{Name: "secure-datascience-template"},
			UpdateStrategy: &extensions.SandboxWarmPoolUpdateStrategy{
				Type: extensions.OnReplenishSandboxWarmPoolUpdateStrategyType,
			},
		},
	}
}

func TestValidateSandboxWarmPool(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(p *extensions.SandboxWarmPool)
		want   []want
	}{
		{name: "valid", mutate: func(p *extensions.SandboxWarmPool) {}},

		// metadata: members are <pool>-<5 random characters>, valid Sandbox names
		{name: "name of 57 characters", mutate: func(p *extensions.SandboxWarmPool) { p.Name = "p" + strings.Repeat("x", 56) }},
		{name: "name of 58 characters", mutate: func(p *extensions.SandboxWarmPool) { p.Name = "p" + strings.Repeat("x", 57) },
			want: []want{invalid("metadata.name")}},
		{name: "name of 64 characters", mutate: func(p *extensions.SandboxWarmPool) { p.Name = "p" + strings.Repeat("x", 63) },
			want: []want{invalid("metadata.name")}},
		{name: "name starting with a digit", mutate: func(p *extensions.SandboxWarmPool) { p.Name = "1pool" },
			want: []want{invalid("metadata.name")}},
		{name: "name with a dot", mutate: func(p *extensions.SandboxWarmPool) { p.Name = "fast.pool" },
			want: []want{invalid("metadata.name")}},

		// replicas
		{name: "replicas 0", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.Replicas = 0 }},
		{name: "replicas negative", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.Replicas = -1 },
			want: []want{invalid("spec.replicas")}},
		{name: "replicas at the maximum", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.Replicas = MaxWarmPoolReplicas }},
		{name: "replicas above the maximum", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.Replicas = MaxWarmPoolReplicas + 1 },
			want: []want{invalid("spec.replicas")}},

		// template reference
		{name: "template missing", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.TemplateRef.Name = "" },
			want: []want{required("spec.sandboxTemplateRef.name")}},
		{name: "template name invalid", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.TemplateRef.Name = "-template" },
			want: []want{invalid("spec.sandboxTemplateRef.name")}},

		// update strategy
		{name: "Recreate", mutate: func(p *extensions.SandboxWarmPool) {
			p.Spec.UpdateStrategy.Type = extensions.RecreateSandboxWarmPoolUpdateStrategyType
		}},
		{name: "no update strategy", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.UpdateStrategy = nil }},
		{name: "update strategy unknown", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.UpdateStrategy.Type = "RollingUpdate" },
			want: []want{notSupported("spec.updateStrategy.type")}},
		{name: "update strategy empty", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.UpdateStrategy.Type = "" },
			want: []want{notSupported("spec.updateStrategy.type")}},

		// readiness grace period: unset means the default, at least the peer's minimum of 30 s
		{name: "readiness grace period unset", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.ReadinessGracePeriodSeconds = nil }},
		{name: "readiness grace period at the minimum", mutate: func(p *extensions.SandboxWarmPool) {
			p.Spec.ReadinessGracePeriodSeconds = ptr.To[int32](30)
		}},
		{name: "readiness grace period of an hour", mutate: func(p *extensions.SandboxWarmPool) {
			p.Spec.ReadinessGracePeriodSeconds = ptr.To[int32](3600)
		}},
		{name: "readiness grace period below the minimum", mutate: func(p *extensions.SandboxWarmPool) {
			p.Spec.ReadinessGracePeriodSeconds = ptr.To[int32](29)
		}, want: []want{invalid("spec.readinessGracePeriodSeconds")}},
		{name: "readiness grace period zero", mutate: func(p *extensions.SandboxWarmPool) {
			p.Spec.ReadinessGracePeriodSeconds = ptr.To[int32](0)
		}, want: []want{invalid("spec.readinessGracePeriodSeconds")}},
		{name: "readiness grace period negative", mutate: func(p *extensions.SandboxWarmPool) {
			p.Spec.ReadinessGracePeriodSeconds = ptr.To[int32](-60)
		}, want: []want{invalid("spec.readinessGracePeriodSeconds")}},

		// all errors at once
		{name: "several errors are all reported", mutate: func(p *extensions.SandboxWarmPool) {
			p.Name = "Pool"
			p.Namespace = ""
			p.Spec.Replicas = -3
			p.Spec.TemplateRef.Name = ""
			p.Spec.UpdateStrategy.Type = "Later"
		}, want: []want{
			invalid("metadata.name"),
			required("metadata.namespace"),
			invalid("spec.replicas"),
			required("spec.sandboxTemplateRef.name"),
			notSupported("spec.updateStrategy.type"),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := validWarmPool()
			tc.mutate(p)
			expectErrors(t, ValidateSandboxWarmPool(p), tc.want...)
		})
	}
}

func TestValidateSandboxWarmPoolUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(p *extensions.SandboxWarmPool)
		want   []want
	}{
		{name: "unchanged", mutate: func(p *extensions.SandboxWarmPool) {}},
		{name: "scaled", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.Replicas = 10 }},
		{name: "other template", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.TemplateRef.Name = "python-runtime-template" }},
		{name: "other update strategy", mutate: func(p *extensions.SandboxWarmPool) {
			p.Spec.UpdateStrategy.Type = extensions.RecreateSandboxWarmPoolUpdateStrategyType
		}},
		{name: "readiness grace period set", mutate: func(p *extensions.SandboxWarmPool) {
			p.Spec.ReadinessGracePeriodSeconds = ptr.To[int32](600)
		}},
		{name: "readiness grace period set too low", mutate: func(p *extensions.SandboxWarmPool) {
			p.Spec.ReadinessGracePeriodSeconds = ptr.To[int32](10)
		}, want: []want{invalid("spec.readinessGracePeriodSeconds")}},
		{name: "new spec is validated", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.Replicas = -1 },
			want: []want{invalid("spec.replicas")}},
		{name: "name changed", mutate: func(p *extensions.SandboxWarmPool) { p.Name = "other" },
			want: []want{invalid("metadata.name")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldP := validWarmPool()
			newP := validWarmPool()
			tc.mutate(newP)
			expectErrors(t, ValidateSandboxWarmPoolUpdate(newP, oldP), tc.want...)
		})
	}
}

func TestValidateSandboxWarmPoolStatusUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(p *extensions.SandboxWarmPool)
		want   []want
	}{
		{name: "filled", mutate: func(p *extensions.SandboxWarmPool) {
			p.Status = extensions.SandboxWarmPoolStatus{Replicas: 3, ReadyReplicas: 2, Selector: "agents.x-k8s.io/warm-pool-sandbox=1a2b3c4d"}
		}},
		{name: "more ready than replicas is allowed", mutate: func(p *extensions.SandboxWarmPool) {
			p.Status = extensions.SandboxWarmPoolStatus{Replicas: 1, ReadyReplicas: 2}
		}},
		{name: "spec is not looked at", mutate: func(p *extensions.SandboxWarmPool) { p.Spec.Replicas = -1 }},
		{name: "replicas negative", mutate: func(p *extensions.SandboxWarmPool) { p.Status.Replicas = -1 },
			want: []want{invalid("status.replicas")}},
		{name: "ready replicas negative", mutate: func(p *extensions.SandboxWarmPool) { p.Status.ReadyReplicas = -1 },
			want: []want{invalid("status.readyReplicas")}},
		{name: "selector unparsable", mutate: func(p *extensions.SandboxWarmPool) { p.Status.Selector = "a=b=c" },
			want: []want{invalid("status.selector")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oldP := validWarmPool()
			newP := validWarmPool()
			tc.mutate(newP)
			expectErrors(t, ValidateSandboxWarmPoolStatusUpdate(newP, oldP), tc.want...)
		})
	}
}
