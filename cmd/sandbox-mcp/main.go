// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Command sandbox-mcp serves agent sandboxes as Model Context Protocol tools, acting with the
// caller's own Kubernetes identity: over stdio (the default) the user's kubeconfig, over
// streamable HTTP (--http-address) each request's bearer token.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/mcpserver"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox-mcp:", err)
		os.Exit(1)
	}
}

func run() error {
	opts := mcpserver.DefaultOptions()
	httpOpts := mcpserver.DefaultHTTPOptions()
	var kubeconfig, kubeContext, namespace, httpAddress, certFile, keyFile string
	var insecureHTTP bool
	flags := pflag.NewFlagSet("sandbox-mcp", pflag.ContinueOnError)
	flags.StringVar(&kubeconfig, "kubeconfig", "", "the kubeconfig to use (default: KUBECONFIG, then ~/.kube/config); over HTTP only its cluster address and CA are used")
	flags.StringVar(&kubeContext, "context", "", "the kubeconfig context to use")
	flags.StringVarP(&namespace, "namespace", "n", "", "the namespace tools act in when a call names none (default: the context's namespace; over HTTP a ServiceAccount's own)")
	flags.StringVar(&httpAddress, "http-address", "", "serve streamable HTTP at /mcp on this address instead of stdio (:PORT means 127.0.0.1:PORT); every request needs a bearer token")
	flags.StringVar(&certFile, "tls-cert-file", "", "serve HTTPS with this certificate (with --tls-key-file)")
	flags.StringVar(&keyFile, "tls-key-file", "", "the key of --tls-cert-file")
	flags.DurationVar(&opts.ClaimLifetime, "claim-lifetime", opts.ClaimLifetime, "the shutdown time of the claims it makes, from their creation, unless a call asks for another")
	flags.DurationVar(&opts.MaxClaimLifetime, "max-claim-lifetime", opts.MaxClaimLifetime, "the longest shutdown time a call may ask for")
	flags.IntVar(&opts.MaxOutputBytes, "max-output-bytes", opts.MaxOutputBytes, "bytes of a command's stdout and of its stderr returned (beginning and end kept)")
	flags.IntVar(&opts.MaxFileBytes, "max-file-bytes", opts.MaxFileBytes, "the largest file written or read, and HTTP body")
	flags.IntVar(&opts.MaxListEntries, "max-list-entries", opts.MaxListEntries, "entries returned by a listing")
	flags.DurationVar(&opts.DefaultTimeout, "default-timeout", opts.DefaultTimeout, "the timeout of a command, a wait or an HTTP request when a call gives none")
	flags.DurationVar(&opts.MaxTimeout, "max-timeout", opts.MaxTimeout, "the longest timeout a call may give")
	flags.DurationVar(&httpOpts.SessionTimeout, "session-idle-timeout", httpOpts.SessionTimeout, "over HTTP, close a session idle this long")
	flags.DurationVar(&httpOpts.TokenReviewTTL, "token-review-ttl", httpOpts.TokenReviewTTL, "over HTTP, how long a bearer token found valid is trusted before it is reviewed again (a refused one: 10s)")
	flags.IntVar(&httpOpts.MaxSessionsPerUser, "max-sessions-per-user", httpOpts.MaxSessionsPerUser, "over HTTP, the open sessions one user may have; past it a new session gets a 429")
	flags.StringSliceVar(&httpOpts.AllowedOrigins, "allowed-origins", nil, "over HTTP, browser origins (scheme://host[:port]) besides the server's own whose requests are served; others get a 403")
	flags.BoolVar(&insecureHTTP, "insecure-http", false, "serve plain HTTP on an address that is not loopback: bearer tokens then cross the network in the clear (use TLS, or a mesh that provides it)")
	if err := flags.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if opts.MaxOutputBytes < 2 || opts.MaxFileBytes < 1 || opts.MaxListEntries < 1 || opts.DefaultTimeout <= 0 || opts.ClaimLifetime <= 0 {
		return errors.New("--max-output-bytes, --max-file-bytes, --max-list-entries, --default-timeout and --claim-lifetime must be positive")
	}
	if (certFile == "") != (keyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together")
	}
	if opts.MaxTimeout <= 0 || httpOpts.MaxSessionsPerUser < 1 {
		return errors.New("--max-timeout and --max-sessions-per-user must be positive")
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	config, err := loader.ClientConfig()
	if err != nil {
		return err
	}
	opts.DefaultNamespace = namespace
	if namespace == "" {
		if opts.DefaultNamespace, _, err = loader.Namespace(); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if httpAddress == "" {
		server, err := mcpserver.NewStdioServer(config, opts)
		if err != nil {
			return err
		}
		return server.Run(ctx, &mcp.StdioTransport{})
	}

	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpserver.NewHTTPHandler(config, opts, httpOpts))
	// A bare :PORT binds the loopback interface only: other hosts are let in by naming an
	// address.
	if host, port, err := net.SplitHostPort(httpAddress); err == nil && host == "" {
		httpAddress = net.JoinHostPort("127.0.0.1", port)
	}
	// Every request carries a bearer token: off the loopback interface they need TLS.
	if certFile == "" && !insecureHTTP && !loopback(httpAddress) {
		return fmt.Errorf("--http-address %s is not a loopback address: serve HTTPS (--tls-cert-file, --tls-key-file), or pass --insecure-http when something else encrypts the traffic", httpAddress)
	}
	listener, err := net.Listen("tcp", httpAddress)
	if err != nil {
		return err
	}
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	scheme := "http"
	if certFile != "" {
		scheme = "https"
	}
	// The address line tells a caller (and the tests) where to connect when the port was 0.
	slog.Info("serving MCP", "url", fmt.Sprintf("%s://%s/mcp", scheme, listener.Addr()))
	if certFile != "" {
		err = server.ServeTLS(listener, certFile, keyFile)
	} else {
		err = server.Serve(listener)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// loopback says whether address (host:port) is on the loopback interface only.
func loopback(address string) bool {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
