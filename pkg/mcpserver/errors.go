// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// explain turns the error of doing what into one that tells a model what to do next.
func explain(what string, err error) error {
	var failed *sandbox.ClaimFailedError
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: %v. sandbox-mcp acts with the caller's own Kubernetes identity and has no rights of its own: "+
			"ask a cluster administrator for a Role granting that right, or work in a namespace where you have it (the namespace argument)", what, err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s: %v. Call list_sandboxes to see the sandboxes you can use (list_templates for templates and warm pools), "+
			"or pass the namespace argument if it is in another namespace", what, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: the cluster refused the caller's credentials (%v): send a fresh bearer token, or log in again with your kubeconfig", what, err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return fmt.Errorf("%s: the cluster refused the request: %v. Fix the argument it names and call again", what, err)
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%s: %v. Choose another name, or leave name out to have one generated", what, err)
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("%s: the cluster is throttling requests (%v): wait a few seconds and call again", what, err)
	case errors.As(err, &failed) && failed.Reason == extensionsv1beta1.ClaimReasonTemplateNotFound:
		return fmt.Errorf("%s: %v. Call list_templates to see the templates and warm pools of the namespace", what, err)
	case errors.As(err, &failed):
		return fmt.Errorf("%s: %v. Delete it with delete_sandbox and create another", what, err)
	case errors.As(err, new(*net.OpError)):
		return fmt.Errorf("%s: the cluster could not be reached (%v): check the server address of sandbox-mcp's kubeconfig, or try again later", what, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: timed out (%v). Call get_sandbox_status to see where it stands, or call again with a larger timeout_seconds", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// rpcError is err as a JSON-RPC error of a resource request (a tool's errors are results with
// isError set; a resource's are protocol errors and need a code): a resource that is not there or
// not the caller's to see is not found, bad arguments are invalid params, anything else internal.
func rpcError(uri string, err error) error {
	var rpc *jsonrpc.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rpc):
		return err
	case apierrors.IsNotFound(err):
		return &jsonrpc.Error{Code: mcp.CodeResourceNotFound, Message: explain("reading "+uri, err).Error()}
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: explain("reading "+uri, err).Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: explain("reading "+uri, err).Error()}
}
