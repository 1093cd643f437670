// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package
// +groupName=extensions.agents.x-k8s.io

// Package extensions holds the internal (hub) types of the extensions.agents.x-k8s.io group:
// SandboxClaim, SandboxTemplate and SandboxWarmPool.
package extensions
