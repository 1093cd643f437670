//go:build tools

// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package hack pins the code generators in go.mod so hack/update-codegen.sh runs them at the
// same Kubernetes version as the libraries; go-to-protobuf also needs protoc-gen-gogo and
// goimports.
package hack

import (
	_ "golang.org/x/tools/cmd/goimports"
	_ "k8s.io/code-generator"
	_ "k8s.io/code-generator/cmd/go-to-protobuf"
	_ "k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo"
	_ "k8s.io/kube-openapi/cmd/openapi-gen"
)
