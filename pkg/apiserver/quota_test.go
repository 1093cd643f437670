// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

// TestQuotaConfiguration: each of the four kinds counts one object of its own under the name a
// ResourceQuota uses for it.
func TestQuotaConfiguration(t *testing.T) {
	config := QuotaConfiguration()
	for _, tc := range []struct {
		obj  runtime.Object
		kind string
		want corev1.ResourceName
	}{
		{&agents.Sandbox{}, "sandboxes", "count/sandboxes.agents.x-k8s.io"},
		{&extensions.SandboxClaim{}, "sandboxclaims", "count/sandboxclaims.extensions.agents.x-k8s.io"},
		{&extensions.SandboxTemplate{}, "sandboxtemplates", "count/sandboxtemplates.extensions.agents.x-k8s.io"},
		{&extensions.SandboxWarmPool{}, "sandboxwarmpools", "count/sandboxwarmpools.extensions.agents.x-k8s.io"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			var found bool
			for _, e := range config.Evaluators() {
				if e.GroupResource().Resource != tc.kind {
					continue
				}
				found = true
				usage, err := e.Usage(tc.obj)
				if err != nil {
					t.Fatal(err)
				}
				if q, ok := usage[tc.want]; !ok || !q.Equal(resource.MustParse("1")) || len(usage) != 1 {
					t.Errorf("usage %v, want %s: 1", usage, tc.want)
				}
			}
			if !found {
				t.Errorf("no evaluator for %s", tc.kind)
			}
		})
	}
}
