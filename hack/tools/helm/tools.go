//go:build tools

// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package helm pins the helm command in go.mod.
package helm

import _ "helm.sh/helm/v3/cmd/helm"
