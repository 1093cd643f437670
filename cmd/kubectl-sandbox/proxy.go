// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"time"

	"github.com/spf13/cobra"
)

func newProxyCommand(o *options) *cobra.Command {
	var (
		port      string
		localPort int
		printURL  bool
	)
	cmd := &cobra.Command{
		Use:   "proxy NAME [--port PORT] [--local-port N | --url]",
		Short: "Serve a sandbox's HTTP port on a local port, through the API server",
		Long: `Serve the sandbox's HTTP port on 127.0.0.1:LOCAL_PORT, as kubectl proxy does for the
API: each request (WebSockets too) goes through the proxy subresource of the claim (or
sandbox) with your credentials, and wakes a suspended sandbox. With --url, print the
subresource's URL instead (for kubectl get --raw or a client with your kubeconfig).`,
		Example: `  kubectl sandbox proxy mine --port http --local-port 8001 &
  curl http://127.0.0.1:8001/healthz
  kubectl get --raw "$(kubectl sandbox proxy mine --url)healthz"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			sb, err := o.open(ctx, args[0])
			if err != nil {
				return err
			}
			if printURL {
				fmt.Fprintln(o.Out, sb.ProxyURL(port, "").RequestURI())
				return nil
			}
			httpClient, err := sb.HTTPClient(port)
			if err != nil {
				return err
			}
			listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(localPort)))
			if err != nil {
				return err
			}
			server := &http.Server{
				Handler: &httputil.ReverseProxy{
					// The transport sends every request to the sandbox, whatever its URL says.
					Rewrite:   func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "sandbox" },
					Transport: httpClient.Transport,
				},
				ReadHeaderTimeout: 30 * time.Second,
			}
			fmt.Fprintf(o.Out, "Starting to serve %s on %s\n", resourceName(sb), listener.Addr())
			go func() {
				<-ctx.Done()
				shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = server.Shutdown(shutdown)
			}()
			if err := server.Serve(listener); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&port, "port", "", "the sandbox's port, a number or a name its pod declares (default: the first declared)")
	cmd.Flags().IntVar(&localPort, "local-port", 8001, "the local port to serve on (0: any free port)")
	cmd.Flags().BoolVar(&printURL, "url", false, "print the proxy subresource's path and exit")
	return cmd
}
