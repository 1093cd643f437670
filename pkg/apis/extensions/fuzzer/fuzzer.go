// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fuzzer holds the randfill functions for extensions.agents.x-k8s.io used by round-trip
// tests. They keep fuzzed objects in shapes the defaulters leave unchanged, since decoding applies
// defaults and the result must equal what was encoded.
package fuzzer

import (
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	agentsfuzzer "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/fuzzer"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

// Funcs returns the fuzzer functions for the extensions.agents.x-k8s.io types, including those for
// the pod templates embedded from agents.x-k8s.io.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return append(agentsfuzzer.PodTemplateFuncs(codecs),
		func(s *extensions.SandboxClaimSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.WarmPool == nil {
				s.WarmPool = ptr.To(oneOf(c, extensions.WarmPoolPolicyNone, extensions.WarmPoolPolicyDefault, "fast-pool"))
			}
		},
		func(l *extensions.Lifecycle, c randfill.Continue) {
			c.FillNoCustom(l)
			if l.ShutdownPolicy == nil {
				l.ShutdownPolicy = ptr.To(oneOf(c, extensions.ShutdownPolicyDelete, extensions.ShutdownPolicyDeleteForeground, extensions.ShutdownPolicyRetain))
			}
		},
		func(s *extensions.SandboxTemplateSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.NetworkPolicyManagement == "" {
				s.NetworkPolicyManagement = oneOf(c, extensions.NetworkPolicyManagementManaged, extensions.NetworkPolicyManagementUnmanaged)
			}
			if s.EnvVarsInjectionPolicy == "" {
				s.EnvVarsInjectionPolicy = oneOf(c, extensions.EnvVarsInjectionPolicyAllowed, extensions.EnvVarsInjectionPolicyOverrides, extensions.EnvVarsInjectionPolicyDisallowed)
			}
			if s.VolumeClaimTemplatesPolicy == "" {
				s.VolumeClaimTemplatesPolicy = oneOf(c, extensions.VolumeClaimTemplatesPolicyDisallowed, extensions.VolumeClaimTemplatesPolicyAllowed, extensions.VolumeClaimTemplatesPolicyOverrides)
			}
		},
		func(d *extensions.EnvVarsDelivery, c randfill.Continue) {
			c.FillNoCustom(d)
			if d.TimeoutSeconds == nil {
				d.TimeoutSeconds = ptr.To(int32(1 + c.Intn(300)))
			}
		},
		func(s *extensions.SandboxWarmPoolSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.UpdateStrategy == nil {
				s.UpdateStrategy = &extensions.SandboxWarmPoolUpdateStrategy{}
			}
			if s.UpdateStrategy.Type == "" {
				s.UpdateStrategy.Type = oneOf(c, extensions.RecreateSandboxWarmPoolUpdateStrategyType, extensions.OnReplenishSandboxWarmPoolUpdateStrategyType)
			}
		},
	)
}

// oneOf picks one of values at random.
func oneOf[T any](c randfill.Continue, values ...T) T {
	return values[c.Intn(len(values))]
}
