// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"strings"
	"testing"
)

func TestIsRestrictedMetadataKey(t *testing.T) {
	cases := map[string]bool{
		"kubernetes.io/x":               true,
		"foo.kubernetes.io/x":           true,
		"a.b.kubernetes.io/x":           true,
		"k8s.io/y":                      true,
		"node.k8s.io/y":                 true,
		"agents.x-k8s.io/y":             true,
		"x.agents.x-k8s.io/z":           true,
		"Agents.X-K8s.IO/upper":         true,
		"agents.x-k8s.io/claim-uid":     true,
		"app":                           false,
		"kubernetes.io":                 false, // no prefix: "kubernetes.io" is the name
		"example.com/x":                 false,
		"x-k8s.io/y":                    false,
		"cluster.x-k8s.io/y":            false,
		"notkubernetes.io/x":            false,
		"kubernetes.io.example.com/x":   false,
		"agents.x-k8s.io.example.com/x": false,
		"myk8s.io/x":                    false,
	}
	for key, want := range cases {
		if got := IsRestrictedMetadataKey(key); got != want {
			t.Errorf("IsRestrictedMetadataKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestValidateNames(t *testing.T) {
	cases := []struct {
		name   string
		fn     func(string, bool) []string
		value  string
		prefix bool
		valid  bool
	}{
		{"template subdomain", ValidateSandboxTemplateName, "a.b-c", false, true},
		{"template 238", ValidateSandboxTemplateName, strings.Repeat("t", 238), false, true},
		{"template 239", ValidateSandboxTemplateName, strings.Repeat("t", 239), false, false},
		{"template prefix with trailing dash", ValidateSandboxTemplateName, "tmpl-", true, true},
		{"pool label", ValidateSandboxWarmPoolName, "fast-pool", false, true},
		{"pool 57", ValidateSandboxWarmPoolName, "p" + strings.Repeat("x", 56), false, true},
		{"pool 58", ValidateSandboxWarmPoolName, "p" + strings.Repeat("x", 57), false, false},
		{"pool prefix with trailing dash", ValidateSandboxWarmPoolName, "pool-", true, true},
		{"pool with dot", ValidateSandboxWarmPoolName, "fast.pool", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.fn(tc.value, tc.prefix)
			if (len(errs) == 0) != tc.valid {
				t.Errorf("%q: got errors %v, want valid=%v", tc.value, errs, tc.valid)
			}
		})
	}
}
