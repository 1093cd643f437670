// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// A ControllerIdentity is who the server's own controllers are when they write to this
// server: a user known only inside this process. The strategies trust marks (warm-pool
// membership, template and claim identity, controller references to our kinds) only from it.
//
// The loopback user k8s.io/apiserver sets up (system:apiserver in system:masters) is not enough:
// a cluster admin can impersonate that name through kube-apiserver, and anyone in system:masters
// passes every authorization check. This identity is a user name no one else is given, matched
// together with a random UID made at start-up, and reached only with a random bearer token that
// never leaves the process: requests proxied by kube-apiserver carry the front proxy's user, never
// a token of ours, and a guessed name with a guessed UID does not match.

package trust

import (
	"context"
	"crypto/rand"
	"encoding/base64"

	"github.com/google/uuid"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	restclient "k8s.io/client-go/rest"
)

// ControllerUserName is the name the controllers authenticate as. The name alone proves nothing (see Is).
const ControllerUserName = "system:sandbox-apiserver:controllers"

// ControllerIdentity is the controllers' user in one server process.
type ControllerIdentity struct {
	user  *user.DefaultInfo
	token string
}

// NewControllerIdentity returns a fresh identity: a new UID and bearer token.
func NewControllerIdentity() *ControllerIdentity {
	secret := make([]byte, 32)
	// crypto/rand.Read never fails (Go 1.24 and later).
	_, _ = rand.Read(secret)
	return &ControllerIdentity{
		user: &user.DefaultInfo{
			Name: ControllerUserName,
			UID:  uuid.NewString(),
			// system:masters: the delegated authorizer lets the group through without asking the
			// cluster, as it does the loopback user.
			Groups: []string{user.AllAuthenticated, user.SystemPrivilegedGroup},
		},
		token: base64.RawURLEncoding.EncodeToString(secret),
	}
}

// Install makes authn accept the identity's token, before any other authenticator. A server
// without authentication (in-process tests) gets one: the token, else anonymous, so every other
// request is served as before and never mistaken for the controllers.
func (id *ControllerIdentity) Install(authn *genericapiserver.AuthenticationInfo) {
	tokens := authenticatorfactory.NewFromTokens(map[string]*user.DefaultInfo{id.token: id.user}, authn.APIAudiences)
	if authn.Authenticator == nil {
		authn.Authenticator = union.New(tokens, anonymous.NewAuthenticator(nil))
		return
	}
	authn.Authenticator = union.New(tokens, authn.Authenticator)
}

// ClientConfig is loopback (a client of this server) authenticated as the controllers.
func (id *ControllerIdentity) ClientConfig(loopback *restclient.Config) *restclient.Config {
	c := restclient.CopyConfig(loopback)
	c.BearerToken, c.BearerTokenFile = id.token, ""
	return c
}

// Is reports whether u is the controllers: name and this process's UID both match.
func (id *ControllerIdentity) Is(u user.Info) bool {
	return id != nil && u != nil && u.GetName() == ControllerUserName && u.GetUID() == id.user.UID
}

// InContext reports whether the request of ctx is the controllers'.
func (id *ControllerIdentity) InContext(ctx context.Context) bool {
	u, ok := genericapirequest.UserFrom(ctx)
	return ok && id.Is(u)
}

// WithUser returns ctx acting as the controllers, for writes the server makes on their behalf
// (a claim bound at create time).
func (id *ControllerIdentity) WithUser(ctx context.Context) context.Context {
	return genericapirequest.WithUser(ctx, id.user)
}
