// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/fake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/tracecontext"
)

// setReadyOnCreate gives a claim the fake clientset creates the Ready condition status/reason,
// as the claim controller would, once the client watches it (the fake's watch does not start
// at a resourceVersion: an update before it would be missed).
func setReadyOnCreate(t *testing.T, clientset *fake.Clientset, status metav1.ConditionStatus, reason string) {
	t.Helper()
	w, err := clientset.ExtensionsV1beta1().SandboxClaims("team-a").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watching := make(chan struct{}, 1)
	clientset.PrependWatchReactor("sandboxclaims", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := clientset.Tracker().Watch(action.GetResource(), action.GetNamespace())
		select {
		case watching <- struct{}{}:
		default:
		}
		return true, w, err
	})
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			claim, ok := ev.Object.(*extensionsv1beta1.SandboxClaim)
			if ev.Type != watch.Added || !ok {
				continue
			}
			<-watching
			claim = claim.DeepCopy()
			claim.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, Message: "from the test"}}
			claim.Status.SandboxStatus.Name = "sandbox-of-" + claim.Name
			_, _ = clientset.ExtensionsV1beta1().SandboxClaims("team-a").UpdateStatus(context.Background(), claim, metav1.UpdateOptions{})
			return
		}
	}()
}

// TestClaim creates a claim through a fake clientset and waits for it to become Ready: the
// claim carries the SDK's label and annotation and the trace context of the Claim span.
func TestClaim(t *testing.T) {
	clientset := fake.NewSimpleClientset() // NewClientset needs a structured-merge schema of our kinds
	// The fake clientset has no generateName.
	clientset.PrependReactor("create", "sandboxclaims", func(action k8stesting.Action) (bool, runtime.Object, error) {
		claim := action.(k8stesting.CreateAction).GetObject().(*extensionsv1beta1.SandboxClaim)
		if claim.Name == "" {
			claim.Name = claim.GenerateName + "x7k2p"
		}
		return false, nil, nil
	})
	setReadyOnCreate(t, clientset, metav1.ConditionTrue, "DependenciesReady")
	exporter := tracetest.NewInMemoryExporter()
	client := newClient(nil, clientset, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter)))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := client.Claim(ctx, "team-a", FromTemplate("python"), WithLabels(map[string]string{"team": "a"}))
	if err != nil {
		t.Fatal(err)
	}
	if sb.Name() != "sandbox-x7k2p" || sb.SandboxName() != "sandbox-of-sandbox-x7k2p" || sb.Kind() != KindClaim {
		t.Errorf("handle %s, sandbox %q", sb, sb.SandboxName())
	}
	claim, err := clientset.ExtensionsV1beta1().SandboxClaims("team-a").Get(ctx, sb.Name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Labels[CreatedByLabel] != CreatedByValue || claim.Labels["team"] != "a" || claim.Annotations[FirstRequestedAtAnnotation] == "" {
		t.Errorf("claim metadata %v %v", claim.Labels, claim.Annotations)
	}
	spans := exporter.GetSpans()
	var claimSpan *tracetest.SpanStub
	for i := range spans {
		if spans[i].Name == "sandbox.Claim" {
			claimSpan = &spans[i]
		}
	}
	if claimSpan == nil {
		t.Fatalf("no sandbox.Claim span among %d", len(spans))
	}
	recorded := tracecontext.Extract(context.Background(), claim.Annotations)
	if got := trace.SpanContextFromContext(recorded); got.SpanID() != claimSpan.SpanContext.SpanID() || got.TraceID() != claimSpan.SpanContext.TraceID() {
		t.Errorf("the claim records %v, want the Claim span %v", got, claimSpan.SpanContext)
	}

	// Later operations continue the claim's trace.
	exporter.Reset()
	if err := sb.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if spans := exporter.GetSpans(); len(spans) != 1 || spans[0].Parent.SpanID() != claimSpan.SpanContext.SpanID() {
		t.Errorf("Close's span is not a child of the Claim span: %+v", spans)
	}
	if _, err := clientset.ExtensionsV1beta1().SandboxClaims("team-a").Get(ctx, sb.Name(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after Close: %v, want NotFound", err)
	}
}

// TestClaimFails: a reason no waiting cures ends the wait with a *ClaimFailedError, and the
// claim is deleted again.
func TestClaimFails(t *testing.T) {
	clientset := fake.NewSimpleClientset() // NewClientset needs a structured-merge schema of our kinds
	setReadyOnCreate(t, clientset, metav1.ConditionFalse, extensionsv1beta1.ClaimReasonTemplateNotFound)
	client := newClient(nil, clientset, sdktrace.NewTracerProvider())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := client.Claim(ctx, "team-a", FromPool("missing"), WithName("doomed"))
	var failed *ClaimFailedError
	if !errors.As(err, &failed) || failed.Reason != extensionsv1beta1.ClaimReasonTemplateNotFound {
		t.Fatalf("Claim: %v, want a ClaimFailedError for TemplateNotFound", err)
	}
	if _, err := clientset.ExtensionsV1beta1().SandboxClaims("team-a").Get(ctx, "doomed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the failed claim is still there: %v", err)
	}
}
