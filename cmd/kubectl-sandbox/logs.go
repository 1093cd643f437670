// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

func newLogsCommand(o *options) *cobra.Command {
	var (
		opts      sandbox.LogOptions
		tail      int64
		limit     int64
		container string
		since     time.Duration
	)
	cmd := &cobra.Command{
		Use:     "logs [-f] [-c CONTAINER] NAME",
		Short:   "Print the logs of a sandbox",
		Example: "  kubectl sandbox logs -f mine",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			sb, err := o.open(ctx, args[0])
			if err != nil {
				return err
			}
			opts.Container, opts.Since = container, since
			if tail >= 0 {
				opts.TailLines = &tail
			}
			if limit > 0 {
				opts.LimitBytes = &limit
			}
			stream, err := sb.Logs(ctx, opts)
			if err != nil {
				return err
			}
			defer stream.Close()
			_, err = io.Copy(o.Out, stream)
			if ctx.Err() != nil {
				// Interrupted while following: not a failure.
				return nil
			}
			return err
		},
	}
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "stream new lines as they are written")
	cmd.Flags().BoolVarP(&opts.Previous, "previous", "p", false, "the log of the container's previous run")
	cmd.Flags().BoolVar(&opts.Timestamps, "timestamps", false, "prefix each line with its time")
	cmd.Flags().Int64Var(&tail, "tail", -1, "lines from the end to show (-1: all)")
	cmd.Flags().Int64Var(&limit, "limit-bytes", 0, "stop after this many bytes")
	cmd.Flags().DurationVar(&since, "since", 0, "only lines newer than this (e.g. 5m)")
	cmd.Flags().StringVarP(&container, "container", "c", "", "the container (default: the sandbox's main container)")
	return cmd
}
