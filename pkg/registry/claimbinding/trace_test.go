// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package claimbinding

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/claimtest"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/tracecontext"
)

// TestBindTraceContext: a sandbox bound at create carries the claim's trace context; with tracing
// on, that of the binding's span, a child of the claim's.
func TestBindTraceContext(t *testing.T) {
	for _, tracing := range []bool{false, true} {
		t.Run(map[bool]string{false: "tracing off", true: "tracing on"}[tracing], func(t *testing.T) {
			exporter := tracetest.NewInMemoryExporter()
			var tracer trace.TracerProvider
			if tracing {
				tracer = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
			}
			f := newTracedFixture(t, tracer)
			f.sync()
			member := warmMember("m1", testPool)
			f.add(newTemplate())
			f.add(member)
			f.warm(member)
			claim := creatingClaim(claimtest.Traced)
			spy := &commitSpy{}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if ok, err := f.b.bindWith(ctx, claim, spy.commit); !ok || err != nil {
				t.Fatalf("bind = %v, %v; want bound", ok, err)
			}
			got := spy.calls[0].adopted.Annotations[tracecontext.Annotation]
			if !tracing {
				if got != claimtest.Trace {
					t.Errorf("sandbox trace context %q, want the claim's %q", got, claimtest.Trace)
				}
				return
			}
			spans := exporter.GetSpans()
			if len(spans) != 1 || spans[0].Parent.SpanID().String() != claimtest.ParentID {
				t.Fatalf("spans %+v, want one child of the claim's", spans)
			}
			if want := `{"traceparent":"00-` + claimtest.TraceID + `-` + spans[0].SpanContext.SpanID().String() + `-01"}`; got != want {
				t.Errorf("sandbox trace context %q, want the binding span's %q", got, want)
			}
		})
	}
}
