// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxproxy

import (
	"net/http"
	"reflect"
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
				"X-Sandbox-User": {"alice"}, "X-Sandbox-Uid": {"alice-uid"}, "X-Sandbox-Group": {"team-a", "system:authenticated"},
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
			want: http.Header{"Connection": {"Upgrade, X-Secret"}, "Upgrade": {"websocket"}, "Sec-Websocket-Key": {"k"}},
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
