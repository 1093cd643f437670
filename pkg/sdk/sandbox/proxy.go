// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// proxyAttempts bounds how often an idempotent request through the proxy is sent while the
// sandbox answers that it is not ready yet (a woken sandbox answers 503 with Retry-After).
const proxyAttempts = 5

// ProxyURL is the URL of path on port of the sandbox, through the API server's proxy
// subresource: what kubectl get --raw or a client with the kubeconfig's credentials can GET.
// An empty port means the first port the sandbox's pod declares. path is taken as it is: check
// one that is not the caller's own as HTTPClient does (a ".." would leave the proxy path).
func (s *Sandbox) ProxyURL(port, path string) *url.URL {
	name := s.name
	if port != "" {
		name += ":" + port
	}
	u := s.resourceRequest("GET", name).SubResource("proxy").URL()
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + strings.TrimPrefix(path, "/")
	return u
}

// HTTPClient returns an HTTP client whose requests go to port of the sandbox through the proxy
// subresource, with the client's credentials. Only the path and query of a request's URL are
// used: write them against any host, for example http://sandbox/healthz. A path that climbs out
// of the sandbox's proxy path fails with ErrOutsideProxyPath before anything is sent, and headers
// that carry an identity to the cluster's API (Authorization, Proxy-Authorization, Cookie,
// Impersonate-*, X-Remote-*) are not sent. An empty port means
// the first port the sandbox's pod declares. GET, HEAD, OPTIONS and requests whose body can be
// sent again (GetBody) are retried while the sandbox answers 502, 503 or 504 (it may be waking
// up) or 429, after the Retry-After it asks for.
func (s *Sandbox) HTTPClient(port string) (*http.Client, error) {
	transport, err := rest.TransportFor(s.client.config)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: &proxyTransport{sandbox: s, port: port, next: transport}}, nil
}

// proxyTransport sends requests to the sandbox's proxy subresource.
type proxyTransport struct {
	sandbox *Sandbox
	port    string
	next    http.RoundTripper
}

func (t *proxyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := belowProxyPath(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	target := t.sandbox.ProxyURL(t.port, req.URL.Path)
	if req.URL.RawPath != "" {
		// Keep the request's own escaping (an escaped slash stays one segment).
		target.RawPath = t.sandbox.ProxyURL(t.port, "").EscapedPath() + strings.TrimPrefix(req.URL.RawPath, "/")
	}
	target.RawQuery = req.URL.RawQuery
	repeatable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	idempotent := req.Method == http.MethodGet || req.Method == http.MethodHead || req.Method == http.MethodOptions ||
		(req.Method == http.MethodPut || req.Method == http.MethodDelete) || req.Header.Get("Idempotency-Key") != ""
	for attempt := 1; ; attempt++ {
		out := req.Clone(req.Context())
		out.URL = target
		out.Host = ""
		dropAPIServerHeaders(out.Header)
		if attempt > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			out.Body = body
		}
		resp, err := t.next.RoundTrip(out)
		if err != nil || attempt == proxyAttempts || !repeatable || !(idempotent || resp.StatusCode == http.StatusTooManyRequests) {
			return resp, err
		}
		delay, retry := retryAfter(resp, attempt)
		if !retry {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(delay):
		}
	}
}

// ErrOutsideProxyPath is the error of a request whose path would climb out of the sandbox's
// proxy path: the request goes to the cluster's API with the client's credentials, and a path
// such as ../../../../api/v1/namespaces/NS/secrets would be another API request.
var ErrOutsideProxyPath = errors.New("sandbox: the path climbs out of the sandbox's proxy path")

// belowProxyPath checks that u's path stays below the proxy path, counting ".." segments as
// written, percent-encoded ("%2e%2e", "..%2f") or with backslashes for slashes, however a server
// on the way may read them. The Python SDK keeps the same rule.
func belowProxyPath(u *url.URL) error {
	escaped := u.EscapedPath()
	decoded, err := url.PathUnescape(escaped)
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrOutsideProxyPath, escaped, err)
	}
	depth := 0
	for _, segment := range strings.FieldsFunc(decoded, func(r rune) bool { return r == '/' || r == '\\' }) {
		switch segment {
		case ".":
		case "..":
			if depth--; depth < 0 {
				return fmt.Errorf("%w: %q", ErrOutsideProxyPath, escaped)
			}
		default:
			depth++
		}
	}
	return nil
}

// dropAPIServerHeaders removes what kube-apiserver, not the sandbox, would act on: credentials
// and cookies (the client's own credentials are added after), impersonation and the
// authenticating proxy's identity headers. Names are compared without case and with "_" and "-"
// alike. The proxy does not forward them to the sandbox anyway; the Python SDK drops the same.
func dropAPIServerHeaders(h http.Header) {
	for key := range h {
		name := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(key)), "_", "-")
		switch {
		case name == "authorization", name == "proxy-authorization", name == "cookie", name == "host",
			strings.HasPrefix(name, "impersonate-"), strings.HasPrefix(name, "x-remote-"):
			delete(h, key)
		}
	}
}

// retryAfter says whether resp is worth another attempt, and after how long: the server's
// Retry-After (at most 10s), else a doubling delay from 0.5s.
func retryAfter(resp *http.Response, attempt int) (time.Duration, bool) {
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
	default:
		return 0, false
	}
	if seconds, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && seconds >= 0 {
		return min(time.Duration(seconds)*time.Second, 10*time.Second), true
	}
	return min(500*time.Millisecond<<(attempt-1), 10*time.Second), true
}
