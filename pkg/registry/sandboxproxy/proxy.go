// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxproxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/proxy"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

// Methods are the HTTP methods the proxy subresources forward, as pods/proxy does.
var Methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// PodGetter returns a pod by namespace and name; a nil pod when there is none.
type PodGetter func(namespace, name string) (*corev1.Pod, error)

// Proxy forwards requests to the pods of Sandboxes.
type Proxy struct {
	// Pods finds a Sandbox's pod; nil when the server has no cluster connection.
	Pods PodGetter
	// Waker wakes suspended sandboxes and records activity; nil: a sandbox that is not running
	// gets a 503.
	Waker Waker
	// HostNetwork are the nodes whose host-network pods the proxy may reach (none by default).
	HostNetwork HostNetworkRanges
	// IdentitySystemGroups are the system: groups passed to the sandbox in X-Sandbox-Group;
	// others of that prefix never are.
	IdentitySystemGroups []string
	// Connections bounds the requests and upgraded connections proxied at once, per sandbox
	// and per server replica.
	Connections *ConnectionLimit
}

// NewTransport is the transport to the pods: plain HTTP, straight to the pod (never through an
// HTTP proxy from the environment, which k8s.io's transport defaults would add), bounded dials.
func NewTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
}

// Connect resolves where a request for sb at port goes and returns the handler that forwards it
// there with path. Errors (not running, no such port, refused target) are status errors.
func (p *Proxy) Connect(ctx context.Context, sb *agents.Sandbox, port, path string, responder rest.Responder) (http.Handler, error) {
	if p.Waker != nil {
		woken, err := p.Waker.Wake(ctx, sb)
		if err != nil {
			return nil, err
		}
		sb = woken
	} else if Suspended(sb) {
		return nil, notRunning(sb, "it is suspended")
	}
	if p.Pods == nil {
		return nil, apierrors.NewServiceUnavailable("this server has no connection to the cluster to find the sandbox's pod")
	}
	pod, err := p.Pods(sb.Namespace, PodName(sb))
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("finding the pod of sandbox %s/%s: %w", sb.Namespace, sb.Name, err))
	}
	location, err := Target(sb, pod, port, p.HostNetwork)
	if err != nil {
		return nil, err
	}
	location.Path = joinPath(path)
	handler := proxy.NewUpgradeAwareHandler(location, podTransport, true, false, errorResponder{responder})
	u, _ := genericapirequest.UserFrom(ctx)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		done, err := p.Connections.Admit(sb)
		if err != nil {
			responder.Error(err)
			return
		}
		defer done()
		if p.Waker != nil {
			defer p.Waker.Begin(sb)()
		}
		RewriteHeaders(req.Header, u, p.IdentitySystemGroups...)
		SecureResponseHeaders(w.Header())
		handler.ServeHTTP(w, req)
	}), nil
}

// podTransport is shared by every proxied request, so connections to the pods are reused.
var podTransport = NewTransport()

// joinPath makes the request's path (after proxy/) an absolute path on the pod. It is only ever a
// path: a path that looks like a URL ("http://other/", "//other/") stays a path on the pod.
func joinPath(path string) string {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return path
}

// errorResponder answers a failure to reach the pod as a 503 that says so.
type errorResponder struct{ rest.Responder }

func (r errorResponder) Error(w http.ResponseWriter, req *http.Request, err error) {
	r.Responder.Error(apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach the sandbox: %v", err)))
}
