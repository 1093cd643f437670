// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	kscheme "k8s.io/client-go/kubernetes/scheme"
)

// LogOptions says which of the sandbox's logs Logs streams, as kubectl logs' flags do.
type LogOptions struct {
	// Container names the container; empty means the handle's (see InContainer), by default the
	// main one.
	Container string
	// Follow keeps the stream open for new lines until ctx ends.
	Follow bool
	// Previous streams the log of the container's previous run.
	Previous bool
	// TailLines, when set, starts that many lines before the end.
	TailLines *int64
	// Since, when not zero, starts at lines no older than that.
	Since time.Duration
	// Timestamps prefixes each line with its RFC 3339 time.
	Timestamps bool
	// LimitBytes, when set, ends the stream after that many bytes.
	LimitBytes *int64
}

// Logs streams the sandbox's log through the log subresource; the caller closes it. With
// Follow, the stream lasts until ctx ends or the container stops.
func (s *Sandbox) Logs(ctx context.Context, o LogOptions) (_ io.ReadCloser, err error) {
	ctx, span := s.startSpan(ctx, "sandbox.Logs")
	defer func() { endSpan(span, err) }()
	if o.Container == "" {
		o.Container = s.container
	}
	podOpts := &corev1.PodLogOptions{
		Container:  o.Container,
		Follow:     o.Follow,
		Previous:   o.Previous,
		TailLines:  o.TailLines,
		Timestamps: o.Timestamps,
		LimitBytes: o.LimitBytes,
	}
	if o.Since > 0 {
		seconds := int64(o.Since.Round(time.Second) / time.Second)
		podOpts.SinceSeconds = &seconds
	}
	var stream io.ReadCloser
	// Opening the stream is a read: repeat it on transient failures.
	err = retryOn(ctx, isTransient, func() error {
		var err error
		stream, err = s.subresource("GET", "log").SpecificallyVersionedParams(podOpts, kscheme.ParameterCodec, corev1.SchemeGroupVersion).Stream(ctx)
		return err
	})
	return stream, err
}
