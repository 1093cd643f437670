// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package metrics holds the metrics the controllers and the create-time claim binding report,
// served on the server's /metrics.
package metrics

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	// Registers client-go's request metrics (rest_client_*), to see the controllers' traffic.
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	// Registers the workqueue metrics (depth, adds, latency, ...) of every named queue.
	_ "k8s.io/component-base/metrics/prometheus/workqueue"
)

var (
	reconcileTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "sandbox_controller_reconcile_total",
		Help:           "Reconciles per controller and result (success, error).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller", "result"})

	reconcileDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "sandbox_controller_reconcile_duration_seconds",
		Help:           "Time one reconcile took, per controller.",
		Buckets:        []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		StabilityLevel: metrics.ALPHA,
	}, []string{"controller"})

	// Leader is 1 while this replica holds the controllers' lease.
	Leader = metrics.NewGauge(&metrics.GaugeOpts{
		Name:           "sandbox_controller_leader",
		Help:           "1 while this replica holds the lease and runs the controllers, 0 otherwise.",
		StabilityLevel: metrics.ALPHA,
	})

	registerOnce          sync.Once
	registerCollectorOnce sync.Once
)

// Register adds the metrics to the server's registry; safe to call more than once.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(reconcileTotal, reconcileDuration, Leader,
			ClaimStartupLatency, ClaimControllerStartupLatency, ClientClaimStartupLatency, SandboxCreationLatency, ClaimCreations, buildInfo)
		buildInfo.Set(1)
	})
}

func mustRegisterCollector(c metrics.StableCollector) {
	legacyregistry.CustomMustRegister(c)
}

// ObserveReconcile records one reconcile of controller that started at start.
func ObserveReconcile(controller string, start time.Time, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	reconcileTotal.WithLabelValues(controller, result).Inc()
	reconcileDuration.WithLabelValues(controller).Observe(time.Since(start).Seconds())
}
