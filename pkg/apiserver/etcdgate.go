// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// etcdRetryAfterSeconds is the Retry-After of the answers given while etcd is unreachable:
// client-go waits that long and tries again, up to ten times.
const etcdRetryAfterSeconds = 1

// WithEtcdReachable puts a guard around the API handler, inside chain (so after authentication,
// authorization and the request timeout), for the requests that read or write our resources,
// watches excepted: they are served from the watch cache and survive an outage.
//
// While the probe (if any) finds etcd unreachable, such a request is answered at once with 503 and a
// Retry-After instead of waiting on the etcd client until its timeout; one already waiting when
// etcd is found unreachable ends then, with a 504.
//
// Every such request also has its deadline moved margin earlier (by at most half its time), so
// that a slow etcd makes the server answer 504 before the request's own deadline. Otherwise the
// answer races the timeouts of every hop with the same deadline: the aggregator's proxy in
// kube-apiserver starts copying it, kube-apiserver's timeout filter fires, and the client sees the
// stream reset (HTTP/2 INTERNAL_ERROR) instead of a status.
func WithEtcdReachable(chain func(http.Handler, *genericapiserver.Config) http.Handler, probe *EtcdProbe, margin time.Duration) func(http.Handler, *genericapiserver.Config) http.Handler {
	return func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
		return chain(guardStorage(apiHandler, probe, margin), c)
	}
}

func guardStorage(apiHandler http.Handler, probe *EtcdProbe, margin time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := apirequest.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest || info.Verb == "watch" {
			apiHandler.ServeHTTP(w, req)
			return
		}
		ctx, cancel := storageContext(req.Context(), margin)
		defer cancel()
		if probe != nil {
			reachable := probe.Reachable()
			if reachable.Err() != nil {
				gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
				responsewriters.ErrorNegotiated(etcdUnreachableError(), NegotiatedSerializer, gv, w, req)
				return
			}
			defer context.AfterFunc(reachable, cancel)()
		}
		apiHandler.ServeHTTP(w, req.WithContext(ctx))
	})
}

// storageContext is ctx with its deadline, if any, moved margin earlier, by at most half the time
// left.
func storageContext(ctx context.Context, margin time.Duration) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok || margin <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, deadline.Add(-min(margin, time.Until(deadline)/2)))
}

// etcdUnreachableError is the 503 answered while etcd is unreachable. The reason stays in the
// server's log: it names internal addresses.
func etcdUnreachableError() *apierrors.StatusError {
	err := apierrors.NewServiceUnavailable("the server's storage (etcd) is unreachable; try again shortly")
	err.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: etcdRetryAfterSeconds}
	return err
}
