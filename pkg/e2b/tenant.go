// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2b

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/rest"

	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// A tenant's requests go to this server's own API through its loopback, impersonating the key's
// identity: authorization (RBAC, through the delegated authorizer), admission (the templates'
// "use", quotas) and the strategies (trust marks, validation) see that user, exactly as for the
// same request made with kubectl. The loopback identity may impersonate inside this server only;
// it holds no right in the cluster.

// tenantCache holds one client per identity.
type tenantCache struct {
	mu      sync.Mutex
	clients map[string]*sandbox.Client
}

// tenantClient is the Go SDK client acting as id.
func (s *Server) tenantClient(id *Identity) (*sandbox.Client, error) {
	key := id.User.GetName() + "\x00" + strings.Join(id.User.GetGroups(), "\x00")
	s.tenants.mu.Lock()
	defer s.tenants.mu.Unlock()
	if c, ok := s.tenants.clients[key]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(s.loopback)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: id.User.GetName(), Groups: id.User.GetGroups()}
	c, err := sandbox.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	if s.tenants.clients == nil {
		s.tenants.clients = map[string]*sandbox.Client{}
	}
	s.tenants.clients[key] = c
	return c, nil
}

// authorizedUser is id's user as the API server would see it: authenticated users are in
// system:authenticated, so RBAC bound to that group applies to the endpoint's own checks too.
func authorizedUser(id *Identity) user.Info {
	groups := id.User.GetGroups()
	if !slices.Contains(groups, user.AllAuthenticated) {
		groups = append(slices.Clone(groups), user.AllAuthenticated)
	}
	return &user.DefaultInfo{Name: id.User.GetName(), Groups: groups}
}

// errForbidden is a refusal of the authorizer; its message names the right that is missing.
type errForbidden struct{ message string }

func (e *errForbidden) Error() string { return e.message }

// authorizeClaim asks whether id may verb the claim name's subresource ("" for the claim itself).
func (s *Server) authorizeClaim(ctx context.Context, id *Identity, verb, subresource, name string) error {
	attrs := authorizer.AttributesRecord{
		User: authorizedUser(id), Verb: verb, Namespace: id.Namespace, APIGroup: extensionsv1beta1.GroupName,
		APIVersion: "v1beta1", Resource: "sandboxclaims", Subresource: subresource, Name: name, ResourceRequest: true,
	}
	decision, reason, err := s.authorizer.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	resource := "sandboxclaims"
	if subresource != "" {
		resource += "/" + subresource
	}
	msg := fmt.Sprintf("user %q may not %s %s.%s %q in namespace %s", id.User.GetName(), verb, resource, extensionsv1beta1.GroupName, name, id.Namespace)
	if reason != "" {
		msg += ": " + reason
	} else if err != nil {
		msg += ": " + err.Error()
	}
	return &errForbidden{message: msg}
}
