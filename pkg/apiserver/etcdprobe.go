// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/server/egressselector"
	"k8s.io/apiserver/pkg/server/healthz"
	etcd3metrics "k8s.io/apiserver/pkg/storage/etcd3/metrics"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/fastpath"
)

// EtcdProbe knows whether the server's etcd answers, from a connection of its own that it checks
// every interval and watches in between: a refused or lost connection to every member counts at
// once; over a live connection, only slowTimeouts checks in a row that each exceed the timeout
// count, because a single slow answer is what a busy machine gives (the CPU-starved server, or
// etcd fsyncing) and ending every request in flight for it turned load into errors. While etcd is unreachable, WithEtcdReachable answers the
// requests that need it with 503 and a Retry-After, and the "etcd" health check fails.
//
// It also dials the storage's etcd connections (see EgressLookup): the etcd client backs off
// between connection attempts (1 s growing by 1.6 each time), so after a 20 s outage it would
// reconnect up to 17 s after etcd is back. The dialer instead keeps trying every retry interval
// within each attempt.
type EtcdProbe struct {
	interval, timeout, dialRetry time.Duration

	mu sync.Mutex
	// reachable lives while etcd answers; it is cancelled, with the reason as its cause, when
	// etcd stops answering and replaced by a new one when it is back.
	reachable context.Context
	cancel    context.CancelCauseFunc
	// failures counts the times etcd was found unreachable, so that a check that began before
	// the last of them cannot report etcd back.
	failures uint64
	// since is when etcd was last found unreachable after answering.
	since time.Time
	// client is the probe's connection while Run runs.
	client *clientv3.Client
}

// etcdReachable is 1 while the probe finds etcd reachable, 0 otherwise.
var etcdReachable = metrics.NewGauge(&metrics.GaugeOpts{
	Name: "sandbox_etcd_reachable",
	Help: "1 while the server's etcd answers its probe, 0 while requests that need etcd are " +
		"answered with 503 (see --etcd-probe-interval).",
	StabilityLevel: metrics.ALPHA,
})

var registerMetrics sync.Once

// recheckAfterFailure is the longest pause between checks after one failed.
const recheckAfterFailure = 100 * time.Millisecond

// slowTimeouts is how many checks in a row must time out over a live connection before etcd
// counts as unreachable: with the defaults, about 3 s of no answer at all.
const slowTimeouts = 3

// dialHandshakeReserve is the part of a connection attempt's time the dialer leaves for the TLS
// and HTTP/2 handshakes once etcd accepts the connection.
const dialHandshakeReserve = time.Second

// NewEtcdProbe returns a probe that checks etcd every interval, counts it unreachable when a
// check takes longer than timeout, and makes the storage's connection attempts retry every
// dialRetry (0: as the etcd client does). etcd counts as reachable until Run finds otherwise.
func NewEtcdProbe(interval, timeout, dialRetry time.Duration) *EtcdProbe {
	registerMetrics.Do(func() { legacyregistry.MustRegister(etcdReachable) })
	p := &EtcdProbe{interval: interval, timeout: timeout, dialRetry: dialRetry}
	p.reachable, p.cancel = context.WithCancelCause(context.Background())
	return p
}

// Reachable returns a context that is done, with the reason as its cause, once etcd is found
// unreachable; it is done already while etcd is unreachable.
func (p *EtcdProbe) Reachable() context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reachable
}

// Err is why etcd is unreachable, or nil.
func (p *EtcdProbe) Err() error {
	return context.Cause(p.Reachable())
}

func (p *EtcdProbe) markUnreachable(reason error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures++
	if p.reachable.Err() == nil {
		klog.ErrorS(reason, "etcd is unreachable: requests that need it are answered with 503 until it is back")
		p.cancel(reason)
		p.since = time.Now()
		etcdReachable.Set(0)
	}
}

// markReachable reports etcd back, unless it was found unreachable again after failuresBefore
// (the count when the check that succeeded began).
func (p *EtcdProbe) markReachable(failuresBefore uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failures != failuresBefore || p.reachable.Err() == nil {
		return
	}
	klog.InfoS("etcd is reachable again", "unreachableFor", time.Since(p.since))
	p.reachable, p.cancel = context.WithCancelCause(context.Background())
	etcdReachable.Set(1)
}

func (p *EtcdProbe) failureCount() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failures
}

// HealthCheck is the "etcd" health check: it fails while etcd is unreachable, without waiting.
func (p *EtcdProbe) HealthCheck() healthz.HealthChecker {
	return healthz.NamedCheck("etcd", func(*http.Request) error { return p.Err() })
}

// EgressLookup is the dialer of the storage's etcd connections (storagebackend's
// TransportConfig.EgressLookup): while etcd refuses connections, it tries again every retry
// interval until the connection attempt's deadline is near, so that the connection is back
// within about that interval of etcd's return instead of after the client's backoff.
func (p *EtcdProbe) EgressLookup(egressselector.NetworkContext) (utilnet.DialFunc, error) {
	return p.dial, nil
}

func (p *EtcdProbe) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, network, addr)
		if err == nil || p.dialRetry <= 0 {
			return conn, err
		}
		if deadline, ok := ctx.Deadline(); !ok || time.Until(deadline) < p.dialRetry+dialHandshakeReserve {
			return nil, err
		}
		retry := time.NewTimer(p.dialRetry)
		select {
		case <-ctx.Done():
			retry.Stop()
			return nil, err
		case <-retry.C:
		}
	}
}

// Run checks etcd until ctx is done, over a connection of its own to the members of t.
func (p *EtcdProbe) Run(ctx context.Context, t storagebackend.TransportConfig, prefix string) error {
	if p.Err() == nil {
		etcdReachable.Set(1)
	}
	client, err := newProbeClient(t, p.interval)
	if err != nil {
		return fmt.Errorf("etcd probe: %w", err)
	}
	p.setClient(client)
	defer func() {
		p.setClient(nil)
		client.Close()
	}()
	go p.watchConnection(ctx, client.ActiveConnection(), t.ServerList)

	key := path.Join("/", prefix, "health")
	next := time.NewTimer(0)
	defer next.Stop()
	failedInARow := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-next.C:
		}
		failuresBefore := p.failureCount()
		checkCtx, cancel := context.WithTimeout(ctx, p.timeout)
		_, err := client.Get(checkCtx, key, clientv3.WithCountOnly())
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			failedInARow++
			if checksShowUnreachable(failedInARow, client.ActiveConnection().GetState()) {
				p.markUnreachable(fmt.Errorf("etcd did not answer %d checks in a row within %s each: %w", failedInARow, p.timeout, err))
			} else {
				klog.InfoS("etcd answered a check slowly; requests keep going to it", "timeout", p.timeout, "slowChecksInARow", failedInARow, "err", err)
			}
			// Check again soon: to see etcd back as soon as the connection is, or to tell a
			// slow answer from none.
			next.Reset(min(p.interval, recheckAfterFailure))
		default:
			failedInARow = 0
			p.markReachable(failuresBefore)
			next.Reset(p.interval)
		}
	}
}

// checksShowUnreachable says whether failedInARow failed checks show etcd unreachable, with the
// probe's connection in state: over a connection that is not up, one does; over a live one, it
// takes slowTimeouts.
func checksShowUnreachable(failedInARow int, state connectivity.State) bool {
	return failedInARow >= slowTimeouts || (failedInARow > 0 && state != connectivity.Ready)
}

func (p *EtcdProbe) setClient(c *clientv3.Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.client = c
}

// StorageMonitors measures the size of etcd's database for /metrics
// (apiserver_storage_db_total_size_in_bytes) over the probe's connection, and not at all while
// etcd is unreachable. The generic server's monitor makes a new etcd client for each scrape and
// waits up to 20 s for it to connect, so /metrics hung while etcd was down.
func (p *EtcdProbe) StorageMonitors() ([]etcd3metrics.Monitor, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := context.Cause(p.reachable); err != nil {
		return nil, err
	}
	if p.client == nil {
		return nil, errors.New("the etcd probe is not running")
	}
	return []etcd3metrics.Monitor{dbSizeMonitor{p.client}}, nil
}

// dbSizeMonitor asks a member of etcd for the size of its database.
type dbSizeMonitor struct{ client *clientv3.Client }

func (m dbSizeMonitor) Monitor(ctx context.Context) (etcd3metrics.StorageMetrics, error) {
	endpoints := m.client.Endpoints()
	status, err := m.client.Status(ctx, endpoints[rand.IntN(len(endpoints))])
	if err != nil {
		return etcd3metrics.StorageMetrics{}, err
	}
	return etcd3metrics.StorageMetrics{Size: status.DbSize}, nil
}

// Close leaves the connection to the probe, which owns it.
func (dbSizeMonitor) Close() error { return nil }

// watchConnection reports etcd unreachable as soon as the probe's connection fails to reach any
// member, which is at once when etcd stops or refuses connections, well before a check times out.
func (p *EtcdProbe) watchConnection(ctx context.Context, conn *grpc.ClientConn, members []string) {
	for {
		state := conn.GetState()
		switch state {
		case connectivity.TransientFailure:
			p.markUnreachable(fmt.Errorf("no connection to etcd (%s)", strings.Join(members, ", ")))
		case connectivity.Idle:
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, state) {
			return
		}
	}
}

// newProbeClient connects to the members of t as the storage does, but without waiting for the
// connection and without its dialer: the probe's connection reconnects after at most maxBackoff
// on its own, and shows a failed attempt at once.
func newProbeClient(t storagebackend.TransportConfig, maxBackoff time.Duration) (*clientv3.Client, error) {
	t.EgressLookup = nil
	cfg, err := fastpath.EtcdClientConfig(t)
	if err != nil {
		return nil, err
	}
	reconnect := backoff.DefaultConfig
	reconnect.BaseDelay = min(reconnect.BaseDelay, maxBackoff)
	reconnect.MaxDelay = maxBackoff
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithConnectParams(grpc.ConnectParams{
		Backoff: reconnect,
		// As long as the storage's connections get: a TLS handshake on a loaded machine is slow.
		MinConnectTimeout: 20 * time.Second,
	}))
	return clientv3.New(cfg)
}
