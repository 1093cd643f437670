// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/cmd/server"
	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

// collector is an OTLP/gRPC trace receiver that counts the traces its spans are in or linked to.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu     sync.Mutex
	traces map[string]int
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.traces[hex.EncodeToString(s.TraceId)]++
				for _, l := range s.Links {
					c.traces[hex.EncodeToString(l.TraceId)]++
				}
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (c *collector) spans(traceID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.traces[traceID]
}

// TestTracingExport: with --tracing-config-file the server exports its spans to the configured
// OTLP endpoint, and the span of a request that carries a W3C traceparent header continues the
// client's trace (as a child for the cluster's privileged users, whose requests the aggregator
// forwards; as a linked root for others, as here).
func TestTracingExport(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &collector{traces: map[string]int{}}
	g := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(g, c)
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)

	config := filepath.Join(t.TempDir(), "tracing.yaml")
	if err := os.WriteFile(config, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: "+
		l.Addr().String()+"\nsamplingRatePerMillion: 1000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := framework.StartServerWith(t, t.TempDir(), func(o *server.Options) { o.RecommendedOptions.Traces.ConfigFile = config })

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := testContext(t)
	// Not the loopback client's transport, which traces its requests itself with the server's
	// tracer and so replaces the header.
	cfg := rest.CopyConfig(s.Config)
	cfg.WrapTransport = nil
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/apis/agents.x-k8s.io/v1beta1/sandboxes", nil)
	req.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET sandboxes: %s", resp.Status)
	}
	// The exporter sends in batches, every few seconds.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return c.spans(traceID) > 0, nil
	}); err != nil {
		c.mu.Lock()
		t.Fatalf("no span in or linked to trace %s reached the collector (traces: %v): %v", traceID, c.traces, err)
	}
}
