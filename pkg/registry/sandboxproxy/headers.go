// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxproxy

import (
	"net/http"
	"net/textproto"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
)

// The headers that tell the sandbox who made a proxied request, as kube-apiserver authenticated
// them. The proxy always sets them itself: one the client sent is dropped.
const (
	// UserHeader is the caller's user name.
	UserHeader = "X-Sandbox-User"
	// UIDHeader is the caller's UID, when the authenticator gave one.
	UIDHeader = "X-Sandbox-Uid"
	// GroupHeader is one of the caller's groups; it is repeated once per group.
	GroupHeader = "X-Sandbox-Group"

	identityPrefix = "X-Sandbox-"
)

// droppedHeaders are request headers never forwarded to a sandbox: the client's credentials for
// the API server (or anything in front of it), and hop-by-hop headers that ReverseProxy does not
// already remove on every path (an upgrade is forwarded by a raw dial).
var droppedHeaders = []string{
	"Authorization",
	"Proxy-Authorization",
	"Cookie",
	"Proxy-Connection",
	"Keep-Alive",
	// Client-written hints a sandbox might believe; the proxy sets X-Forwarded-For itself.
	"Forwarded",
	"X-Forwarded-For",
	"X-Forwarded-Host",
	"X-Forwarded-Proto",
	"X-Real-Ip",
}

// droppedPrefixes are header families never forwarded: the front-proxy identity headers
// (X-Remote-User, X-Remote-Group, X-Remote-Extra-*), impersonation, and our own identity headers.
var droppedPrefixes = []string{"X-Remote-", "Impersonate-", identityPrefix}

// RewriteHeaders removes from h every header a sandbox must not get from the client, and sets the
// identity headers from u (nil: none). The front proxy's identity headers, whatever names it is
// configured with, are already gone: the request-header authenticator clears them.
func RewriteHeaders(h http.Header, u user.Info) {
	// Headers the client marked hop-by-hop in Connection go too, except Upgrade, which an upgrade
	// needs to reach the sandbox.
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name != "" && !strings.EqualFold(name, "Upgrade") {
				h.Del(name)
			}
		}
	}
	for _, name := range droppedHeaders {
		h.Del(name)
	}
	for name := range h {
		for _, prefix := range droppedPrefixes {
			if strings.HasPrefix(textproto.CanonicalMIMEHeaderKey(name), prefix) {
				delete(h, name)
			}
		}
	}
	if u == nil {
		return
	}
	h.Set(UserHeader, u.GetName())
	if uid := u.GetUID(); uid != "" {
		h.Set(UIDHeader, uid)
	}
	for _, g := range u.GetGroups() {
		h.Add(GroupHeader, g)
	}
}
