// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

func newCopyCommand(o *options) *cobra.Command {
	var container, maxBytes string
	cmd := &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy files and directories into and out of a sandbox",
		Long: `Copy a file or directory tree into or out of a sandbox, as kubectl cp does: the
sandbox side is written NAME:PATH (or NAMESPACE/NAME:PATH, sandbox/NAME:PATH,
sandboxclaim/NAME:PATH), and DST names the copy. The sandbox needs tar; the data
is streamed, and what comes out of a sandbox is written only below DST, at most
--max-bytes of file contents in all; sparse archive entries are refused.`,
		Example: `  kubectl sandbox cp ./data.csv mine:/work/data.csv
  kubectl sandbox cp mine:/work/results ./results
  kubectl sandbox cp team-a/mine:/work/out.log out.log`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			limit, err := parseMaxBytes(maxBytes)
			if err != nil {
				return err
			}
			src, err := parseFileSpec(args[0])
			if err != nil {
				return err
			}
			dst, err := parseFileSpec(args[1])
			if err != nil {
				return err
			}
			if src.remote() == dst.remote() {
				return errors.New("one of SRC and DST must be NAME:PATH in a sandbox, the other a local path")
			}
			remote := src
			if dst.remote() {
				remote = dst
			}
			client, namespace, err := o.client()
			if err != nil {
				return err
			}
			if remote.namespace != "" {
				namespace = remote.namespace
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			sb, err := client.Open(ctx, namespace, remote.name)
			if err != nil {
				return err
			}
			if container != "" {
				sb = sb.InContainer(container)
			}
			if dst.remote() {
				return sb.CopyTo(ctx, src.path, dst.path)
			}
			skipped, err := sb.CopyFrom(ctx, src.path, dst.path, sandbox.MaxBytes(limit))
			if skipped > 0 {
				fmt.Fprintf(o.ErrOut, "left out %d links pointing outside %s, devices or FIFOs\n", skipped, dst.path)
			}
			return err
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "the container (default: the sandbox's main container)")
	cmd.Flags().StringVar(&maxBytes, "max-bytes", resource.NewQuantity(sandbox.DefaultMaxCopyBytes, resource.BinarySI).String(),
		"the most bytes of file contents a copy out of the sandbox writes, as a quantity (512Mi, 20Gi)")
	return cmd
}

// parseMaxBytes reads --max-bytes: a positive quantity of bytes.
func parseMaxBytes(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("--max-bytes %q: %w", s, err)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return 0, fmt.Errorf("--max-bytes %q: want a positive whole number of bytes, such as 512Mi or 20Gi", s)
	}
	return n, nil
}

// fileSpec is one side of cp: a local path, or a path in the sandbox name (in namespace, when
// given).
type fileSpec struct {
	namespace, name, path string
}

func (f fileSpec) remote() bool { return f.name != "" }

// parseFileSpec reads a cp argument: PATH (local), or [NAMESPACE/]NAME:PATH or KIND/NAME:PATH
// with KIND sandbox or sandboxclaim, as kubectl cp writes a pod's side. A local path holding a
// colon can be written ./a:b.
func parseFileSpec(arg string) (fileSpec, error) {
	prefix, filePath, found := strings.Cut(arg, ":")
	if !found || strings.HasPrefix(arg, ".") || strings.HasPrefix(arg, "/") {
		if arg == "" {
			return fileSpec{}, errors.New("an empty path")
		}
		return fileSpec{path: arg}, nil
	}
	if prefix == "" {
		return fileSpec{}, fmt.Errorf("%q: the sandbox is missing before the colon (NAME:PATH)", arg)
	}
	if filePath == "" {
		return fileSpec{}, fmt.Errorf("%q: the path in the sandbox is missing after the colon (NAME:PATH)", arg)
	}
	first, rest, hasSlash := strings.Cut(prefix, "/")
	switch {
	case !hasSlash:
		return fileSpec{name: prefix, path: filePath}, nil
	case rest == "" || strings.Contains(rest, "/"):
		return fileSpec{}, fmt.Errorf("%q: want NAME:PATH or NAMESPACE/NAME:PATH", arg)
	}
	// sandbox/NAME and sandboxclaim/NAME say the kind; any other first part is a namespace.
	if kind, _, err := sandbox.ParseName(prefix); err == nil && kind != "" {
		return fileSpec{name: prefix, path: filePath}, nil
	}
	return fileSpec{namespace: first, name: rest, path: filePath}, nil
}
