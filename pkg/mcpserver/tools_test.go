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
	// The required arguments. sandbox_id is checked by the call, since the peer's
	// sandbox_claim_name may stand for it.
	want := map[string][]string{
		"create_sandbox": nil, "delete_sandbox": nil, "execute_command": {"command"},
		"upload_file": {"path", "content"}, "download_file": {"path"}, "list_files": {"path"},
		"file_exists": {"path"}, "http_request": nil, "get_sandbox_status": nil,
		"list_sandboxes": nil, "list_templates": nil, "suspend_sandbox": nil, "resume_sandbox": nil,
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
		for _, arg := range append(required, "sandbox_id", "sandbox_claim_name") {
			if _, ok := sc.Properties[arg]; !ok && (arg == "sandbox_id" || arg == "sandbox_claim_name") {
				continue // a tool that takes no sandbox
			}
			if !strings.Contains(string(sc.Properties[arg]), "description") {
				t.Errorf("%s: argument %s has no description: %s", tool.Name, arg, sc.Properties[arg])
			}
		}
	}
	for name := range want {
		t.Errorf("tool %s is missing", name)
	}
}

// TestAliases: the peer's argument names stand for ours; both given, they must agree.
func TestAliases(t *testing.T) {
	for _, tc := range []struct {
		t       target
		want    string
		wantErr string
	}{
		{target{SandboxID: "a"}, "a", ""},
		{target{SandboxClaimName: "a"}, "a", ""},
		{target{SandboxID: "a", SandboxClaimName: "a"}, "a", ""},
		{target{SandboxID: "a", SandboxClaimName: "b"}, "", "disagree"},
		{target{}, "", "sandbox_id is required"},
	} {
		got, err := tc.t.id()
		if got != tc.want || (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%+v: %q, %v; want %q, %q", tc.t, got, err, tc.want, tc.wantErr)
		}
	}
	if enc, err := binaryEncoding("", true); enc != encodingBase64 || err != nil {
		t.Errorf("binary: %q, %v; want base64", enc, err)
	}
	if _, err := binaryEncoding(encodingText, true); err == nil {
		t.Error("binary with encoding text was accepted")
	}
}
