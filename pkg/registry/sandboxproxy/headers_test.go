// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxproxy

import (
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

func TestRewriteHeaders(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", UID: "alice-uid", Groups: []string{"team-a", "system:authenticated"}}
	tests := []struct {
		name string
		in   http.Header
		user user.Info
		// want is every header left, exactly.
		want http.Header
	}{
		{
			name: "credentials are dropped",
			in: http.Header{
				"Authorization": {"Bearer secret"}, "Proxy-Authorization": {"Basic x"}, "Cookie": {"session=1"},
				"Accept": {"text/plain"},
			},
			want: http.Header{"Accept": {"text/plain"}},
		},
		{
			name: "front proxy and impersonation headers are dropped",
			in: http.Header{
				"X-Remote-User": {"admin"}, "X-Remote-Group": {"system:masters"}, "X-Remote-Extra-Scopes": {"all"},
				"Impersonate-User": {"admin"}, "Impersonate-Group": {"system:masters"}, "Impersonate-Extra-Scopes": {"x"},
				"Impersonate-Uid": {"1"}, "Content-Type": {"application/json"},
			},
			want: http.Header{"Content-Type": {"application/json"}},
		},
		{
			name: "identity headers a client sent are replaced by the caller's",
			in: http.Header{
				"X-Sandbox-User": {"admin"}, "X-Sandbox-Group": {"system:masters"}, "X-Sandbox-Uid": {"0"},
				"X-Sandbox-Anything": {"forged"},
			},
			user: alice,
			want: http.Header{
				"X-Sandbox-User": {"alice"}, "X-Sandbox-Uid": {"alice-uid"}, "X-Sandbox-Group": {"team-a"},
			},
		},
		{
			name: "a user without UID gets no UID header",
			in:   http.Header{},
			user: &user.DefaultInfo{Name: "system:anonymous"},
			want: http.Header{"X-Sandbox-User": {"system:anonymous"}},
		},
		{
			name: "forwarding hints from the client are dropped",
			in: http.Header{
				"X-Forwarded-For": {"10.0.0.1"}, "X-Forwarded-Host": {"bank"}, "X-Forwarded-Proto": {"https"},
				"Forwarded": {"for=1.2.3.4"}, "X-Real-Ip": {"1.2.3.4"},
			},
			want: http.Header{},
		},
		{
			name: "hop-by-hop headers go, an upgrade keeps Connection and Upgrade",
			in: http.Header{
				"Connection": {"Upgrade, X-Secret"}, "Upgrade": {"websocket"}, "X-Secret": {"1"},
				"Keep-Alive": {"timeout=5"}, "Proxy-Connection": {"keep-alive"}, "Sec-Websocket-Key": {"k"},
			},
			want: http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}, "Sec-Websocket-Key": {"k"}},
		},
		{
			name: "Connection cannot remove the identity headers the proxy sets",
			in:   http.Header{"Connection": {"X-Sandbox-User, x-sandbox-group,X-Sandbox-Uid"}},
			user: alice,
			want: http.Header{
				"X-Sandbox-User": {"alice"}, "X-Sandbox-Uid": {"alice-uid"}, "X-Sandbox-Group": {"team-a"},
			},
		},
		{
			name: "nor on an upgrade",
			in:   http.Header{"Connection": {"keep-alive, Upgrade, X-Sandbox-User"}, "Upgrade": {"websocket"}},
			user: alice,
			want: http.Header{
				"Connection": {"Upgrade"}, "Upgrade": {"websocket"},
				"X-Sandbox-User": {"alice"}, "X-Sandbox-Uid": {"alice-uid"}, "X-Sandbox-Group": {"team-a"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.in.Clone()
			RewriteHeaders(h, tt.user)
			if !reflect.DeepEqual(h, tt.want) {
				t.Errorf("headers = %v; want %v", h, tt.want)
			}
		})
	}
}

// TestIdentityHeaderSpellings sends each identity or forwarding header a common server reads in
// every spelling a server may take for it (case, `_` for `-`), as it arrives in the request's
// header map (not canonicalised: Go keeps a name with `_` as sent).
func TestIdentityHeaderSpellings(t *testing.T) {
	names := []string{
		"X-Remote-User", "X-Remote-Group", "X-Remote-Extra-Scopes", "Impersonate-User", "Impersonate-Group",
		"Impersonate-Uid", "Impersonate-Extra-Scopes", "X-Sandbox-User", "X-Sandbox-Group", "X-Sandbox-Uid",
		"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Forwarded-Port", "X-Forwarded-Prefix",
		"X-Forwarded-User", "X-Forwarded-Email", "X-Forwarded-Groups", "X-Forwarded-Access-Token",
		"X-Forwarded-Preferred-Username", "X-Forwarded-Client-Cert", "Forwarded", "X-Real-Ip", "X-Client-Ip",
		"True-Client-Ip", "X-Auth-Request-User", "X-Auth-Request-Email", "X-Auth-Request-Groups",
		"X-Auth-Request-Access-Token", "X-Auth-Request-Preferred-Username", "Remote-User", "Remote-Groups",
		"Remote-Email", "X-Client-Cert", "X-Client-Verify", "X-Client-Dn", "X-Ssl-Client-Cert", "X-Ssl-Client-Dn",
		"Ssl-Client-Cert", "Ssl-Client-Verify", "X-Original-Url", "X-Original-Uri", "X-Original-Forwarded-For",
		"X-Webauth-User", "X-Webauth-Email", "X-Authenticated-User", "X-Authenticated-Groups", "X-User", "X-Email",
		"X-Amzn-Oidc-Identity", "X-Amzn-Oidc-Data", "X-Goog-Authenticated-User-Email", "X-Ms-Client-Principal-Name",
		"Cf-Access-Authenticated-User-Email", "X-Pomerium-Jwt-Assertion", "X-Consumer-Username", "X-Id-Token",
		"X-Access-Token", "X-Userinfo", "Authorization", "Proxy-Authorization", "Cookie",
	}
	for _, name := range names {
		lower := strings.ToLower(name)
		for _, spelling := range []string{
			name, lower, strings.ToUpper(name), strings.ReplaceAll(name, "-", "_"),
			strings.ReplaceAll(lower, "-", "_"), strings.ReplaceAll(strings.ToUpper(name), "-", "_"),
		} {
			h := http.Header{spelling: {"forged"}, "Accept": {"*/*"}}
			RewriteHeaders(h, &user.DefaultInfo{Name: "alice"})
			want := http.Header{"Accept": {"*/*"}, UserHeader: {"alice"}}
			if !reflect.DeepEqual(h, want) {
				t.Errorf("%s: headers = %v; want %v", spelling, h, want)
			}
		}
	}
}

// TestOrdinaryHeadersPass keeps the headers an application needs.
func TestOrdinaryHeadersPass(t *testing.T) {
	in := http.Header{
		"Accept": {"*/*"}, "Content-Type": {"application/json"}, "User-Agent": {"curl"}, "X-Request-Id": {"1"},
		"If-None-Match": {"x"}, "Sec-Websocket-Protocol": {"v1"}, "Traceparent": {"00-1-2-01"},
	}
	h := in.Clone()
	RewriteHeaders(h, nil)
	if !reflect.DeepEqual(h, in) {
		t.Errorf("headers = %v; want %v", h, in)
	}
}

// TestSystemGroupsPassOnlyWhenListed: system:masters never reaches sandbox code; a listed system:
// group does.
func TestSystemGroupsPassOnlyWhenListed(t *testing.T) {
	u := &user.DefaultInfo{Name: "root", Groups: []string{"admins", "system:masters", "system:authenticated"}}
	h := http.Header{}
	RewriteHeaders(h, u)
	if got := h.Values(GroupHeader); !slices.Equal(got, []string{"admins"}) {
		t.Errorf("groups passed by default %v; want [admins]", got)
	}
	h = http.Header{}
	RewriteHeaders(h, u, "system:authenticated")
	if got := h.Values(GroupHeader); !slices.Equal(got, []string{"admins", "system:authenticated"}) {
		t.Errorf("groups passed with system:authenticated listed %v", got)
	}
}
