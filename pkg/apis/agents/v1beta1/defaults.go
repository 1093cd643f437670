// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1

import "k8s.io/utils/ptr"

// SetDefaults_SandboxSpec fills in what a Sandbox leaves unset: Retain on expiry, and replicas and
// operatingMode from each other (one replica, Running, when both are unset). Values that disagree
// are left for validation to refuse.
func SetDefaults_SandboxSpec(obj *SandboxSpec) {
	switch {
	case obj.Replicas == nil && obj.OperatingMode == OperatingModeSuspended:
		obj.Replicas = ptr.To[int32](0)
	case obj.Replicas == nil:
		obj.Replicas = ptr.To[int32](1)
	}
	if obj.OperatingMode == "" {
		switch *obj.Replicas {
		case 0:
			obj.OperatingMode = OperatingModeSuspended
		case 1:
			obj.OperatingMode = OperatingModeRunning
		}
	}
	if obj.ShutdownPolicy == nil {
		obj.ShutdownPolicy = ptr.To(ShutdownPolicyRetain)
	}
}
