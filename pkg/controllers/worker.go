// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// A WorkLoop runs the level-triggered loop every controller shares: workers take keys from a
// typed rate-limited queue, call the controller's sync, and requeue with backoff on error.

package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
)

// WorkLoop is a named queue of namespace/name keys and the sync function that handles one key.
type WorkLoop struct {
	Name  string
	Queue workqueue.TypedRateLimitingInterface[string]
	Sync  func(ctx context.Context, key string) error
}

// NewWorkLoop returns a loop whose queue is named for its metrics.
func NewWorkLoop(name string, sync func(ctx context.Context, key string) error) *WorkLoop {
	return &WorkLoop{
		Name: name,
		Queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		Sync: sync,
	}
}

// Enqueue adds the key of obj (a live object or a deletion tombstone).
func (l *WorkLoop) Enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("%s: cannot key %T: %w", l.Name, obj, err))
		return
	}
	l.Queue.Add(key)
}

// Run waits for the caches, then runs workers until ctx is done and they have finished.
func (l *WorkLoop) Run(ctx context.Context, workers int, synced ...cache.InformerSynced) {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx).WithValues("controller", l.Name)
	logger.Info("Starting controller", "workers", workers)
	defer logger.Info("Stopped controller")

	go func() {
		<-ctx.Done()
		l.Queue.ShutDown()
	}()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, synced...) {
		return
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, l.work, time.Second) })
	}
	wg.Wait()
}

func (l *WorkLoop) work(ctx context.Context) {
	for l.next(ctx) {
	}
}

func (l *WorkLoop) next(ctx context.Context) bool {
	key, quit := l.Queue.Get()
	if quit {
		return false
	}
	defer l.Queue.Done(key)
	start := time.Now()
	err := l.Sync(ctx, key)
	metrics.ObserveReconcile(l.Name, start, err)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Reconcile failed, will retry", "controller", l.Name, "key", key)
		l.Queue.AddRateLimited(key)
		return true
	}
	l.Queue.Forget(key)
	return true
}
