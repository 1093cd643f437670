// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package
// +groupName=agents.x-k8s.io

// Package agents holds the internal (hub) types of the agents.x-k8s.io group. Every served version
// converts to and from these; validation and strategies work on them only.
package agents
