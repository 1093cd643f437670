// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package fuzzer holds the randfill functions for agents.x-k8s.io used by round-trip tests. They
// keep fuzzed objects in shapes the defaulters leave unchanged, since decoding applies defaults and
// the result must equal what was encoded.
package fuzzer

import (
	corev1 "k8s.io/api/core/v1"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

// Funcs returns the fuzzer functions for the agents.x-k8s.io types.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return append(PodTemplateFuncs(codecs),
		func(s *agents.SandboxSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Replicas == nil {
				s.Replicas = ptr.To(c.Int31n(2))
			}
			// operatingMode is kept in step with replicas: 0 Suspended, 1 Running.
			s.OperatingMode = agents.OperatingModeRunning
			if *s.Replicas == 0 {
				s.OperatingMode = agents.OperatingModeSuspended
			}
		},
		func(l *agents.Lifecycle, c randfill.Continue) {
			c.FillNoCustom(l)
			if l.ShutdownPolicy == nil {
				l.ShutdownPolicy = ptr.To(oneOf(c, agents.ShutdownPolicyDelete, agents.ShutdownPolicyRetain))
			}
		},
	)
}

// PodTemplateFuncs returns fuzzer functions for the core/v1 types inside a pod template (and so
// inside a SandboxTemplate too). The defaulters generated for our versions apply the defaults the
// core/v1 types declare; these functions fill in each such field so that defaulting is a no-op.
func PodTemplateFuncs(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		func(p *corev1.ContainerPort, c randfill.Continue) {
			c.FillNoCustom(p)
			if p.Protocol == "" {
				p.Protocol = oneOf(c, corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)
			}
		},
		func(s *corev1.FileKeySelector, c randfill.Continue) {
			c.FillNoCustom(s)
			if s.Optional == nil {
				s.Optional = ptr.To(c.Bool())
			}
		},
		func(g *corev1.GRPCAction, c randfill.Continue) {
			c.FillNoCustom(g)
			if g.Service == nil {
				g.Service = ptr.To(c.String(0))
			}
		},
		func(v *corev1.ISCSIVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			if v.ISCSIInterface == "" {
				v.ISCSIInterface = "default"
			}
		},
		func(v *corev1.RBDVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			if v.RBDPool == "" {
				v.RBDPool = "rbd"
			}
			if v.RadosUser == "" {
				v.RadosUser = "admin"
			}
			if v.Keyring == "" {
				v.Keyring = "/etc/ceph/keyring"
			}
		},
		func(v *corev1.AzureDiskVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			if v.CachingMode == nil {
				v.CachingMode = ptr.To(oneOf(c, corev1.AzureDataDiskCachingNone, corev1.AzureDataDiskCachingReadOnly, corev1.AzureDataDiskCachingReadWrite))
			}
			if v.FSType == nil {
				v.FSType = ptr.To("ext4")
			}
			if v.ReadOnly == nil {
				v.ReadOnly = ptr.To(c.Bool())
			}
			if v.Kind == nil {
				v.Kind = ptr.To(oneOf(c, corev1.AzureSharedBlobDisk, corev1.AzureDedicatedBlobDisk, corev1.AzureManagedDisk))
			}
		},
		func(v *corev1.ScaleIOVolumeSource, c randfill.Continue) {
			c.FillNoCustom(v)
			if v.StorageMode == "" {
				v.StorageMode = oneOf(c, "ThinProvisioned", "ThickProvisioned")
			}
			if v.FSType == "" {
				v.FSType = "xfs"
			}
		},
	}
}

// oneOf picks one of values at random.
func oneOf[T any](c randfill.Continue, values ...T) T {
	return values[c.Intn(len(values))]
}
