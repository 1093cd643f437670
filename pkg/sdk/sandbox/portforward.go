// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// PortForward is a running forward from a local port to a port of the sandbox.
type PortForward struct {
	local  int
	stop   chan struct{}
	done   chan struct{}
	err    error
	cancel context.CancelFunc
}

// LocalPort is the local port connections are forwarded from (the one chosen, for local 0).
func (f *PortForward) LocalPort() int { return f.local }

// Done is closed when the forward has ended.
func (f *PortForward) Done() <-chan struct{} { return f.done }

// Err is why the forward ended (nil when it was closed); read it after Done is closed.
func (f *PortForward) Err() error { return f.err }

// Close stops the forward and waits until it has ended.
func (f *PortForward) Close() error {
	f.cancel()
	<-f.done
	return nil
}

// PortForward listens on 127.0.0.1:local (0 picks a free port, see LocalPort) and forwards each
// connection to port remote of the sandbox through the portforward subresource, until ctx ends
// or Close is called. It returns once the port is listening.
func (s *Sandbox) PortForward(ctx context.Context, local, remote int) (*PortForward, error) {
	ctx, span := s.startSpan(ctx, "sandbox.PortForward", attribute.Int("sandbox.port", remote))
	if remote <= 0 || remote > 65535 || local < 0 || local > 65535 {
		err := fmt.Errorf("sandbox: port-forward %d:%d: ports must be 1-65535 (0 for any local port)", local, remote)
		endSpan(span, err)
		return nil, err
	}
	dialer, err := s.client.portForwardDialer(s.subresource("POST", "portforward").URL())
	if err != nil {
		endSpan(span, err)
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &PortForward{stop: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	ready := make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("%d:%d", local, remote)}, f.stop, ready, io.Discard, io.Discard)
	if err != nil {
		cancel()
		endSpan(span, err)
		return nil, err
	}
	go func() {
		<-ctx.Done()
		close(f.stop)
	}()
	go func() {
		defer close(f.done)
		f.err = fw.ForwardPorts()
		cancel()
		endSpan(span, f.err)
	}()
	select {
	case <-ready:
	case <-f.done:
		if f.err == nil {
			f.err = errors.New("the port-forward ended before it was ready")
		}
		return nil, f.err
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		_ = f.Close()
		return nil, fmt.Errorf("port-forward: no local port: %v", err)
	}
	f.local = int(ports[0].Local)
	span.SetAttributes(attribute.String("sandbox.local_port", strconv.Itoa(f.local)))
	return f, nil
}

// portForwardDialer tunnels SPDY over WebSocket and falls back to SPDY, as kubectl does.
func (c *Client) portForwardDialer(u *url.URL) (httpstream.Dialer, error) {
	transport, upgrader, err := spdy.RoundTripperFor(c.config)
	if err != nil {
		return nil, err
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
	wsDialer, err := portforward.NewSPDYOverWebsocketDialer(u, c.config)
	if err != nil {
		return nil, err
	}
	return portforward.NewFallbackDialer(wsDialer, spdyDialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}
