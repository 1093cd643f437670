// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.x-k8s.agents.extensions.v1beta1
// +groupName=extensions.agents.x-k8s.io

// Package v1beta1 is the v1beta1 version of the extensions.agents.x-k8s.io API: the storage and
// preferred version.
package v1beta1
