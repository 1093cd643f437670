// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandboxstream serves what the exec, attach, log and portforward subresources of
// Sandboxes and SandboxClaims share. Each forwards to the same subresource of the Sandbox's own
// pod (the pod the Sandbox's UID controls, never one the request names) through the cluster's
// kube-apiserver, with this server's identity, so the kubelet's streaming protocols (WebSocket
// v5.channel.k8s.io and SPDY) pass unchanged and client-go's remotecommand and portforward work
// against them. Exec, attach and portforward are authorized as kube-apiserver authorizes pods/exec:
// create on the subresource whatever the method; they wake a suspended sandbox and count as its
// activity while they last.
package sandboxstream
