// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandbox is a Go client for agent sandboxes served by sandbox-apiserver: it claims a
// sandbox from a template or a warm pool, waits until it is Ready, runs commands in it, moves
// files in and out, follows its logs, forwards ports to it, talks HTTP to it and suspends,
// resumes and releases it.
//
// Everything goes through the Kubernetes API, as kubectl does, with the caller's own identity and
// RBAC rights: the claim is a SandboxClaim created with the generated clientset, and commands,
// files, logs and port-forwards use the claim's exec, log and portforward subresources (or the
// Sandbox's, for a sandbox opened by its own name) through client-go's streaming packages
// (WebSocket, falling back to SPDY). HTTP goes through the proxy subresource. A tenant who may
// only create claims therefore needs no right on pods:
//
//	rules:
//	- apiGroups: [extensions.agents.x-k8s.io]
//	  resources: [sandboxclaims]
//	  verbs: [get, list, watch, create, delete]
//	- apiGroups: [extensions.agents.x-k8s.io]
//	  resources: [sandboxtemplates]
//	  verbs: [use]
//	- apiGroups: [extensions.agents.x-k8s.io]
//	  resources: [sandboxclaims/exec, sandboxclaims/log, sandboxclaims/portforward, sandboxclaims/proxy]
//	  verbs: [get, create]
//
// A typical session:
//
//	client, err := sandbox.NewClient(restConfig)
//	sb, err := client.Claim(ctx, "team-a", sandbox.FromTemplate("python-runtime-template"))
//	defer sb.Close(context.Background())
//	res, err := sb.Run(ctx, "python3", "-c", "print(6*7)")
//	fmt.Print(res.Stdout) // 42
//
// Files move as a tar stream over exec, as kubectl cp does: the sandbox needs tar, nothing is
// held in memory whole, and what comes out of a sandbox is extracted only below the destination
// directory (through an os.Root), whatever the archive says.
//
// Requests that may be repeated safely are retried: reads, watches and patches on conflicts,
// throttling (429 with Retry-After) and transient server errors. Commands are run once.
//
// Each operation is an OpenTelemetry span from the client's TracerProvider (the global one by
// default). A claim records the trace context of its creation in its annotation
// opentelemetry.io/trace-context, which the server's controllers continue; later operations on
// the sandbox are spans of that trace unless the caller's context already carries one.
package sandbox
