// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// TestExplain: each kind of failure tells the model what to do next.
func TestExplain(t *testing.T) {
	claims := schema.GroupResource{Group: "extensions.agents.x-k8s.io", Resource: "sandboxclaims"}
	cases := []struct {
		err  error
		want []string
	}{
		{apierrors.NewForbidden(claims, "", errors.New(`User "u" cannot create resource "sandboxclaims"`)), []string{`cannot create resource "sandboxclaims"`, "Role", "namespace"}},
		{fmt.Errorf("opening: %w", apierrors.NewNotFound(claims, "mine")), []string{`"mine" not found`, "list_sandboxes"}},
		{apierrors.NewUnauthorized("bad token"), []string{"bearer token"}},
		{apierrors.NewAlreadyExists(claims, "mine"), []string{"another name"}},
		{&sandbox.ClaimFailedError{Object: "sandboxclaim/x", Reason: "TemplateNotFound", Message: "no template y"}, []string{"list_templates"}},
		{&url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}, []string{"could not be reached"}},
		{context.DeadlineExceeded, []string{"get_sandbox_status", "timeout_seconds"}},
	}
	for _, tc := range cases {
		got := explain("doing it", tc.err).Error()
		for _, want := range tc.want {
			if !strings.Contains(got, want) {
				t.Errorf("explain(%v) = %q, want it to say %q", tc.err, got, want)
			}
		}
	}
	if explain("x", nil) != nil {
		t.Error("explain of nil is not nil")
	}
}
