// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package tracecontext

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

const (
	traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentID = "00f067aa0ba902b7"
	recorded = `{"traceparent":"00-` + traceID + `-` + parentID + `-01"}`
)

// TestStart maps what a claim records to what its sandbox carries, with tracing off and on.
func TestStart(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		wantOff     string // with tracing off; "" for no annotation
		wantSpan    bool   // with tracing on
	}{
		{name: "a recorded trace passes on", annotations: map[string]string{Annotation: recorded}, wantOff: recorded, wantSpan: true},
		{name: "with tracestate", annotations: map[string]string{Annotation: `{"traceparent":"00-` + traceID + `-` + parentID + `-01","tracestate":"vendor=x"}`},
			wantOff: `{"traceparent":"00-` + traceID + `-` + parentID + `-01","tracestate":"vendor=x"}`, wantSpan: true},
		{name: "no annotation", annotations: map[string]string{"other": "x"}},
		{name: "not JSON", annotations: map[string]string{Annotation: "00-" + traceID + "-" + parentID + "-01"}},
		{name: "an invalid traceparent", annotations: map[string]string{Annotation: `{"traceparent":"00-00000000000000000000000000000000-` + parentID + `-01"}`}},
		{name: "other keys are dropped", annotations: map[string]string{Annotation: `{"traceparent":"00-` + traceID + `-` + parentID + `-01","x":"<script>"}`},
			wantOff: recorded, wantSpan: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, got, span := Start(context.Background(), noop.NewTracerProvider(), tc.annotations, "test")
			span.End()
			if got != tc.wantOff {
				t.Errorf("tracing off: %q, want %q", got, tc.wantOff)
			}

			exporter := tracetest.NewInMemoryExporter()
			provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
			_, got, span = Start(context.Background(), provider, tc.annotations, "provision")
			span.End()
			spans := exporter.GetSpans()
			if !tc.wantSpan {
				if got != "" || len(spans) != 0 {
					t.Errorf("tracing on: %q and %d spans, want neither", got, len(spans))
				}
				return
			}
			if len(spans) != 1 {
				t.Fatalf("tracing on: %d spans, want 1", len(spans))
			}
			s := spans[0]
			if s.Parent.TraceID().String() != traceID || s.Parent.SpanID().String() != parentID || s.Name != "provision" {
				t.Errorf("span %s has parent %s/%s, want a child of %s/%s", s.Name, s.Parent.TraceID(), s.Parent.SpanID(), traceID, parentID)
			}
			want := `{"traceparent":"00-` + traceID + `-` + s.SpanContext.SpanID().String() + `-01"`
			if !strings.HasPrefix(got, want) {
				t.Errorf("tracing on: %q, want the span's own context %s...}", got, want)
			}
		})
	}
}

// TestValueWithoutSpan: no span, no annotation.
func TestValueWithoutSpan(t *testing.T) {
	if v := Value(trace.ContextWithSpanContext(context.Background(), trace.SpanContext{})); v != "" {
		t.Errorf("Value = %q, want empty", v)
	}
}
