// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package common holds what the registries of all four kinds share: the constant parts of their
// strategies, the main REST endpoint with its short names and category (Strategy, REST), the
// status and scale subresources served from the kind's own store (StatusREST, ScaleREST), and the
// tables kubectl get prints (TableConvertor).
package common
