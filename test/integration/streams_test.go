// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// TestStreamQueries: the streaming subresources decode the query of their pods/* counterparts in
// every served version and refuse a bad one with the parameter named, before looking for the
// sandbox; a sandbox that does not exist is a 404.
func TestStreamQueries(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := testContext(t)
	clients := map[string]rest.Interface{
		"agents v1beta1":      s.Client.AgentsV1beta1().RESTClient(),
		"agents v1alpha1":     s.Client.AgentsV1alpha1().RESTClient(),
		"extensions v1beta1":  s.Client.ExtensionsV1beta1().RESTClient(),
		"extensions v1alpha1": s.Client.ExtensionsV1alpha1().RESTClient(),
	}
	for version, client := range clients {
		resource := "sandboxes"
		if strings.HasPrefix(version, "extensions") {
			resource = "sandboxclaims"
		}
		for _, tc := range []struct {
			method, subresource, query string
			code                       int
			says                       string
		}{
			{"POST", "exec", "stdout=true", http.StatusUnprocessableEntity, "command: Required value"},
			{"POST", "exec", "command=true", http.StatusUnprocessableEntity, "stdout: Required value"},
			{"GET", "attach", "tty=true", http.StatusUnprocessableEntity, "stdout: Required value"},
			{"GET", "log", "insecureSkipTLSVerifyBackend=true", http.StatusUnprocessableEntity, "insecureSkipTLSVerifyBackend: Forbidden"},
			{"GET", "log", "tailLines=ten", http.StatusBadRequest, "tailLines"},
			{"GET", "log", "sinceSeconds=5&sinceTime=2026-01-02T03:04:05Z", http.StatusUnprocessableEntity, "sinceTime: Forbidden"},
			{"POST", "portforward", "ports=0", http.StatusBadRequest, "ports[0]"},
			{"POST", "exec", "command=true&stdout=true", http.StatusNotFound, "not found"},
			{"GET", "log", "follow=true", http.StatusNotFound, "not found"},
		} {
			req := client.Verb(tc.method).Namespace("default").Resource(resource).Name("missing").SubResource(tc.subresource)
			for _, kv := range strings.Split(tc.query, "&") {
				k, v, _ := strings.Cut(kv, "=")
				req = req.Param(k, v)
			}
			var code int
			err := req.Do(ctx).StatusCode(&code).Error()
			if code != tc.code || err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s %s %s/missing/%s?%s: %d %v; want %d saying %q", version, tc.method, resource, tc.subresource, tc.query, code, err, tc.code, tc.says)
			}
		}
	}
}
