// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/fastpath"
)

// etcdRetryAfterSeconds is the Retry-After of the answers given while etcd is unreachable:
// client-go waits that long and tries again, up to ten times.
const etcdRetryAfterSeconds = 1

// WithEtcdReachable puts a guard around the API handler, inside chain (so after authentication,
// authorization and the request timeout), for the requests that read or write our resources,
// watches excepted: they are served from the watch cache and survive an outage.
//
// While the probe (if any) finds etcd unreachable, such a request is answered at once with 503 and
// a Retry-After instead of waiting on the etcd client until its timeout (WithEtcdGuard ends those
// already waiting).
//
// Every such request also has its deadline moved margin earlier (by at most half its time), so
// that on a slow etcd this server answers 504 before the request's deadline, not at the instant
// when every hop times out (the client, kube-apiserver's timeout filter, the aggregator's proxy
// and this server all count from the same ?timeout). There, which of them answers is a race, and
// kube-apiserver's timeout filter resets the stream (panic(http.ErrAbortHandler), HTTP/2
// INTERNAL_ERROR at the client) when the proxy has begun to copy this server's answer.
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
		if probe != nil && probe.Err() != nil {
			gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
			responsewriters.ErrorNegotiated(etcdUnreachableError(), NegotiatedSerializer, gv, w, req)
			return
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

// WithEtcdGuard wraps the storage of every resource so that a call does not start while the probe
// finds etcd unreachable, and a call waiting on etcd when the probe finds it unreachable ends then;
// both fail with the 503 and Retry-After of etcdUnreachableError, which client-go retries.
func WithEtcdGuard(getter generic.RESTOptionsGetter, probe *EtcdProbe) generic.RESTOptionsGetter {
	return fastpath.WrapStorage(getter, func(s storage.Interface) storage.Interface {
		return guardedStorage{Interface: s, probe: probe}
	})
}

// guardedStorage guards the calls that go to etcd; watches are served from the watch cache.
type guardedStorage struct {
	storage.Interface
	probe *EtcdProbe
}

// errEtcdLost is the cause of a call's context ended because etcd was found unreachable.
var errEtcdLost = errors.New("etcd was found unreachable")

func (s guardedStorage) guard(ctx context.Context, call func(context.Context) error) error {
	reachable := s.probe.Reachable()
	if reachable.Err() != nil {
		return etcdUnreachableError()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(reachable, func() { cancel(errEtcdLost) })()
	err := call(ctx)
	if err != nil && (errors.Is(context.Cause(ctx), errEtcdLost) || etcdMemberLost(err)) {
		return etcdUnreachableError()
	}
	return err
}

// etcdMemberLost: the call failed because the etcd member it went to was lost under it (its
// connection reset, or a proposal timed out while the leader changed), while the cluster may well
// serve the next try. The etcd client does not retry a write then, since it may have been
// applied; client-go retries a 503 with a Retry-After, and every write of ours is safe to repeat:
// a create then finds the object (409), an update its resourceVersion moved (409), a patch applies
// again to the same end. The client hands etcd's own errors over as rpctypes.EtcdError, others
// as gRPC statuses.
func etcdMemberLost(err error) bool {
	var etcdErr rpctypes.EtcdError
	if errors.As(err, &etcdErr) {
		return etcdErr.Code() == codes.Unavailable
	}
	return grpcstatus.Code(err) == codes.Unavailable
}

func (s guardedStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return s.guard(ctx, func(ctx context.Context) error { return s.Interface.Create(ctx, key, obj, out, ttl) })
}

func (s guardedStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	return s.guard(ctx, func(ctx context.Context) error {
		return s.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts)
	})
}

func (s guardedStorage) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	return s.guard(ctx, func(ctx context.Context) error { return s.Interface.Get(ctx, key, opts, out) })
}

func (s guardedStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	return s.guard(ctx, func(ctx context.Context) error { return s.Interface.GetList(ctx, key, opts, listObj) })
}

func (s guardedStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return s.guard(ctx, func(ctx context.Context) error {
		return s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject)
	})
}
