// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxproxy"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// ProxyREST serves sandboxclaims/proxy: .../sandboxclaims/NAME[:PORT]/proxy/PATH forwards the
// request to the pod of the claim's Sandbox, so a tenant needs neither the Sandbox's name nor any
// right on Sandboxes. The Sandbox is the one status.sandbox.name names, and only if the claim
// controls it.
type ProxyREST struct {
	Claims    rest.Getter
	Sandboxes rest.Getter
	Proxy     *sandboxproxy.Proxy
}

var _ rest.Connecter = &ProxyREST{}

// New returns the subresource's kind, its options, as pods/proxy does.
func (r *ProxyREST) New() runtime.Object { return &extensions.SandboxClaimProxyOptions{} }

// Destroy releases nothing: the claims storage is destroyed with its own endpoint.
func (r *ProxyREST) Destroy() {}

// ConnectMethods are the HTTP methods forwarded.
func (r *ProxyREST) ConnectMethods() []string { return sandboxproxy.Methods }

// NewConnectOptions returns the query type, whose path is the rest of the URL after proxy/.
func (r *ProxyREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &extensions.SandboxClaimProxyOptions{}, true, "path"
}

// Connect returns the handler that forwards to the pod of the Sandbox of the claim named by id.
func (r *ProxyREST) Connect(ctx context.Context, id string, opts runtime.Object, responder rest.Responder) (http.Handler, error) {
	proxyOpts, ok := opts.(*extensions.SandboxClaimProxyOptions)
	if !ok {
		return nil, fmt.Errorf("invalid options object: %#v", opts)
	}
	name, port, err := sandboxproxy.SplitNamePort(id)
	if err != nil {
		return nil, err
	}
	obj, err := r.Claims.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	claim := obj.(*extensions.SandboxClaim)
	sb, err := sandboxOf(ctx, r.Sandboxes, claim)
	if err != nil {
		return nil, err
	}
	return r.Proxy.Connect(ctx, sb, port, proxyOpts.Path, responder)
}

// sandboxOf returns the Sandbox the claim's status names, checked to be controlled by the claim.
func sandboxOf(ctx context.Context, sandboxes rest.Getter, claim *extensions.SandboxClaim) (*agents.Sandbox, error) {
	unavailable := func(why string) error {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("sandboxclaim %s/%s has no sandbox to proxy to: %s", claim.Namespace, claim.Name, why))
	}
	name := claim.Status.SandboxStatus.Name
	if name == "" {
		return nil, unavailable("status.sandbox.name is not set yet")
	}
	obj, err := sandboxes.Get(ctx, name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, unavailable(fmt.Sprintf("sandbox %s does not exist", name))
	}
	if err != nil {
		return nil, err
	}
	sb := obj.(*agents.Sandbox)
	if !objectmeta.IsControlledBy(sb, extensions.Kind("SandboxClaim"), claim.UID) {
		return nil, unavailable(fmt.Sprintf("sandbox %s is not controlled by the claim", name))
	}
	return sb, nil
}
