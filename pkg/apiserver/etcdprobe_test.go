// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"
	"k8s.io/apiserver/pkg/server/egressselector"
	"k8s.io/component-base/metrics/testutil"
)

// TestEtcdProbeState: etcd is reachable until found otherwise, and a check that began before the
// last failure does not report it back.
func TestEtcdProbeState(t *testing.T) {
	p := NewEtcdProbe(time.Second, time.Second, 0)
	if err := p.Err(); err != nil {
		t.Fatalf("a new probe reports %v", err)
	}
	before := p.failureCount()
	p.markUnreachable(errors.New("etcd stopped"))
	expectReachableMetric(t, 0)
	reachable := p.Reachable()
	if reachable.Err() == nil || p.Err() == nil || p.Err().Error() != "etcd stopped" {
		t.Fatalf("after a failure: %v, want etcd stopped", p.Err())
	}
	p.markReachable(before)
	if p.Err() == nil {
		t.Fatal("a check begun before the failure reported etcd back")
	}
	p.markReachable(p.failureCount())
	if p.Err() != nil || p.Reachable().Err() != nil {
		t.Fatalf("after a check begun after the failure: %v, want reachable", p.Err())
	}
	if reachable.Err() == nil {
		t.Error("the context of the outage was reopened")
	}
	expectReachableMetric(t, 1)
}

// TestChecksShowUnreachable: over a live connection a slow answer or two is a busy machine, not an
// outage; over a connection that is down, one failed check is.
func TestChecksShowUnreachable(t *testing.T) {
	for _, tc := range []struct {
		failedInARow int
		state        connectivity.State
		want         bool
	}{
		{0, connectivity.Ready, false},
		{1, connectivity.Ready, false},
		{slowTimeouts - 1, connectivity.Ready, false},
		{slowTimeouts, connectivity.Ready, true},
		{1, connectivity.TransientFailure, true},
		{1, connectivity.Connecting, true},
		{0, connectivity.TransientFailure, false},
	} {
		if got := checksShowUnreachable(tc.failedInARow, tc.state); got != tc.want {
			t.Errorf("%d failed checks in a row, connection %s: unreachable %v, want %v", tc.failedInARow, tc.state, got, tc.want)
		}
	}
}

func expectReachableMetric(t *testing.T, want float64) {
	t.Helper()
	if got, err := testutil.GetGaugeMetricValue(etcdReachable); err != nil || got != want {
		t.Errorf("sandbox_etcd_reachable %v (%v), want %v", got, err, want)
	}
}

func TestEtcdProbeDial(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retry      time.Duration
		listenLate time.Duration // when etcd starts listening
		budget     time.Duration // the connection attempt's time
		wantConn   bool
	}{
		{"listening", 50 * time.Millisecond, 0, 5 * time.Second, true},
		{"back within the attempt", 50 * time.Millisecond, 300 * time.Millisecond, 5 * time.Second, true},
		{"no retries", 0, 300 * time.Millisecond, 5 * time.Second, false},
		{"back too late", 50 * time.Millisecond, 3 * time.Second, 1500 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			if tc.listenLate > 0 {
				l.Close()
				var mu sync.Mutex
				var late net.Listener
				start := time.AfterFunc(tc.listenLate, func() {
					mu.Lock()
					defer mu.Unlock()
					late, _ = net.Listen("tcp", addr)
				})
				defer func() {
					start.Stop()
					mu.Lock()
					defer mu.Unlock()
					if late != nil {
						late.Close()
					}
				}()
			} else {
				defer l.Close()
			}
			dial, _ := NewEtcdProbe(time.Second, time.Second, tc.retry).EgressLookup(egressselector.Etcd.AsNetworkContext())
			ctx, cancel := context.WithTimeout(context.Background(), tc.budget)
			defer cancel()
			conn, err := dial(ctx, "tcp", addr)
			if conn != nil {
				conn.Close()
			}
			if (err == nil) != tc.wantConn {
				t.Errorf("dial: %v, want a connection: %v", err, tc.wantConn)
			}
		})
	}
}
