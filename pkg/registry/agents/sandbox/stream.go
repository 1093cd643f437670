// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxstream"
)

// StreamStorage returns sandboxes/exec, attach, log and portforward, keyed by subresource: each
// reaches the named Sandbox's pod (see pkg/registry/sandboxstream).
func StreamStorage(sandboxes rest.Getter, streams *sandboxstream.Streams) map[string]rest.Storage {
	return streams.Storage(agents.Kind("Sandbox"), func(ctx context.Context, name string) (*agents.Sandbox, error) {
		obj, err := sandboxes.Get(ctx, name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return obj.(*agents.Sandbox), nil
	})
}
