// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"
)

func TestStorageContext(t *testing.T) {
	for _, tc := range []struct {
		name            string
		timeout, margin time.Duration
		want            time.Duration // time left, 0: no deadline
	}{
		{"no deadline", 0, time.Second, 0},
		{"margin", 10 * time.Second, time.Second, 9 * time.Second},
		{"at most half the time", time.Second, time.Second, 500 * time.Millisecond},
		{"no margin", 10 * time.Second, 0, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				parent, cancel = context.WithTimeout(parent, tc.timeout)
				defer cancel()
			}
			ctx, cancel := storageContext(parent, tc.margin)
			defer cancel()
			deadline, ok := ctx.Deadline()
			if tc.want == 0 {
				if ok {
					t.Errorf("deadline %s, want none", time.Until(deadline))
				}
				return
			}
			if left := time.Until(deadline); !ok || left > tc.want || left < tc.want-100*time.Millisecond {
				t.Errorf("%s left, want %s", left, tc.want)
			}
		})
	}
}

func TestGuardStorage(t *testing.T) {
	get := &apirequest.RequestInfo{IsResourceRequest: true, Verb: "get", APIGroup: "agents.x-k8s.io", APIVersion: "v1beta1", Resource: "sandboxes"}
	watch := &apirequest.RequestInfo{IsResourceRequest: true, Verb: "watch", APIGroup: "agents.x-k8s.io", APIVersion: "v1beta1", Resource: "sandboxes"}
	discovery := &apirequest.RequestInfo{Path: "/apis/agents.x-k8s.io/v1beta1"}
	for _, tc := range []struct {
		name        string
		info        *apirequest.RequestInfo
		unreachable bool
		wantStatus  int
	}{
		{"reachable", get, false, http.StatusOK},
		{"unreachable", get, true, http.StatusServiceUnavailable},
		{"watch while unreachable", watch, true, http.StatusOK},
		{"discovery while unreachable", discovery, true, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probe := NewEtcdProbe(time.Second, time.Second, 0)
			if tc.unreachable {
				probe.markUnreachable(errors.New("etcd stopped"))
			}
			handler := guardStorage(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), probe, time.Second)
			req := httptest.NewRequest(http.MethodGet, "/apis/agents.x-k8s.io/v1beta1/sandboxes", nil)
			req = req.WithContext(apirequest.WithRequestInfo(req.Context(), tc.info))
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.wantStatus, rec.Body)
			}
			if tc.wantStatus != http.StatusServiceUnavailable {
				return
			}
			var status metav1.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if rec.Header().Get("Retry-After") != "1" || status.Reason != metav1.StatusReasonServiceUnavailable {
				t.Errorf("Retry-After %q, reason %q; want 1 and ServiceUnavailable", rec.Header().Get("Retry-After"), status.Reason)
			}
		})
	}
}

func TestGuardStorageDeadline(t *testing.T) {
	var left time.Duration
	handler := guardStorage(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		deadline, _ := req.Context().Deadline()
		left = time.Until(deadline)
	}), NewEtcdProbe(time.Second, time.Second, 0), 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := httptest.NewRequest(http.MethodGet, "/apis/agents.x-k8s.io/v1beta1/sandboxes", nil)
	handler.ServeHTTP(httptest.NewRecorder(), req.WithContext(apirequest.WithRequestInfo(ctx, &apirequest.RequestInfo{IsResourceRequest: true, Verb: "list"})))
	if left > 58*time.Second || left < 57*time.Second {
		t.Errorf("the handler had %s left of a minute, want 58s", left)
	}
}

// waitingStorage is a storage whose reads wait until their context ends.
type waitingStorage struct {
	storage.Interface
	waiting chan struct{}
}

func (s waitingStorage) Get(ctx context.Context, _ string, _ storage.GetOptions, _ runtime.Object) error {
	close(s.waiting)
	<-ctx.Done()
	return ctx.Err()
}

// TestEtcdGuardEndsWaitingCalls: a storage call waiting on etcd ends with a 503 and a Retry-After
// when etcd is found unreachable, and none starts until it is back.
func TestEtcdGuardEndsWaitingCalls(t *testing.T) {
	probe := NewEtcdProbe(time.Second, time.Second, 0)
	s := guardedStorage{Interface: waitingStorage{waiting: make(chan struct{})}, probe: probe}
	done := make(chan error, 1)
	go func() { done <- s.Get(context.Background(), "/sandboxes/a", storage.GetOptions{}, nil) }()
	<-s.Interface.(waitingStorage).waiting
	probe.markUnreachable(errors.New("etcd stopped"))
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call still waits 10s after etcd was found unreachable")
	}
	for _, err := range []error{err, s.Get(context.Background(), "/sandboxes/a", storage.GetOptions{}, nil)} {
		if delay, ok := apierrors.SuggestsClientDelay(err); !apierrors.IsServiceUnavailable(err) || !ok || delay != 1 {
			t.Errorf("got %v, want a 503 with a Retry-After of 1s", err)
		}
	}
}

// failingStorage fails every Get with err.
type failingStorage struct {
	storage.Interface
	err error
}

func (s failingStorage) Get(context.Context, string, storage.GetOptions, runtime.Object) error {
	return s.err
}

func TestEtcdGuardRetriesALostMember(t *testing.T) {
	probe := NewEtcdProbe(time.Second, time.Second, 0)
	lost := grpcstatus.Error(codes.Unavailable, "error reading from server: read tcp: connection reset by peer")
	tests := []struct {
		name      string
		err       error
		wantRetry bool
	}{
		{"the member's connection reset", lost, true},
		{"the same, wrapped", fmt.Errorf("txn: %w", lost), true},
		{"a proposal timed out in a leader change", rpctypes.Error(rpctypes.ErrGRPCTimeout), true},
		{"etcd's own error of another kind", rpctypes.Error(rpctypes.ErrGRPCCompacted), false},
		{"a deadline", grpcstatus.Error(codes.DeadlineExceeded, "context deadline exceeded"), false},
		{"not found", storage.NewKeyNotFoundError("/sandboxes/a", 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := guardedStorage{Interface: failingStorage{err: tt.err}, probe: probe}
			err := s.Get(context.Background(), "/sandboxes/a", storage.GetOptions{}, nil)
			delay, ok := apierrors.SuggestsClientDelay(err)
			retry := apierrors.IsServiceUnavailable(err) && ok && delay == 1
			if retry != tt.wantRetry {
				t.Errorf("got %v, want a 503 with a Retry-After of 1s: %v", err, tt.wantRetry)
			}
		})
	}
}
