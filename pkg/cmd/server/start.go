// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"fmt"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/version"
)

// NewCommand returns the sandbox-apiserver command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "sandbox-apiserver",
		Short: "An aggregated Kubernetes API server for agent sandboxes",
		Long: `sandbox-apiserver serves Sandbox (agents.x-k8s.io) and SandboxClaim, SandboxTemplate and
SandboxWarmPool (extensions.agents.x-k8s.io) from its own etcd, behind the cluster's
kube-apiserver through APIServices. Without --etcd-servers it runs an embedded etcd that keeps
its data in --etcd-data-dir.`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.PrintVersion {
				fmt.Fprintln(cmd.OutOrStdout(), version.Get())
				return nil
			}
			return o.Run(genericapiserver.SetupSignalContext())
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.AddCommand(newE2BKeyCommand())
	return cmd
}
