// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandboxproxy holds the rules the sandboxes/proxy and sandboxclaims/proxy subresources
// share: which address they may dial, which headers pass, and whose identity they carry.
package sandboxproxy

import (
	"context"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

// Waker is what the proxy calls before it dials a sandbox, and around each proxied request.
type Waker interface {
	// Wake returns the sandbox once its pod is Ready: at once when it already is; otherwise it
	// resumes a suspended sandbox (once, however many callers wait) and waits for its pod, within
	// the server's wake timeout. Past the timeout it returns a 503 status error with Retry-After.
	Wake(ctx context.Context, sandbox *agents.Sandbox) (*agents.Sandbox, error)
	// Begin records that a proxied request or connection to the sandbox has started; the
	// returned func records its end. Activity is what keeps an idle timeout from suspending it.
	Begin(sandbox *agents.Sandbox) (end func())
}
