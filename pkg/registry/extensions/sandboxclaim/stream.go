// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxstream"
)

// StreamStorage returns sandboxclaims/exec, attach, log and portforward, keyed by subresource:
// each reaches the pod of the claim's Sandbox, found as sandboxclaims/proxy finds it, so a tenant
// needs neither the Sandbox's name nor any right on Sandboxes or pods.
func StreamStorage(claims, sandboxes rest.Getter, streams *sandboxstream.Streams) map[string]rest.Storage {
	return streams.Storage(extensions.Kind("SandboxClaim"), func(ctx context.Context, name string) (*agents.Sandbox, error) {
		obj, err := claims.Get(ctx, name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return sandboxOf(ctx, sandboxes, obj.(*extensions.SandboxClaim))
	})
}
