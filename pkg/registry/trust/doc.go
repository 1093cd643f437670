// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package trust decides who may write what the controllers trust: the server's own controllers
// have an identity no one else is given (ControllerIdentity), and the marks only they may set
// (SandboxMarks, ClaimMarks) are refused from anyone else.
package trust
