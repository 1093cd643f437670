// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// getter answers Get from objs, and with err for any other name.
type getter struct {
	objs map[string]runtime.Object
	err  error
}

func (g getter) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if obj, ok := g.objs[name]; ok {
		return obj, nil
	}
	if g.err != nil {
		return nil, g.err
	}
	return nil, apierrors.NewNotFound(extensions.Resource("things"), name)
}

func TestResolve(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("etcd is unreachable")
	pools := getter{objs: map[string]runtime.Object{
		"pool": &extensions.SandboxWarmPool{Spec: extensions.SandboxWarmPoolSpec{TemplateRef: extensions.SandboxTemplateRef{Name: "python"}}},
	}}
	templates := getter{objs: map[string]runtime.Object{"python": &extensions.SandboxTemplate{}}}
	byPool := func(pool string) *extensions.SandboxClaim {
		return &extensions.SandboxClaim{Spec: extensions.SandboxClaimSpec{WarmPoolRef: &extensions.SandboxWarmPoolRef{Name: pool}}}
	}
	for _, tc := range []struct {
		name         string
		refs         *References
		claim        *extensions.SandboxClaim
		wantTemplate string
		wantErr      error
	}{
		{"by pool: the pool's template", &References{Pools: pools, Templates: templates}, byPool("pool"), "python", nil},
		{"a pool that does not exist is left to validation", &References{Pools: pools, Templates: templates}, byPool("missing"), "", nil},
		{"a pool that cannot be read", &References{Pools: getter{err: unavailable}, Templates: templates}, byPool("other"), "", unavailable},
		{"a template that cannot be read", &References{Pools: pools, Templates: getter{err: unavailable}},
			&extensions.SandboxClaim{Spec: extensions.SandboxClaimSpec{TemplateRef: extensions.SandboxTemplateRef{Name: "gpu"}}}, "gpu", unavailable},
		{"no references to read", nil, byPool("pool"), "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.refs.resolve(context.Background(), tc.claim)
			if err != tc.wantErr {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if got := tc.claim.Spec.TemplateRef.Name; got != tc.wantTemplate {
				t.Errorf("template %q, want %q", got, tc.wantTemplate)
			}
		})
	}
}
