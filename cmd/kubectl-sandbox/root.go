// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// streams are the plugin's standard streams.
type streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// options are what every command shares: kubectl's global flags and the streams.
type options struct {
	config *genericclioptions.ConfigFlags
	streams
}

func newRootCommand(s streams) *cobra.Command {
	o := &options{config: genericclioptions.NewConfigFlags(true), streams: s}
	root := &cobra.Command{
		Use:   "kubectl-sandbox",
		Short: "Claim agent sandboxes and work inside them",
		Long: `Claim agent sandboxes and work inside them: run commands, copy files, follow logs,
forward ports and proxy HTTP, through the Kubernetes API with your own rights.

NAME is a SandboxClaim or a Sandbox: a bare NAME is looked up as a claim first, then as a
sandbox; sandboxclaim/NAME and sandbox/NAME say which.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl sandbox"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	o.config.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newClaimCommand(o),
		newExecCommand(o),
		newLogsCommand(o),
		newCopyCommand(o),
		newPortForwardCommand(o),
		newProxyCommand(o),
		newSuspendCommand(o),
		newResumeCommand(o),
		newDeleteCommand(o),
	)
	return root
}

// client is the SDK client of the global flags, and the namespace they name.
func (o *options) client() (*sandbox.Client, string, error) {
	config, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	namespace, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	client, err := sandbox.NewClient(config)
	if err != nil {
		return nil, "", err
	}
	return client, namespace, nil
}

// open is the sandbox handle of name (see the root command's help).
func (o *options) open(ctx context.Context, name string) (*sandbox.Sandbox, error) {
	client, namespace, err := o.client()
	if err != nil {
		return nil, err
	}
	return client.Open(ctx, namespace, name)
}

// signalContext is ctx cancelled by the first SIGINT or SIGTERM.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// resourceName is how kubectl names the object of a handle, sandboxclaim.extensions.agents.x-k8s.io/NAME.
func resourceName(sb *sandbox.Sandbox) string {
	if sb.Kind() == sandbox.KindClaim {
		return "sandboxclaim.extensions.agents.x-k8s.io/" + sb.Name()
	}
	return "sandbox.agents.x-k8s.io/" + sb.Name()
}

func printDone(w io.Writer, sb *sandbox.Sandbox, what string) {
	fmt.Fprintf(w, "%s %s\n", resourceName(sb), what)
}
