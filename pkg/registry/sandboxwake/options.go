// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwake

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// Options are the server flags of waking and activity.
type Options struct {
	// WakeTimeout bounds how long a proxied request waits for a suspended or starting sandbox.
	WakeTimeout time.Duration
	// ActivityInterval is how often, at most, a replica writes a sandbox's
	// status.lastActivityTime while it proxies traffic to it.
	ActivityInterval time.Duration
	// MaxWaitersPerSandbox and MaxWaiters bound the requests that wait for sandboxes to be Ready,
	// per sandbox and per server replica; MaxConnectionsPerSandbox bounds the requests and
	// connections one replica proxies to one sandbox at once. Past them: 429 with Retry-After.
	MaxWaitersPerSandbox     int
	MaxWaiters               int
	MaxConnectionsPerSandbox int
	// MaxConnections bounds the requests and connections one replica proxies to all sandboxes.
	MaxConnections int
	// MaxStreamsPerSandbox and MaxStreams bound the exec, attach and portforward sessions and
	// followed logs one replica holds open, per sandbox and in all: each one is a hijacked
	// connection, a second one to kube-apiserver and a few goroutines.
	MaxStreamsPerSandbox int
	MaxStreams           int
}

// NewOptions returns the defaults: a 30 s wake timeout (a cold pod with its image cached starts
// well within it) and activity written every 5 s, which keeps the 10 s minimum idle timeout safe.
func NewOptions() *Options {
	return &Options{WakeTimeout: 30 * time.Second, ActivityInterval: 5 * time.Second,
		MaxWaitersPerSandbox: 64, MaxWaiters: 1024, MaxConnectionsPerSandbox: 256, MaxConnections: 4096,
		MaxStreamsPerSandbox: 32, MaxStreams: 1024}
}

// AddFlags adds the flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.WakeTimeout, "proxy-wake-timeout", o.WakeTimeout,
		"How long a request through sandboxes/proxy or sandboxclaims/proxy waits for a suspended or starting sandbox to be Ready; past it the request gets a 503 with Retry-After.")
	fs.DurationVar(&o.ActivityInterval, "proxy-activity-interval", o.ActivityInterval,
		"How often, at most, each server replica writes a sandbox's status.lastActivityTime while it proxies requests or holds connections to it. Must be at most half the shortest idle timeout (10s).")
	fs.IntVar(&o.MaxWaitersPerSandbox, "proxy-max-waiters-per-sandbox", o.MaxWaitersPerSandbox,
		"How many proxied requests may wait at once, per server replica, for one sandbox to wake or become Ready; past it a request gets a 429 with Retry-After.")
	fs.IntVar(&o.MaxWaiters, "proxy-max-waiters", o.MaxWaiters,
		"How many proxied requests may wait at once, per server replica, for any sandboxes to wake or become Ready; past it a request gets a 429 with Retry-After.")
	fs.IntVar(&o.MaxConnectionsPerSandbox, "proxy-max-connections-per-sandbox", o.MaxConnectionsPerSandbox,
		"How many requests and upgraded connections one server replica proxies to one sandbox at once; past it a request gets a 429 with Retry-After.")
	fs.IntVar(&o.MaxConnections, "proxy-max-connections", o.MaxConnections,
		"How many requests and upgraded connections one server replica proxies to all sandboxes at once; past it a request gets a 429 with Retry-After.")
	fs.IntVar(&o.MaxStreamsPerSandbox, "max-streams-per-sandbox", o.MaxStreamsPerSandbox,
		"How many exec, attach and portforward sessions and followed logs one server replica holds open to one sandbox at once; past it a request gets a 429 with Retry-After.")
	fs.IntVar(&o.MaxStreams, "max-streams", o.MaxStreams,
		"How many exec, attach and portforward sessions and followed logs one server replica holds open to all sandboxes at once; past it a request gets a 429 with Retry-After.")
}

// Validate reports every invalid option.
func (o *Options) Validate() []error {
	var errs []error
	if o.WakeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--proxy-wake-timeout must be positive, got %s", o.WakeTimeout))
	}
	if o.ActivityInterval <= 0 || o.ActivityInterval > 5*time.Second {
		errs = append(errs, fmt.Errorf("--proxy-activity-interval must be positive and at most 5s (half the 10s minimum idle timeout), got %s", o.ActivityInterval))
	}
	for _, bound := range []struct {
		flag  string
		value int
	}{
		{"--proxy-max-waiters-per-sandbox", o.MaxWaitersPerSandbox}, {"--proxy-max-waiters", o.MaxWaiters},
		{"--proxy-max-connections-per-sandbox", o.MaxConnectionsPerSandbox}, {"--proxy-max-connections", o.MaxConnections},
		{"--max-streams-per-sandbox", o.MaxStreamsPerSandbox}, {"--max-streams", o.MaxStreams},
	} {
		if bound.value <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %d", bound.flag, bound.value))
		}
	}
	return errs
}
