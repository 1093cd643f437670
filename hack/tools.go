//go:build tools

// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package hack pins the code generators in go.mod so hack/update-codegen.sh runs them at the
// same Kubernetes version as the libraries.
package hack

import (
	_ "k8s.io/code-generator"
	_ "k8s.io/kube-openapi/cmd/openapi-gen"
)
