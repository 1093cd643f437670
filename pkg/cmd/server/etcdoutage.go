// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	etcd3metrics "k8s.io/apiserver/pkg/storage/etcd3/metrics"
	"k8s.io/klog/v2"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apiserver"
)

// EtcdOutageOptions say how the server behaves while its etcd is unreachable and how fast it
// notices etcd back.
type EtcdOutageOptions struct {
	ProbeInterval  time.Duration
	ProbeTimeout   time.Duration
	ReconnectEvery time.Duration
	DeadlineMargin time.Duration
}

// NewEtcdOutageOptions returns the defaults: an unreachable etcd is noticed within a second and a
// returning one within about a quarter of a second.
func NewEtcdOutageOptions() *EtcdOutageOptions {
	return &EtcdOutageOptions{
		ProbeInterval:  500 * time.Millisecond,
		ProbeTimeout:   time.Second,
		ReconnectEvery: 100 * time.Millisecond,
		DeadlineMargin: time.Second,
	}
}

// AddFlags adds the flags of o to fs.
func (o *EtcdOutageOptions) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.ProbeInterval, "etcd-probe-interval", o.ProbeInterval,
		"How often the server checks that its etcd answers (it also notices a refused connection at once). "+
			"While etcd is unreachable, requests that need it are answered at once with 503 and a Retry-After, "+
			"and /readyz fails (check etcd). 0 turns the probe off: requests then wait for etcd until their "+
			"timeout, and the checks of --etcd-healthcheck-timeout and --etcd-readycheck-timeout apply.")
	fs.DurationVar(&o.ProbeTimeout, "etcd-probe-timeout", o.ProbeTimeout,
		"How long a check of --etcd-probe-interval may take before etcd counts as unreachable.")
	fs.DurationVar(&o.ReconnectEvery, "etcd-reconnect-interval", o.ReconnectEvery,
		"While etcd refuses connections, how often the server's etcd connections try again, so that "+
			"the server serves again within about this much of etcd's return. 0 leaves it to the etcd "+
			"client's backoff, which after a 20 s outage reconnects up to 17 s after etcd is back.")
	fs.DurationVar(&o.DeadlineMargin, "storage-deadline-margin", o.DeadlineMargin,
		"Requests that need etcd end this much before their deadline (by at most half their time), so "+
			"that a slow etcd is answered with a 504 that reaches the client through kube-apiserver "+
			"before its own timeout fires.")
}

// Validate reports invalid values.
func (o *EtcdOutageOptions) Validate() []error {
	var errs []error
	for name, d := range map[string]time.Duration{
		"--etcd-probe-interval": o.ProbeInterval, "--etcd-reconnect-interval": o.ReconnectEvery,
		"--storage-deadline-margin": o.DeadlineMargin,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative", name))
		}
	}
	if o.ProbeInterval > 0 && o.ProbeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--etcd-probe-timeout must be positive"))
	}
	return errs
}

// ApplyToStorage makes the storage's etcd connections reconnect every --etcd-reconnect-interval
// and returns the probe, or nil when it is off. Call it before the etcd options are applied: they
// copy the transport configuration.
func (o *EtcdOutageOptions) ApplyToStorage(etcd *genericoptions.EtcdOptions) *apiserver.EtcdProbe {
	probe := apiserver.NewEtcdProbe(o.ProbeInterval, o.ProbeTimeout, o.ReconnectEvery)
	etcd.StorageConfig.Transport.EgressLookup = probe.EgressLookup
	if o.ProbeInterval == 0 {
		return nil
	}
	return probe
}

// ApplyTo runs the probe while the server runs, answers requests with 503 while it finds etcd
// unreachable, measures etcd's database size for /metrics over its connection, and makes it the
// "etcd" check of /healthz and /readyz in place of the generic server's checks, which wait for
// etcd up to their timeout and reconnect as slowly as the client.
// etcd stays out of /livez: restarting the server does not bring etcd back, and it serves again on
// its own once etcd is.
func (o *EtcdOutageOptions) ApplyTo(config *genericapiserver.RecommendedConfig, etcd *genericoptions.EtcdOptions, probe *apiserver.EtcdProbe) {
	config.BuildHandlerChainFunc = apiserver.WithEtcdReachable(config.BuildHandlerChainFunc, probe, o.DeadlineMargin)
	if probe == nil {
		return
	}
	config.RESTOptionsGetter = apiserver.WithEtcdGuard(config.RESTOptionsGetter, probe)
	etcd3metrics.SetStorageMonitorGetter(probe.StorageMonitors)
	isEtcdCheck := func(c healthz.HealthChecker) bool { return c.Name() == "etcd" || c.Name() == "etcd-readiness" }
	config.HealthzChecks = append(slices.DeleteFunc(config.HealthzChecks, isEtcdCheck), probe.HealthCheck())
	config.ReadyzChecks = append(slices.DeleteFunc(config.ReadyzChecks, isEtcdCheck), probe.HealthCheck())
	config.LivezChecks = slices.DeleteFunc(config.LivezChecks, isEtcdCheck)
	transport, prefix := etcd.StorageConfig.Transport, etcd.StorageConfig.Prefix
	config.AddPostStartHookOrDie("etcd-probe", func(hook genericapiserver.PostStartHookContext) error {
		go func() {
			if err := probe.Run(hook.Context, transport, prefix); err != nil {
				klog.ErrorS(err, "The etcd probe stopped")
			}
		}()
		return nil
	})
}
