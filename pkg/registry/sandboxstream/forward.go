// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	genericrest "k8s.io/apiserver/pkg/registry/generic/rest"
	"k8s.io/apiserver/pkg/registry/rest"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	restclient "k8s.io/client-go/rest"
)

// kubeAPI reaches the pods/* subresources of the cluster's kube-apiserver as this server.
type kubeAPI struct {
	base *url.URL
	// transport carries plain requests (logs); upgrade dials the upgraded ones (exec, attach,
	// portforward) and adds the server's credentials to them.
	transport http.RoundTripper
	upgrade   proxy.UpgradeRequestRoundTripper
}

func newKubeAPI(cfg *restclient.Config) (*kubeAPI, error) {
	base, _, err := restclient.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, err
	}
	transport, err := restclient.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := restclient.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	// An upgraded request is written to a connection this transport dials; the wrappers of the
	// configuration (bearer token, user agent) are applied to it before.
	dialer := utilnet.SetTransportDefaults(&http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment})
	wrappers, err := restclient.HTTPWrappersForConfig(cfg, proxy.MirrorRequest)
	if err != nil {
		return nil, err
	}
	return &kubeAPI{base: base, transport: transport, upgrade: proxy.NewUpgradeRequestRoundTripper(dialer, wrappers)}, nil
}

// location is the URL of the pod's subresource with the query encoded from opts, the parsed
// options: nothing of the request's own query passes unparsed.
func (k *kubeAPI) location(pod *corev1.Pod, subresource string, opts runtime.Object) (*url.URL, error) {
	query, err := clientgoscheme.ParameterCodec.EncodeParameters(opts, corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	u := *k.base
	u.Path = path.Join(u.Path, "/api/v1/namespaces", pod.Namespace, "pods", pod.Name, subresource)
	u.RawQuery = query.Encode()
	return &u, nil
}

// forward is the handler that proxies an upgraded stream to location.
func (k *kubeAPI) forward(location *url.URL, responder rest.Responder) http.Handler {
	h := proxy.NewUpgradeAwareHandler(location, k.transport, false, true, errorResponder{responder})
	h.UpgradeTransport = k.upgrade
	// The request is kube-apiserver's, not a copy of ours for another host.
	h.UseLocationHost = true
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		out := req.Clone(req.Context())
		out.Header = protocolHeaders(req.Header)
		out.URL.RawQuery = location.RawQuery
		h.ServeHTTP(w, out)
	})
}

// protocolHeaders keeps of a request's headers only those that negotiate the stream: the caller's
// identity (X-Remote-*, Authorization, Impersonate-*) and anything else stay here.
func protocolHeaders(in http.Header) http.Header {
	out := http.Header{}
	for name, values := range in {
		name = http.CanonicalHeaderKey(name)
		switch {
		case name == "Upgrade", name == "Connection", name == "X-Stream-Protocol-Version",
			strings.HasPrefix(name, "Sec-Websocket-"):
			out[name] = values
		}
	}
	return out
}

// logStreamer streams the pod's log from location.
func (k *kubeAPI) logStreamer(location *url.URL, follow bool) *genericrest.LocationStreamer {
	return &genericrest.LocationStreamer{
		Location:        location,
		Transport:       k.transport,
		ContentType:     "text/plain",
		Flush:           follow,
		ResponseChecker: statusChecker{},
		RedirectChecker: genericrest.PreventRedirects,
	}
}

// statusChecker returns kube-apiserver's own status error for a failed request (a container not
// running, no previous instance, ...), so the caller reads the same message as from pods/log.
type statusChecker struct{}

func (statusChecker) Check(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var status metav1.Status
	if json.Unmarshal(body, &status) == nil && status.Kind == "Status" && status.Code != 0 {
		return &apierrors.StatusError{ErrStatus: status}
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, "", corev1.Resource("pods/log"), "", string(body), 0, false)
}

// errorResponder answers a failure to reach the pod's subresource as a 503 that says so.
type errorResponder struct{ rest.Responder }

func (r errorResponder) Error(_ http.ResponseWriter, _ *http.Request, err error) {
	r.Responder.Error(apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach the sandbox's pod: %v", err)))
}
