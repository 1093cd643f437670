// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// kubectl-sandbox is the kubectl plugin `kubectl sandbox`: claim a sandbox, run commands in it,
// copy files, follow its logs, forward ports and proxy HTTP to it, suspend, resume and delete
// it. It is a thin shell over the Go SDK (pkg/sdk/sandbox) and takes kubectl's global flags.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

func main() {
	cmd := newRootCommand(streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	err := cmd.Execute()
	if err == nil {
		return
	}
	// A remote command's exit code is the plugin's, as with kubectl exec.
	var exit *sandbox.ExitError
	if errors.As(err, &exit) {
		os.Exit(exit.Code)
	}
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}
