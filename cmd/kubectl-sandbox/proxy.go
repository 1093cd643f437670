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
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newProxyCommand(o *options) *cobra.Command {
	var (
		port        string
		localPort   int
		printURL    bool
		acceptHosts string
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
			accept, err := hostFilter(acceptHosts)
			if err != nil {
				return err
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
				Handler: accept(&httputil.ReverseProxy{
					// The transport sends every request to the sandbox, whatever its URL says.
					Rewrite:   func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "sandbox" },
					Transport: httpClient.Transport,
				}),
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
	cmd.Flags().StringVar(&acceptHosts, "accept-hosts", defaultAcceptHosts,
		"comma-separated regular expressions of the Host names served, as for kubectl proxy; others get a 403 (a web page whose name rebinds to 127.0.0.1 is not served)")
	return cmd
}

// defaultAcceptHosts are kubectl proxy's: loopback names only.
const defaultAcceptHosts = `^localhost$,^127\.0\.0\.1$,^\[::1\]$`

// hostFilter returns what serves only requests whose Host name (without port) matches one of the
// comma-separated expressions: the local port carries the user's credentials, and a page a
// browser loaded from a name that resolves to 127.0.0.1 would otherwise drive the sandbox
// with them (DNS rebinding).
func hostFilter(expressions string) (func(http.Handler) http.Handler, error) {
	var accepted []*regexp.Regexp
	for _, e := range strings.Split(expressions, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, fmt.Errorf("--accept-hosts: %w", err)
		}
		accepted = append(accepted, re)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
				if strings.Contains(h, ":") {
					host = "[" + h + "]"
				}
			}
			for _, re := range accepted {
				if re.MatchString(host) {
					next.ServeHTTP(w, r)
					return
				}
			}
			http.Error(w, fmt.Sprintf("Host %q is not accepted by kubectl sandbox proxy (--accept-hosts)", r.Host), http.StatusForbidden)
		})
	}, nil
}
