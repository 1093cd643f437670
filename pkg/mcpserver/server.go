// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package mcpserver is sandbox-mcp: a Model Context Protocol server whose tools claim
// sandboxes, run commands in them, move files and reach their HTTP ports, always with the
// caller's own Kubernetes identity. Over stdio that is the user's kubeconfig; over streamable
// HTTP it is the bearer token of each request, so the server holds no rights of its own.
package mcpserver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"k8s.io/client-go/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/version"
)

const (
	// SessionLabel names, on every claim this server makes, the MCP session that made it.
	SessionLabel = "mcp.sandbox-apiserver.dev/session"
	// CreatedByValue is the SDK's created-by label value on claims this server makes.
	serverName = "sandbox-mcp"
)

// Options bound what the server's tools do.
type Options struct {
	// DefaultNamespace is where tools act when the call names no namespace.
	DefaultNamespace string
	// ClaimLifetime is the shutdown time given to claims made without shutdown_after_seconds.
	ClaimLifetime time.Duration
	// MaxClaimLifetime bounds shutdown_after_seconds.
	MaxClaimLifetime time.Duration
	// MaxOutputBytes bounds each of a command's stdout and stderr (head and tail kept).
	MaxOutputBytes int
	// MaxFileBytes bounds a file written or read, and an HTTP body.
	MaxFileBytes int
	// MaxListEntries bounds listings.
	MaxListEntries int
	// DefaultTimeout bounds a command, a wait for a sandbox and an HTTP request when the call
	// gives no timeout; MaxTimeout bounds what a call may give.
	DefaultTimeout, MaxTimeout time.Duration
}

// DefaultOptions are the bounds sandbox-mcp starts with.
func DefaultOptions() Options {
	return Options{
		DefaultNamespace: "default",
		ClaimLifetime:    time.Hour,
		MaxClaimLifetime: 24 * time.Hour,
		MaxOutputBytes:   64 << 10,
		MaxFileBytes:     1 << 20,
		MaxListEntries:   1000,
		DefaultTimeout:   60 * time.Second,
		MaxTimeout:       10 * time.Minute,
	}
}

// caller is whom a tool call acts for.
type caller struct {
	client    *sandbox.Client
	namespace string // the default namespace for this caller
	session   string // the label value naming the MCP session
}

// callerFunc resolves the caller of a request.
type callerFunc func(ctx context.Context, req mcp.Request) (*caller, error)

// Server holds the tools' options and how to find each request's caller.
type Server struct {
	opts     Options
	callerOf callerFunc
	// created is what each session made, by UID.
	created createdClaims
}

// NewStdioServer returns the MCP server for one local user: every call acts with config (the
// user's kubeconfig), and the claims it makes carry one session label for the process.
func NewStdioServer(config *rest.Config, opts Options) (*mcp.Server, error) {
	client, err := sandbox.NewClient(config)
	if err != nil {
		return nil, err
	}
	self := &caller{client: client, namespace: opts.DefaultNamespace, session: strings.ToLower(rand.Text())}
	s := &Server{opts: opts, callerOf: func(context.Context, mcp.Request) (*caller, error) { return self, nil }}
	return s.build(), nil
}

// build makes the MCP server with the tools and resources.
func (s *Server) build() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: serverName, Title: "Agent sandboxes", Version: version.Get().GitVersion}, &mcp.ServerOptions{
		Instructions: instructions,
	})
	s.addTools(server)
	s.addResources(server)
	// No call outlives the longest timeout a tool accepts by much, whatever it waits on.
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, cancel := context.WithTimeout(ctx, s.opts.MaxTimeout+callMargin)
			defer cancel()
			return next(ctx, method, req)
		}
	})
	return server
}

const instructions = `Tools for agent sandboxes on Kubernetes: isolated machines to run code in.
Start with list_sandboxes (or create_sandbox with a template_name or warm_pool; list_templates
shows what exists), then execute_command, upload_file, download_file, list_files, file_exists and
http_request on the sandbox_id that create_sandbox returned, and delete_sandbox when done.
Everything acts with the caller's own Kubernetes rights.`

// timeout is the call's timeout in seconds, or the default, bounded by MaxTimeout.
func (s *Server) timeout(seconds float64) (time.Duration, error) {
	if seconds < 0 {
		return 0, errors.New("timeout_seconds must not be negative")
	}
	if seconds == 0 {
		return s.opts.DefaultTimeout, nil
	}
	d := time.Duration(seconds * float64(time.Second))
	if d > s.opts.MaxTimeout {
		return 0, fmt.Errorf("timeout_seconds %v is over this server's limit of %v seconds", seconds, s.opts.MaxTimeout.Seconds())
	}
	return d, nil
}
