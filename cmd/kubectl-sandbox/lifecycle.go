// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// newLifecycleCommand is a command that does act to each NAME it is given, with a timeout, and
// prints what it did the way kubectl does.
func newLifecycleCommand(o *options, use, short, long, done string, act func(*sandbox.Sandbox, context.Context) error) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   use + " NAME...",
		Short: short,
		Long:  long,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
			for _, name := range args {
				sb, err := o.open(ctx, name)
				if err != nil {
					return err
				}
				if err := act(sb, ctx); err != nil {
					return err
				}
				printDone(o.Out, sb, done)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait")
	return cmd
}

func newSuspendCommand(o *options) *cobra.Command {
	return newLifecycleCommand(o, "suspend", "Suspend a sandbox: stop its pod, keep its volumes",
		`Suspend a sandbox (its spec.operatingMode becomes Suspended) and wait until its pod is
gone. Needs the patch right on sandboxes.`, "suspended", (*sandbox.Sandbox).Suspend)
}

func newResumeCommand(o *options) *cobra.Command {
	return newLifecycleCommand(o, "resume", "Resume a suspended sandbox",
		`Resume a suspended sandbox (its spec.operatingMode becomes Running) and wait until it is
Ready. Needs the patch right on sandboxes; a request through its proxy also wakes it.`, "resumed", (*sandbox.Sandbox).Resume)
}

func newDeleteCommand(o *options) *cobra.Command {
	return newLifecycleCommand(o, "delete", "Delete a claim (and its sandbox), or a sandbox",
		"Delete a claim, and so its sandbox; or a sandbox named as sandbox/NAME.", "deleted", (*sandbox.Sandbox).Close)
}
