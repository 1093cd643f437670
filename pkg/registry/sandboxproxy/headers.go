// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxproxy

import (
	"net/http"
	"net/textproto"
	"slices"
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
)

// Header names are compared as the servers behind the proxy compare them: without case, and with
// `_` and `-` alike (CGI, PHP, WSGI and nginx's underscores_in_headers turn both into `_`, so a
// client's X_Remote_User reads as X-Remote-User there). normalHeader is that form: lower case,
// `-` only.
func normalHeader(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// droppedHeaders are request headers (in normalHeader form) never forwarded to a sandbox: the
// client's credentials for the API server, hop-by-hop headers that ReverseProxy does not remove
// on every path (an upgrade is forwarded by a raw dial), and the single headers by which common
// servers, frameworks and authenticating proxies read who the caller is or where it came from.
var droppedHeaders = []string{
	"authorization", "proxy-authorization", "cookie", "proxy-connection", "keep-alive",
	// Forwarding (RFC 7239 and the de facto ones); the proxy sets X-Forwarded-For itself.
	"forwarded", "x-real-ip", "x-client-ip", "client-ip", "true-client-ip", "cf-connecting-ip",
	"fastly-client-ip", "x-cluster-client-ip", "x-proxyuser-ip", "via", "x-host", "x-http-method-override",
	"x-http-method", "x-method-override", "x-rewrite-url", "x-arr-log-id",
	// Identity set by authenticating proxies and web servers (Apache/nginx REMOTE_USER, IIS,
	// Grafana/Jenkins auth proxy modes, Kong, Traefik forward auth, Envoy).
	"remote-user", "remote-addr", "remote-host", "auth-user", "auth-type", "x-user", "x-username",
	"x-user-id", "x-userid", "x-user-name", "x-email", "x-user-email", "x-groups", "x-user-groups",
	"x-id-token", "x-access-token", "x-jwt-payload", "x-jwt-assertion", "x-userinfo", "x-proxy-user",
	"x-webauth-user", "x-webauth-email", "x-webauth-name", "x-webauth-groups", "x-webauth-role",
	"x-forwarded-client-cert", "x-client-verify", "x-client-dn", "x-client-s-dn", "x-client-i-dn",
	"x-arr-clientcert", "x-envoy-peer-metadata", "x-envoy-peer-metadata-id", "x-envoy-original-path",
	"x-istio-attributes", "x-iap-jwt-assertion", "x-verified-user",
}

// droppedPrefixes are header families (in normalHeader form) never forwarded: the front-proxy and
// impersonation headers of Kubernetes, our own identity headers, X-Forwarded-* (For, Host, Proto,
// Port, Prefix, Uri, User, Email, Groups, Access-Token, Preferred-Username ...), oauth2-proxy's
// X-Auth-Request-*, ingress-nginx's X-Original-*, client certificate headers of nginx, Apache,
// HAProxy, Traefik and Envoy, and the identity headers of cloud and zero-trust proxies (Google
// IAP, AWS ALB OIDC, Azure App Service, Cloudflare Access, Pomerium, Kong consumers, Authelia,
// Authentik, Vouch, Teleport).
var droppedPrefixes = []string{
	"x-remote-", "impersonate-", "x-sandbox-", "x-forwarded-", "x-auth-", "x-original-",
	"x-client-cert", "x-ssl-", "ssl-client-", "x-tls-", "x-client-crt", "x-authenticated-",
	"x-amzn-oidc-", "x-goog-authenticated-", "x-goog-iap-", "x-ms-client-principal", "x-ms-token-",
	"cf-access-", "x-pomerium-", "x-consumer-", "x-credential-", "remote-", "x-authentik-",
	"x-vouch-", "teleport-", "x-teleport-", "x-oidc-", "oidc-claim-", "x-hasura-", "x-scope-orgid",
}

// isDropped reports whether a client's header of this name never reaches a sandbox.
func isDropped(name string) bool {
	n := normalHeader(name)
	return slices.Contains(droppedHeaders, n) || slices.ContainsFunc(droppedPrefixes, func(p string) bool {
		return strings.HasPrefix(n, p)
	})
}

// RewriteHeaders removes from h every header a sandbox must not get from the client, and sets the
// identity headers from u (nil: none). The front proxy's identity headers, whatever names it is
// configured with, are already gone: the request-header authenticator clears them.
//
// Groups of Kubernetes' own (system:...) are passed only when listed in systemGroups.
func RewriteHeaders(h http.Header, u user.Info, systemGroups ...string) {
	// Headers the client marked hop-by-hop in Connection go here, and Connection itself is
	// rewritten: left as the client sent it, ReverseProxy (and the sandbox's server, for an
	// upgrade) would remove the headers it lists after we set ours, so a client listing
	// X-Sandbox-User would strip the caller's identity. Only Upgrade is kept, which an upgrade
	// needs to reach the sandbox.
	upgrade := false
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			switch name = textproto.TrimString(name); {
			case strings.EqualFold(name, "Upgrade"):
				upgrade = true
			case name != "":
				h.Del(name)
			}
		}
	}
	h.Del("Connection")
	if upgrade {
		h.Set("Connection", "Upgrade")
	}
	for name := range h {
		if isDropped(name) {
			delete(h, name)
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
		// Kubernetes' own groups (system:masters, system:nodes, system:authenticated ...) say
		// what the caller may do to the cluster; sandbox code that trusted them would hand a
		// cluster administrator's or a node's standing to whoever reaches it. Only the
		// organisation's groups pass, and those the operator lists (--proxy-identity-system-groups).
		if !strings.HasPrefix(g, "system:") || slices.Contains(systemGroups, g) {
			h.Add(GroupHeader, g)
		}
	}
}

// SecureResponseHeaders are set on every response the proxy passes back: the sandbox's pages are
// served under the API server's origin, so they are sandboxed (no scripts with that origin's
// rights, no same-origin access to the API) and never sniffed into another type.
func SecureResponseHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("X-Content-Type-Options", "nosniff")
}
