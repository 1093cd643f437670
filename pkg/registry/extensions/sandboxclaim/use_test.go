// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

func TestAuthorizeUse(t *testing.T) {
	// The authorizer grants alice the use of template "python" in namespace ns only.
	var asked []authorizer.Attributes
	rbac := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = append(asked, a)
		if a.GetUser().GetName() == "alice" && a.GetVerb() == "use" && a.GetAPIGroup() == extensions.GroupName &&
			a.GetResource() == "sandboxtemplates" && a.GetNamespace() == "ns" && a.GetName() == "python" && a.IsResourceRequest() {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	r := &REST{authorizer: rbac}
	for _, tc := range []struct {
		name, user, template string
		allowed              bool
	}{
		{"granted", "alice", "python", true},
		{"another template", "alice", "gpu", false},
		{"another user", "bob", "python", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			ctx := genericapirequest.WithUser(genericapirequest.WithNamespace(context.Background(), "ns"), &user.DefaultInfo{Name: tc.user})
			err := r.authorizeUse(ctx, &extensions.SandboxClaim{Spec: extensions.SandboxClaimSpec{TemplateRef: extensions.SandboxTemplateRef{Name: tc.template}}})
			if len(asked) != 1 {
				t.Fatalf("asked the authorizer %d times", len(asked))
			}
			if tc.allowed {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("want 403, got %v", err)
			}
			if msg := err.Error(); !strings.Contains(msg, `sandboxtemplates.extensions.agents.x-k8s.io "`+tc.template+`" is forbidden`) || !strings.Contains(msg, `"use"`) {
				t.Errorf("message does not name the template and the verb: %s", msg)
			}
		})
	}
}
