// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package controllers holds what the controllers embedded in sandbox-apiserver share, one
// controller per package beside it: the names --controllers knows them by, the work loop each
// runs (WorkLoop), the statuses each last wrote (WrittenStatus), and Sandboxes made from a
// template the one way both the claim and the warm pool controllers make them.
package controllers

// Names of the controllers in --controllers, logs and metrics.
const (
	Sandbox         = "sandbox"
	SandboxTemplate = "sandboxtemplate"
	SandboxWarmPool = "sandboxwarmpool"
	SandboxClaim    = "sandboxclaim"
	// NamespaceCleanup deletes the objects left in namespaces the cluster no longer has.
	NamespaceCleanup = "namespacecleanup"
)

// All lists every controller.
var All = []string{Sandbox, SandboxTemplate, SandboxWarmPool, SandboxClaim, NamespaceCleanup}

// Extensions are the controllers of the extensions group, which --extensions=false turns off.
var Extensions = []string{SandboxTemplate, SandboxWarmPool, SandboxClaim}
