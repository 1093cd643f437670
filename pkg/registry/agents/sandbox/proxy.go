// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxproxy"
)

// ProxyREST serves sandboxes/proxy: .../sandboxes/NAME[:PORT]/proxy/PATH forwards the request to
// the Sandbox's pod (see pkg/registry/sandboxproxy for where it may go).
type ProxyREST struct {
	Sandboxes rest.Getter
	Proxy     *sandboxproxy.Proxy
}

var _ rest.Connecter = &ProxyREST{}

// New returns the subresource's kind, its options, as pods/proxy does.
func (r *ProxyREST) New() runtime.Object { return &agents.SandboxProxyOptions{} }

// Destroy releases nothing: the Sandboxes storage is destroyed with its own endpoint.
func (r *ProxyREST) Destroy() {}

// ConnectMethods are the HTTP methods forwarded.
func (r *ProxyREST) ConnectMethods() []string { return sandboxproxy.Methods }

// NewConnectOptions returns the query type, whose path is the rest of the URL after proxy/.
func (r *ProxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &agents.SandboxProxyOptions{}, true, "path"
}

// Connect returns the handler that forwards to the pod of the Sandbox named by id (NAME[:PORT]).
func (r *ProxyREST) Connect(ctx context.Context, id string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	proxyOpts, ok := opts.(*agents.SandboxProxyOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", opts)
	}
	name, port, err := sandboxproxy.SplitNamePort(id)
	if err != nil {
		return nil, err
	}
	obj, err := r.Sandboxes.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return r.Proxy.Connect(ctx, obj.(*agents.Sandbox), port, proxyOpts.Path, responder)
}
