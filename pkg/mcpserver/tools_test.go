// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolSchemas: every tool has a description and an input schema whose properties and
// required fields are what a model must send (the embedded sandbox target included).
func TestToolSchemas(t *testing.T) {
	ctx := context.Background()
	s := &Server{opts: DefaultOptions(), callerOf: func(context.Context, mcp.Request) (*caller, error) { return nil, nil }}
	serverTransport, clientTransport := mcp.NewInMemoryTransports()
	if _, err := s.build().Connect(ctx, serverTransport, nil); err != nil {
		t.Fatal(err)
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, clientTransport, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	want := map[string][]string{ // the required arguments
		"create_sandbox": nil, "delete_sandbox": {"sandbox_id"}, "execute_command": {"sandbox_id", "command"},
		"upload_file": {"sandbox_id", "path", "content"}, "download_file": {"sandbox_id", "path"}, "list_files": {"sandbox_id", "path"},
		"file_exists": {"sandbox_id", "path"}, "http_request": {"sandbox_id"}, "get_sandbox_status": {"sandbox_id"},
		"list_sandboxes": nil, "list_templates": nil, "suspend_sandbox": {"sandbox_id"}, "resume_sandbox": {"sandbox_id"},
	}
	for _, tool := range tools.Tools {
		required, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		delete(want, tool.Name)
		if len(tool.Description) < 40 {
			t.Errorf("%s: description %q is too short to guide a model", tool.Name, tool.Description)
		}
		data, _ := json.Marshal(tool.InputSchema)
		var sc schema
		if err := json.Unmarshal(data, &sc); err != nil {
			t.Fatal(err)
		}
		slices.Sort(sc.Required)
		slices.Sort(required)
		if !slices.Equal(sc.Required, required) {
			t.Errorf("%s: required %v, want %v", tool.Name, sc.Required, required)
		}
		for _, arg := range required {
			if !strings.Contains(string(sc.Properties[arg]), "description") {
				t.Errorf("%s: argument %s has no description: %s", tool.Name, arg, sc.Properties[arg])
			}
		}
	}
	for name := range want {
		t.Errorf("tool %s is missing", name)
	}
}
