// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// retryBackoff spaces retries: 0.2s doubling to at most 5s, six attempts (about 12s in all).
var retryBackoff = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 6, Cap: 5 * time.Second}

// retryOn runs fn until it succeeds, fails with an error retriable does not accept, the backoff
// runs out or ctx ends. A server's Retry-After is honoured when it asks for longer.
func retryOn(ctx context.Context, retriable func(error) bool, fn func() error) error {
	backoff := retryBackoff
	for {
		err := fn()
		if err == nil || !retriable(err) || backoff.Steps <= 1 {
			return err
		}
		delay := backoff.Step()
		if seconds, ok := apierrors.SuggestsClientDelay(err); ok && time.Duration(seconds)*time.Second > delay {
			delay = time.Duration(seconds) * time.Second
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(delay):
		}
	}
}

// isTransient accepts the failures a repeated idempotent request may not meet again: conflicts,
// throttling, the server's timeouts and 5xx, and connections refused or reset.
func isTransient(err error) bool {
	switch {
	case apierrors.IsConflict(err), apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err),
		apierrors.IsTimeout(err), apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err),
		apierrors.IsUnexpectedServerError(err):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == 502 || code == 503 || code == 504
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// endSpan records err on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
