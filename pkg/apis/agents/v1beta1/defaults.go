// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1

import "k8s.io/utils/ptr"

// SetDefaults_SandboxSpec fills in what a Sandbox leaves unset: one replica, Retain on expiry.
func SetDefaults_SandboxSpec(obj *SandboxSpec) {
	if obj.Replicas == nil {
		obj.Replicas = ptr.To[int32](1)
	}
	if obj.ShutdownPolicy == nil {
		obj.ShutdownPolicy = ptr.To(ShutdownPolicyRetain)
	}
}
