// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package tracecontext carries a W3C trace context across objects as the seeds do: the
// annotation opentelemetry.io/trace-context holds a JSON map of the traceparent (and tracestate)
// headers. A client records its trace on the claim it creates; the claim's sandbox carries the
// context of the span that provisioned it, a child of the client's, so the trace goes on through
// every object of the claim.
package tracecontext

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Annotation holds an object's trace context, for example
// {"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}.
const Annotation = "opentelemetry.io/trace-context"

// instrumentationScope names the spans the controllers start.
const instrumentationScope = "sandbox-apiserver"

// w3c is the only propagator, as in the seeds: no baggage.
var w3c = propagation.TraceContext{}

// Extract returns ctx with the remote span context recorded in annotations, if it holds a valid
// one; anything else there is ignored.
func Extract(ctx context.Context, annotations map[string]string) context.Context {
	raw := annotations[Annotation]
	if raw == "" {
		return ctx
	}
	carrier := propagation.MapCarrier{}
	if err := json.Unmarshal([]byte(raw), &carrier); err != nil {
		return ctx
	}
	return w3c.Extract(ctx, carrier)
}

// Value is the annotation value for the span context of ctx, "" when it has none.
func Value(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	w3c.Inject(ctx, carrier)
	out, err := json.Marshal(carrier)
	if err != nil {
		return ""
	}
	return string(out)
}

// Start starts the span name as a child of the trace recorded in annotations, from provider (a
// no-op one when tracing is not configured), and returns the annotation value of the objects it
// makes: the new span's context when it records, the recorded one as it is otherwise. The span
// is ended by the caller. Without a trace recorded there is no span and no value.
func Start(ctx context.Context, provider trace.TracerProvider, annotations map[string]string, name string) (context.Context, string, trace.Span) {
	parent := Extract(ctx, annotations)
	if !trace.SpanContextFromContext(parent).IsValid() {
		return ctx, "", trace.SpanFromContext(ctx)
	}
	ctx, span := provider.Tracer(instrumentationScope).Start(parent, name)
	return ctx, Value(ctx), span
}
