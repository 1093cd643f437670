// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// WithFrontProxyReady answers requests with 503 and a Retry-After until the front proxy's client
// CA (read from kube-system/extension-apiserver-authentication) is loaded. Before that, requests
// proxied by kube-apiserver would be taken as anonymous and refused with a 403, which clients do
// not retry; health checks are answered as usual.
func WithFrontProxyReady(chain func(http.Handler, *genericapiserver.Config) http.Handler) func(http.Handler, *genericapiserver.Config) http.Handler {
	return func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
		handler := chain(apiHandler, c)
		requestHeader := c.Authentication.RequestHeaderConfig
		if requestHeader == nil {
			return handler
		}
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if !frontProxyLoaded(requestHeader) && !isHealthCheck(req.URL.Path) {
				w.Header().Set("Retry-After", "1")
				http.Error(w, "the front proxy's client CA is not loaded yet", http.StatusServiceUnavailable)
				return
			}
			handler.ServeHTTP(w, req)
		})
	}
}

func frontProxyLoaded(rh *authenticatorfactory.RequestHeaderConfig) bool {
	return rh.CAContentProvider != nil && len(rh.CAContentProvider.CurrentCABundleContent()) > 0 &&
		rh.UsernameHeaders != nil && len(rh.UsernameHeaders.Value()) > 0
}

func isHealthCheck(path string) bool {
	for _, p := range []string{"/healthz", "/readyz", "/livez"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}
