// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.x-k8s.agents.v1alpha1
// +groupName=agents.x-k8s.io

// Package v1alpha1 is the v1alpha1 version of the agents.x-k8s.io API. It is served for manifests
// written against it and has the same shape as v1beta1; objects are stored as v1beta1.
package v1alpha1
