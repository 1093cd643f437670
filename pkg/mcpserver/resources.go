// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resources are the caller's sandboxes: sandbox://NAMESPACE/sandboxclaims/NAME for a claim,
// sandbox://NAMESPACE/sandboxes/NAME for a sandbox made without one. Reading one gives its
// status as JSON.
const (
	resourceScheme   = "sandbox://"
	resourceTemplate = resourceScheme + "{namespace}/{resource}/{name}"
	resourceMIMEType = "application/json"
)

func resourceURI(st sandboxStatus) string {
	resource, name := "sandboxclaims", st.SandboxID
	if st.Kind != "sandboxclaim" {
		resource, name = "sandboxes", st.SandboxName
	}
	return resourceScheme + st.Namespace + "/" + resource + "/" + name
}

func (s *Server) addResources(server *mcp.Server) {
	server.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "sandbox",
		Title:       "A sandbox of the caller",
		Description: "The status of a sandbox claim (resource sandboxclaims) or of a sandbox made without a claim (resource sandboxes), as JSON.",
		MIMEType:    resourceMIMEType,
		URITemplate: resourceTemplate,
	}, s.readResource)
	// The list depends on who asks, so it is answered per request rather than from the
	// server's fixed set of resources.
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			res, err := s.listResources(ctx, req)
			if err != nil {
				return nil, rpcError("the sandboxes of the caller", err)
			}
			return res, nil
		}
	})
}

func (s *Server) listResources(ctx context.Context, req mcp.Request) (*mcp.ListResourcesResult, error) {
	c, err := s.callerOf(ctx, req)
	if err != nil {
		return nil, err
	}
	list, err := s.sandboxesOf(ctx, c, c.namespace, false)
	if err != nil {
		return nil, err
	}
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	for _, st := range list.Sandboxes {
		state := "not ready"
		if st.Ready {
			state = "ready"
		} else if st.Suspended {
			state = "suspended"
		}
		res.Resources = append(res.Resources, &mcp.Resource{
			URI:         resourceURI(st),
			Name:        st.SandboxID,
			Description: fmt.Sprintf("%s %s in namespace %s, %s", st.Kind, st.SandboxID, st.Namespace, state),
			MIMEType:    resourceMIMEType,
		})
	}
	return res, nil
}

func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	parts := strings.Split(strings.TrimPrefix(uri, resourceScheme), "/")
	if !strings.HasPrefix(uri, resourceScheme) || len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	id := parts[2]
	switch parts[1] {
	case "sandboxclaims":
	case "sandboxes":
		id = "sandbox/" + id
	default:
		return nil, mcp.ResourceNotFoundError(uri)
	}
	c, err := s.callerOf(ctx, req)
	if err != nil {
		return nil, rpcError(uri, err)
	}
	sb, err := c.client.Open(ctx, parts[0], id)
	if err != nil {
		return nil, rpcError(uri, err)
	}
	st, err := status(ctx, c, sb)
	if err != nil {
		return nil, rpcError(uri, err)
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: resourceMIMEType, Text: string(data)}}}, nil
}
