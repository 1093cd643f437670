// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

func newPortForwardCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "port-forward NAME [LOCAL_PORT:]REMOTE_PORT...",
		Short: "Forward local ports to a sandbox",
		Long: `Forward connections to 127.0.0.1:LOCAL_PORT to REMOTE_PORT of the sandbox, through the
portforward subresource, until interrupted. LOCAL_PORT 0 or :REMOTE_PORT picks a free port.`,
		Example: `  kubectl sandbox port-forward mine 8888:8888
  kubectl sandbox port-forward mine :8080`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			type pair struct{ local, remote int }
			var pairs []pair
			for _, spec := range args[1:] {
				local, remote, err := parsePortSpec(spec)
				if err != nil {
					return err
				}
				pairs = append(pairs, pair{local, remote})
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			sb, err := o.open(ctx, args[0])
			if err != nil {
				return err
			}
			var forwards []*sandbox.PortForward
			for _, p := range pairs {
				f, err := sb.PortForward(ctx, p.local, p.remote)
				if err != nil {
					return err
				}
				defer f.Close()
				forwards = append(forwards, f)
				// kubectl port-forward's words, which scripts wait for.
				fmt.Fprintf(o.Out, "Forwarding from 127.0.0.1:%d -> %d\n", f.LocalPort(), p.remote)
			}
			// Until interrupted, or until a forward breaks.
			ended := make(chan *sandbox.PortForward, len(forwards))
			for _, f := range forwards {
				go func() {
					<-f.Done()
					ended <- f
				}()
			}
			select {
			case <-ctx.Done():
				return nil
			case f := <-ended:
				if ctx.Err() != nil {
					return nil
				}
				if err := f.Err(); err != nil {
					return err
				}
				return fmt.Errorf("the forward from 127.0.0.1:%d ended", f.LocalPort())
			}
		},
	}
	return cmd
}

// parsePortSpec reads [LOCAL:]REMOTE; an empty or missing LOCAL is 0 (any free port) when
// written ":REMOTE", and REMOTE itself when there is no colon, as kubectl port-forward does.
func parsePortSpec(spec string) (local, remote int, err error) {
	localText, remoteText, found := strings.Cut(spec, ":")
	if !found {
		localText, remoteText = spec, spec
	}
	if remote, err = strconv.Atoi(remoteText); err != nil || remote < 1 || remote > 65535 {
		return 0, 0, fmt.Errorf("%q: the remote port must be a number from 1 to 65535", spec)
	}
	if localText == "" {
		return 0, remote, nil
	}
	if local, err = strconv.Atoi(localText); err != nil || local < 0 || local > 65535 {
		return 0, 0, fmt.Errorf("%q: the local port must be a number from 0 to 65535", spec)
	}
	return local, remote, nil
}
