// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package manager

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/namespacecleanup"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/sandbox"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/sandboxclaim"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/sandboxtemplate"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/sandboxwarmpool"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/fastpath"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	sandboxscheme "github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/scheme"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/podexec"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/warm"
)

// userAgent names the controllers in the cluster's audit log and request metrics.
const userAgent = "sandbox-apiserver-controllers"

// eventScheme resolves our kinds for the events recorded about them.
var eventScheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(eventScheme))
	utilruntime.Must(sandboxscheme.AddToScheme(eventScheme))
}

// Run runs the enabled controllers until ctx is done: at once without leader election, otherwise
// while this replica holds the lease, campaigning again whenever it loses it. sandboxConfig
// reaches this server (the loopback client, for writes), kubeConfig the cluster's kube-apiserver;
// source serves the controllers' caches of our kinds from this server's registries.
// chooser picks the warm members the claim controller adopts (nil when it is disabled): the
// process's one, which the create-time binding shares. sharedRevisions says claims and sandboxes
// are kept in one etcd cluster, so that their resourceVersions compare. tracer records the
// controllers' spans (the server's, from --tracing-config-file).
func Run(ctx context.Context, o *Options, sandboxConfig, kubeConfig *rest.Config, source *fastpath.InformerSource, chooser *warm.Chooser, sharedRevisions bool, tracer trace.TracerProvider) error {
	metrics.Register()
	kubeConfig = rest.AddUserAgent(rest.CopyConfig(kubeConfig), userAgent)
	kubeConfig.QPS, kubeConfig.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	// Only built-in kinds are read and written there, and they speak protobuf: cheaper than JSON
	// to encode and decode on both sides, for the pods' writes and the watches of children alike.
	kubeConfig.ContentType = runtime.ContentTypeProtobuf
	kubeConfig.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(kubeConfig)
	if err != nil {
		return err
	}
	// The claim controller delivers claims' env to warm sandboxes through pods/exec.
	podExec := podexec.New(kubeConfig, kube)
	// The loopback connection to our own API is not rate limited: it is this process.
	sandboxConfig = rest.AddUserAgent(rest.CopyConfig(sandboxConfig), userAgent)
	sandboxConfig.QPS, sandboxConfig.Burst = -1, 0
	// Our kinds speak protobuf too; the clientset would pick it by default, this makes it explicit.
	sandboxConfig.ContentType = runtime.ContentTypeProtobuf
	sandboxConfig.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	client, err := versioned.NewForConfig(sandboxConfig)
	if err != nil {
		return err
	}

	if !o.LeaderElection.LeaderElect {
		metrics.Leader.Set(1)
		return runControllers(ctx, o, kube, podExec, client, source, chooser, sharedRevisions, tracer)
	}
	host, _ := os.Hostname()
	id := host + "_" + uuid.NewString()
	le := o.LeaderElection
	lock, err := resourcelock.New(le.ResourceLock, o.LeaseNamespace(), le.ResourceName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   le.LeaseDuration.Duration,
			RenewDeadline:   le.RenewDeadline.Duration,
			RetryPeriod:     le.RetryPeriod.Duration,
			ReleaseOnCancel: true,
			Name:            le.ResourceName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					logger.Info("Leading: starting controllers", "identity", id)
					metrics.Leader.Set(1)
					if err := runControllers(ctx, o, kube, podExec, client, source, chooser, sharedRevisions, tracer); err != nil {
						utilruntime.HandleErrorWithContext(ctx, err, "Controllers stopped")
					}
				},
				OnStoppedLeading: func() {
					metrics.Leader.Set(0)
					logger.Info("Not leading: controllers stopped", "identity", id)
				},
			},
		})
	}
	return nil
}

// runControllers starts the informers and the enabled controllers and blocks until ctx is done.
// sharedRevisions says claims and sandboxes are kept in one etcd cluster.
func runControllers(ctx context.Context, o *Options, kube kubernetes.Interface, podExec sandboxclaim.PodExec, client versioned.Interface, source *fastpath.InformerSource, chooser *warm.Chooser, sharedRevisions bool, tracer trace.TracerProvider) error {
	// Only the children of Sandboxes are cached from the cluster: they carry the name hash label.
	children := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(trimForCache),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = agentsv1beta1.SandboxNameHashLabel }))
	// The templates' NetworkPolicies carry the template-ref hash label.
	policies := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(trimForCache),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = extensionsv1beta1.SandboxTemplateRefHashLabel }))
	// Namespaces are few; the namespace cleanup and the other controllers watch them all.
	cluster := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(trimForCache))
	ours := source.InformerFactory(client, DropManagedFields, nil)

	recorder, stopEvents := newEventRecorder(ctx, kube)
	defer stopEvents()

	var wg sync.WaitGroup
	if o.Enabled(sandbox.Name) {
		ctrl, err := sandbox.New(sandbox.Config{
			Kube:          kube,
			Client:        client,
			Sandboxes:     ours.Agents().V1beta1().Sandboxes(),
			Namespaces:    cluster.Core().V1().Namespaces(),
			Pods:          children.Core().V1().Pods(),
			Services:      children.Core().V1().Services(),
			PVCs:          children.Core().V1().PersistentVolumeClaims(),
			Events:        recorder,
			ClusterDomain: o.ClusterDomain,
			Workers:       o.SandboxWorkers,
		})
		if err != nil {
			return fmt.Errorf("sandbox controller: %w", err)
		}
		wg.Go(func() { ctrl.Run(ctx) })
	}
	if o.Enabled(sandboxtemplate.Name) {
		ctrl, err := sandboxtemplate.New(sandboxtemplate.Config{
			Kube:            kube,
			Client:          client,
			Templates:       ours.Extensions().V1beta1().SandboxTemplates(),
			NetworkPolicies: policies.Networking().V1().NetworkPolicies(),
			Namespaces:      cluster.Core().V1().Namespaces(),
			Events:          recorder,
			Workers:         o.TemplateWorkers,
			ServerPeer:      o.ServerPeer(),
			ClusterCIDRs:    o.ClusterCIDRs,
		})
		if err != nil {
			return fmt.Errorf("sandboxtemplate controller: %w", err)
		}
		wg.Go(func() { ctrl.Run(ctx) })
	}
	if o.Enabled(sandboxwarmpool.Name) {
		ctrl, err := sandboxwarmpool.New(sandboxwarmpool.Config{
			Client:       client,
			Pools:        ours.Extensions().V1beta1().SandboxWarmPools(),
			Templates:    ours.Extensions().V1beta1().SandboxTemplates(),
			Sandboxes:    ours.Agents().V1beta1().Sandboxes(),
			Namespaces:   cluster.Core().V1().Namespaces(),
			Events:       recorder,
			Workers:      o.WarmPoolWorkers,
			MaxBatchSize: o.WarmPoolMaxBatchSize,
		})
		if err != nil {
			return fmt.Errorf("sandboxwarmpool controller: %w", err)
		}
		wg.Go(func() { ctrl.Run(ctx) })
	}
	if o.Enabled(sandboxclaim.Name) {
		ctrl, err := sandboxclaim.New(sandboxclaim.Config{
			Client:          client,
			Claims:          ours.Extensions().V1beta1().SandboxClaims(),
			Templates:       ours.Extensions().V1beta1().SandboxTemplates(),
			Sandboxes:       ours.Agents().V1beta1().Sandboxes(),
			Chooser:         chooser,
			Namespaces:      cluster.Core().V1().Namespaces(),
			Events:          recorder,
			Workers:         o.ClaimWorkers,
			SharedRevisions: sharedRevisions,
			Tracer:          tracer,
			PodExec:         podExec,
		})
		if err != nil {
			return fmt.Errorf("sandboxclaim controller: %w", err)
		}
		wg.Go(func() { ctrl.Run(ctx) })
	}
	if o.Enabled(namespacecleanup.Name) {
		ctrl, err := namespacecleanup.New(namespacecleanup.Config{
			Kube:       kube,
			Client:     client,
			Namespaces: cluster.Core().V1().Namespaces(),
			Sandboxes:  ours.Agents().V1beta1().Sandboxes(),
			Claims:     ours.Extensions().V1beta1().SandboxClaims(),
			WarmPools:  ours.Extensions().V1beta1().SandboxWarmPools(),
			Templates:  ours.Extensions().V1beta1().SandboxTemplates(),
		})
		if err != nil {
			return fmt.Errorf("namespacecleanup controller: %w", err)
		}
		wg.Go(func() { ctrl.Run(ctx) })
	}
	for _, f := range []interface{ Start(<-chan struct{}) }{children, policies, cluster, ours} {
		f.Start(ctx.Done())
	}
	wg.Wait()
	children.Shutdown()
	policies.Shutdown()
	cluster.Shutdown()
	ours.Shutdown()
	return nil
}

// newEventRecorder records events about our kinds in the cluster until stop is called.
func newEventRecorder(ctx context.Context, kube kubernetes.Interface) (recorder record.EventRecorder, stop func()) {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return broadcaster.NewRecorder(eventScheme, corev1.EventSource{Component: "sandbox-apiserver"}), broadcaster.Shutdown
}
