// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// ProbeOptions are the seed controller's own listeners: plain HTTP, without authentication, for a
// deployment that scrapes metrics and probes health as it did the seed controller. The secure
// port serves the same /metrics and health checks with delegated authentication and
// authorization; these listeners are off unless an address is given.
type ProbeOptions struct {
	// MetricsBindAddress serves /metrics (and /debug/pprof/profile with EnablePprof).
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz, /livez and /readyz.
	HealthProbeBindAddress string
	// EnablePprof adds the CPU profile to the metrics listener, as the seeds do.
	EnablePprof bool
}

// noListener is the address that turns a listener off, as in the seeds' controller runtime.
const noListener = "0"

// NewProbeOptions returns the defaults: both listeners off.
func NewProbeOptions() *ProbeOptions {
	return &ProbeOptions{MetricsBindAddress: noListener, HealthProbeBindAddress: noListener}
}

// AddFlags adds the listeners' flags to fs.
func (o *ProbeOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		`Address (host:port) of a plain HTTP listener serving /metrics without authentication, as the seed controller did; "0" for none. The secure port serves /metrics to authorized clients either way.`)
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		`Address (host:port) of a plain HTTP listener serving /healthz, /livez and /readyz; "0" for none. The secure port serves them either way.`)
	fs.BoolVar(&o.EnablePprof, "enable-pprof", o.EnablePprof,
		"Serve the CPU profile, /debug/pprof/profile, on the --metrics-bind-address listener. (--profiling governs the secure port's /debug/pprof.)")
}

// Validate reports every invalid option.
func (o *ProbeOptions) Validate() []error {
	var errs []error
	for flag, addr := range map[string]string{"--metrics-bind-address": o.MetricsBindAddress, "--health-probe-bind-address": o.HealthProbeBindAddress} {
		if addr == noListener || addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", flag, err))
		}
	}
	if o.EnablePprof && o.listens(o.MetricsBindAddress) == "" {
		errs = append(errs, errors.New("--enable-pprof serves on the --metrics-bind-address listener: give it an address"))
	}
	return errs
}

func (o *ProbeOptions) listens(addr string) string {
	if addr == noListener || addr == "" {
		return ""
	}
	return addr
}

// handlers are the listeners to start, by address; health serves the server's own health checks.
func (o *ProbeOptions) handlers(health http.Handler) map[string]http.Handler {
	out := map[string]http.Handler{}
	if addr := o.listens(o.MetricsBindAddress); addr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", legacyregistry.Handler())
		if o.EnablePprof {
			mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		}
		out[addr] = mux
	}
	if addr := o.listens(o.HealthProbeBindAddress); addr != "" {
		mux, _ := out[addr].(*http.ServeMux)
		if mux == nil {
			mux = http.NewServeMux()
			out[addr] = mux
		}
		for _, p := range []string{"/healthz", "/livez", "/readyz"} {
			mux.Handle(p, health)
			mux.Handle(p+"/", health)
		}
	}
	return out
}

// Listen binds the listeners, so that a taken address fails the start; serve runs them until ctx
// is done.
func (o *ProbeOptions) Listen(health http.Handler) (serve func(ctx context.Context), err error) {
	type listener struct {
		net.Listener
		http.Handler
	}
	var ls []listener
	for addr, h := range o.handlers(health) {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			for _, prev := range ls {
				_ = prev.Close()
			}
			return nil, fmt.Errorf("listening on %s: %w", addr, err)
		}
		ls = append(ls, listener{l, h})
	}
	return func(ctx context.Context) {
		for _, l := range ls {
			srv := &http.Server{Handler: l.Handler, ReadHeaderTimeout: 10 * time.Second}
			go func() {
				if err := srv.Serve(l.Listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
					klog.ErrorS(err, "Plain listener stopped", "address", l.Addr().String())
				}
			}()
			context.AfterFunc(ctx, func() {
				shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(shutdownCtx)
			})
		}
	}, nil
}
