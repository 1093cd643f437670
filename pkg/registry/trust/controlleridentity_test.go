// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package trust

import (
	"net/http"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapiserver "k8s.io/apiserver/pkg/server"
	restclient "k8s.io/client-go/rest"
)

// TestIdentity: the controllers' token authenticates as the one user Is accepts; nothing else
// does, not the same name with another UID nor another server's controllers.
func TestIdentity(t *testing.T) {
	id, other := NewControllerIdentity(), NewControllerIdentity()
	var authn genericapiserver.AuthenticationInfo
	id.Install(&authn)

	authenticate := func(token string) user.Info {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "https://localhost/apis", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, ok, err := authn.Authenticator.AuthenticateRequest(req)
		if err != nil || !ok {
			t.Fatalf("authenticating: ok %v, %v", ok, err)
		}
		return resp.User
	}
	loopback := &restclient.Config{Host: "https://localhost", BearerToken: "loopback"}
	if u := authenticate(id.ClientConfig(loopback).BearerToken); !id.Is(u) || u.GetName() != ControllerUserName {
		t.Errorf("the controllers' token authenticated as %v", u)
	}
	if loopback.BearerToken != "loopback" {
		t.Errorf("ClientConfig changed the loopback config")
	}
	if u := authenticate(""); id.Is(u) || u.GetName() != user.Anonymous {
		t.Errorf("a request without a token authenticated as %v, want anonymous", u)
	}
	for _, u := range []user.Info{
		&user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}},
		&user.DefaultInfo{Name: ControllerUserName, UID: "guessed", Groups: []string{user.SystemPrivilegedGroup}},
		other.user,
		nil,
	} {
		if id.Is(u) {
			t.Errorf("%v passed as the controllers", u)
		}
	}
	// With an authenticator already set, the token is tried first and the rest still answers.
	var chained genericapiserver.AuthenticationInfo
	chained.Authenticator = authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	})
	id.Install(&chained)
	req, _ := http.NewRequest(http.MethodGet, "https://localhost/apis", nil)
	if resp, ok, _ := chained.Authenticator.AuthenticateRequest(req); !ok || resp.User.GetName() != "alice" {
		t.Errorf("the existing authenticator no longer answers")
	}
}
