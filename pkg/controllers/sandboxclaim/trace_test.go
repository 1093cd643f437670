// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/claimtest"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/tracecontext"
)

const (
	testTraceID  = claimtest.TraceID
	testParentID = claimtest.ParentID
	testTrace    = claimtest.Trace
)

var traced = claimtest.Traced

// TestTraceContextReachesSandbox: whichever way a claim gets its sandbox, the sandbox carries the
// claim's trace context; with tracing on, that of the span that provisioned it, a child of the
// claim's.
func TestTraceContextReachesSandbox(t *testing.T) {
	paths := []struct {
		name string
		run  func(f *fixture, claim *extensionsv1beta1.SandboxClaim) *agentsv1beta1.Sandbox
	}{
		{name: "cold", run: func(f *fixture, claim *extensionsv1beta1.SandboxClaim) *agentsv1beta1.Sandbox {
			claim.Spec.WarmPool = new(extensionsv1beta1.WarmPoolPolicyNone)
			f.add(claim)
			f.mustSync(testClaim)
			return only(f.t, f.createdSandboxes())
		}},
		{name: "warm adoption", run: func(f *fixture, claim *extensionsv1beta1.SandboxClaim) *agentsv1beta1.Sandbox {
			f.add(claim)
			f.mustSync(testClaim)
			return only(f.t, f.updatedSandboxes())
		}},
	}
	for _, p := range paths {
		for _, tracing := range []bool{false, true} {
			t.Run(p.name+map[bool]string{false: ", tracing off", true: ", tracing on"}[tracing], func(t *testing.T) {
				member := warmMember("m1", testPool)
				f := newFixture(t, newTemplate(), member)
				f.warm(member)
				exporter := tracetest.NewInMemoryExporter()
				if tracing {
					f.c.tracer = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
				}
				sb := p.run(f, newClaim(traced))
				got := sb.Annotations[tracecontext.Annotation]
				if !tracing {
					if got != testTrace {
						t.Errorf("sandbox trace context %q, want the claim's %q", got, testTrace)
					}
					return
				}
				spans := exporter.GetSpans()
				if len(spans) != 1 || spans[0].Parent.SpanID().String() != testParentID {
					t.Fatalf("spans %+v, want one child of the claim's", spans)
				}
				if want := `{"traceparent":"00-` + testTraceID + `-` + spans[0].SpanContext.SpanID().String() + `-01"}`; got != want {
					t.Errorf("sandbox trace context %q, want the provisioning span's %q", got, want)
				}
			})
		}
	}
}

// TestNoTraceContextWithoutOne: a claim without a trace gives its sandbox none.
func TestNoTraceContextWithoutOne(t *testing.T) {
	f := newFixture(t, newClaim(warmpool(extensionsv1beta1.WarmPoolPolicyNone)), newTemplate())
	f.mustSync(testClaim)
	for k := range only(t, f.createdSandboxes()).Annotations {
		if strings.Contains(k, "trace") {
			t.Errorf("sandbox has annotation %s", k)
		}
	}
}

func only(t *testing.T, sbs []*agentsv1beta1.Sandbox) *agentsv1beta1.Sandbox {
	t.Helper()
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes written, want 1", len(sbs))
	}
	return sbs[0]
}
