// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Command sandbox-apiserver is the aggregated API server for agent sandboxes.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/cmd/server"
)

func main() {
	os.Exit(cli.Run(server.NewCommand()))
}
