// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package server holds the options and the command of sandbox-apiserver.
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/component-base/compatibility"
	"k8s.io/klog/v2"
	netutils "k8s.io/utils/net"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apiserver"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/manager"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/e2b"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/openapi"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxproxy"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxwake"
)

// etcdPrefix is where objects live in etcd; the etcd is this server's own, not the cluster's.
const etcdPrefix = "/registry/sandbox-apiserver"

// coreAPIQPS and coreAPIBurst limit the server's own requests to the cluster (admission's
// namespace lookups among them), as high as the delegated authentication and authorization clients.
const (
	coreAPIQPS   = 200
	coreAPIBurst = 400
)

// kubernetesVersion is the Kubernetes minor whose API machinery the server is built on; it decides
// which generic features and API behaviours are on.
const kubernetesVersion = "1.36"

// Options are everything sandbox-apiserver can be configured with.
type Options struct {
	RecommendedOptions *genericoptions.RecommendedOptions
	// ServerRun are the generic server's own flags: in-flight limits, request timeout, shutdown
	// delay, GOAWAY chance.
	ServerRun *genericoptions.ServerRunOptions

	// EtcdDataDir is where the embedded etcd keeps its data when no --etcd-servers are given.
	EtcdDataDir string
	// EtcdOutage is how the server behaves while its etcd is unreachable.
	EtcdOutage *EtcdOutageOptions

	// Controllers configure the controllers embedded in the server.
	Controllers *manager.Options
	// Wake configures waking sandboxes through the proxy and recording their activity.
	Wake *sandboxwake.Options

	// Probes are the seed controller's plain metrics and health listeners.
	Probes *ProbeOptions

	// ProxyHostNetworkCIDRs are the address ranges of the nodes whose host-network Sandbox pods the
	// proxy and the streams may reach.
	ProxyHostNetworkCIDRs []net.IPNet
	// ProxyIdentitySystemGroups are the system: groups the proxy passes to sandboxes.
	ProxyIdentitySystemGroups []string
	// Memory is the Go runtime's memory limit.
	Memory *MemoryOptions
	// E2B configures the E2B-compatible endpoint (off by default).
	E2B *e2b.Options

	// PrintVersion prints the version and exits.
	PrintVersion bool
}

// NewOptions returns the defaults: delegated authentication and authorization against the cluster,
// the recommended admission plugins (with SandboxNamespaceLifecycle in place of
// NamespaceLifecycle) and ResourceQuota, and storage in v1beta1.
func NewOptions() *Options {
	o := &Options{
		RecommendedOptions: genericoptions.NewRecommendedOptions(etcdPrefix, apiserver.Codecs.LegacyCodec(apiserver.StorageVersions...)),
		ServerRun:          genericoptions.NewServerRunOptions(),
		EtcdDataDir:        "_output/sandbox-etcd",
		EtcdOutage:         NewEtcdOutageOptions(),
		Controllers:        manager.NewOptions(),
		Wake:               sandboxwake.NewOptions(),
		Probes:             NewProbeOptions(),
		Memory:             NewMemoryOptions(),
		E2B:                e2b.NewOptions(),
	}
	o.RecommendedOptions.Etcd.StorageConfig.EncodeVersioner = apiserver.StorageVersions
	// Protobuf in etcd, as kube-apiserver stores its own kinds: smaller values and cheaper to
	// encode and decode than JSON. Objects stored as JSON before still decode.
	o.RecommendedOptions.Etcd.DefaultStorageMediaType = runtime.ContentTypeProtobuf
	// A namespace's deletion deletes each of our collections in one request: hundreds of claims or
	// Sandboxes, each a write (their finalizers). One at a time, as upstream's default does, such
	// a request outlasted the 60 s request timeout on a loaded machine, and every failed attempt
	// doubled the namespace controller's wait before the next one (up to a minute). The workers
	// serve only deletecollection requests; they had nothing to do with the unbound claims of a
	// replica that did not lead, which came from its caches still filling after it answered
	// /readyz.
	o.RecommendedOptions.Etcd.DeleteCollectionWorkers = 16
	// On SIGTERM, answer new requests with a Retry-After until the ones in flight are done, then
	// close the remaining connections (the cluster's watches on our resources) after 2 s instead
	// of waiting the whole request timeout for them.
	o.ServerRun.ShutdownSendRetryAfter = true
	// Bodies stay well under etcd's 1.5 MiB request limit, so what passes validation can be
	// stored: a larger body is a 413, not a 500 from etcd.
	o.ServerRun.MaxRequestBodyBytes = 1 << 20
	o.RecommendedOptions.SecureServing.BindPort = 8443
	apiserver.UseNamespaceLifecycle(o.RecommendedOptions.Admission)
	apiserver.UseResourceQuota(o.RecommendedOptions)
	return o
}

// AddFlags adds the flags of every option to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.RecommendedOptions.AddFlags(fs)
	o.ServerRun.AddUniversalFlags(fs)
	fs.StringVar(&o.EtcdDataDir, "etcd-data-dir", o.EtcdDataDir,
		"Data directory of the embedded etcd started when --etcd-servers is empty.")
	o.EtcdOutage.AddFlags(fs)
	o.Controllers.AddFlags(fs)
	o.Wake.AddFlags(fs)
	o.Probes.AddFlags(fs)
	fs.StringSliceVar(&o.ProxyIdentitySystemGroups, "proxy-identity-system-groups", o.ProxyIdentitySystemGroups,
		"Groups of Kubernetes' own (system:...) that sandboxes/proxy passes to sandboxes in X-Sandbox-Group, e.g. system:authenticated. Others of that prefix (system:masters, system:nodes ...) never reach sandbox code.")
	fs.IPNetSliceVar(&o.ProxyHostNetworkCIDRs, strings.TrimPrefix(sandboxproxy.HostNetworkFlag, "--"), o.ProxyHostNetworkCIDRs,
		"Address ranges (CIDRs) of the nodes whose host-network Sandbox pods sandboxes/proxy, sandboxclaims/proxy, exec, attach and portforward may reach. "+
			"Such a pod's address and network namespace are its node's, so whatever the node serves on a port the pod declares is reachable through it: "+
			"name only nodes that serve nothing else. None by default; loopback, link-local, multicast and unspecified addresses are never reached.")
	o.Memory.AddFlags(fs)
	o.E2B.AddFlags(fs)
	fs.BoolVar(&o.PrintVersion, "version", o.PrintVersion, "Print the version and exit.")
}

// Validate reports every invalid option.
func (o *Options) Validate() error {
	errs := append(o.RecommendedOptions.Validate(), o.ServerRun.Validate()...)
	errs = append(errs, o.EtcdOutage.Validate()...)
	errs = append(errs, o.Probes.Validate()...)
	errs = append(errs, o.Wake.Validate()...)
	errs = append(errs, o.Memory.Validate()...)
	errs = append(errs, o.E2B.Validate()...)
	return utilerrors.NewAggregate(append(errs, o.Controllers.Validate()...))
}

// Prepare starts the embedded etcd when no etcd servers are configured, then builds the server.
// The returned cleanup stops what Prepare started; call it after the server has stopped.
func (o *Options) Prepare() (*apiserver.SandboxServer, func(), error) {
	cleanup := func() {}
	if len(o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList) == 0 {
		clientURL, certs, stop, err := startEmbeddedEtcd(o.EtcdDataDir)
		if err != nil {
			return nil, nil, err
		}
		transport := &o.RecommendedOptions.Etcd.StorageConfig.Transport
		transport.ServerList = []string{clientURL}
		transport.TrustedCAFile, transport.CertFile, transport.KeyFile = certs.caFile, certs.certFile, certs.keyFile
		cleanup = stop
	}
	server, err := o.newServer()
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return server, cleanup, nil
}

func (o *Options) newServer() (*apiserver.SandboxServer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts(
		"localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}

	config := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	config.Serializer = apiserver.NegotiatedSerializer
	if err := o.ServerRun.ApplyTo(&config.Config); err != nil {
		return nil, err
	}
	config.EffectiveVersion = compatibility.NewEffectiveVersionFromString(kubernetesVersion, "", "")
	namer := openapinamer.NewDefinitionNamer(apiserver.Scheme)
	config.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	config.OpenAPIConfig.Info.Title = "sandbox-apiserver"
	config.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	config.OpenAPIV3Config.Info.Title = "sandbox-apiserver"

	// The cluster client comes first so its rate limit can be raised before admission gets it:
	// NamespaceLifecycle asks the cluster about every namespace its cache does not show yet (a new
	// one, or one deleted under objects still stored here), and at client-go's default of 5
	// requests a second those lookups held up every create behind them for seconds.
	if err := o.RecommendedOptions.CoreAPI.ApplyTo(config); err != nil {
		return nil, err
	}
	if config.ClientConfig != nil {
		config.ClientConfig.QPS, config.ClientConfig.Burst = coreAPIQPS, coreAPIBurst
	}
	// The generic options honour --storage-media-type only with a storage factory; this server
	// builds its storage codec itself.
	storageCodec, err := apiserver.StorageCodec(o.RecommendedOptions.Etcd.DefaultStorageMediaType)
	if err != nil {
		return nil, err
	}
	o.RecommendedOptions.Etcd.StorageConfig.Codec = storageCodec
	probe := o.EtcdOutage.ApplyToStorage(o.RecommendedOptions.Etcd)
	recommended := *o.RecommendedOptions
	recommended.CoreAPI = nil
	if err := recommended.ApplyTo(config); err != nil {
		return nil, err
	}
	o.EtcdOutage.ApplyTo(config, o.RecommendedOptions.Etcd, probe)
	config.BuildHandlerChainFunc = apiserver.WithFrontProxyReady(config.BuildHandlerChainFunc)
	return (&apiserver.Config{GenericConfig: config, Controllers: o.Controllers, Wake: o.Wake,
		Proxy: apiserver.ProxyConfig{HostNetwork: hostNetworkRanges(o.ProxyHostNetworkCIDRs), IdentitySystemGroups: o.ProxyIdentitySystemGroups}}).Complete().New()
}

// Run serves until ctx is done, then shuts down gracefully.
func (o *Options) Run(ctx context.Context) error {
	if err := o.Memory.Apply(klog.FromContext(ctx)); err != nil {
		return err
	}
	server, cleanup, err := o.Prepare()
	if err != nil {
		return err
	}
	defer cleanup()
	// Its post-start hook must be added before PrepareRun installs the health checks.
	if err := o.startE2B(server); err != nil {
		return err
	}
	prepared := server.GenericAPIServer.PrepareRun()
	// The health checks are those of the secure port, installed by PrepareRun.
	serveProbes, err := o.Probes.Listen(server.GenericAPIServer.Handler.NonGoRestfulMux)
	if err != nil {
		return err
	}
	serveProbes(ctx)
	return prepared.RunWithContext(ctx)
}

// startE2B opens the E2B endpoint's listener, when it is on, and serves it once the server does
// (it reaches the API through the loopback client).
func (o *Options) startE2B(server *apiserver.SandboxServer) error {
	if !o.E2B.Enabled() {
		return nil
	}
	if server.KubeConfig == nil {
		return errors.New("the E2B endpoint needs the cluster's kube-apiserver (--kubeconfig)")
	}
	endpoint, err := e2b.New(e2b.Config{Options: o.E2B, Loopback: server.GenericAPIServer.LoopbackClientConfig,
		Kube: server.KubeConfig, Authorizer: server.Authorizer, Pods: server.Pods})
	if err != nil {
		return err
	}
	listener, err := endpoint.Listen()
	if err != nil {
		return err
	}
	return server.GenericAPIServer.AddPostStartHook("start-e2b-endpoint", func(hook genericapiserver.PostStartHookContext) error {
		go func() {
			if err := endpoint.Serve(hook.Context, listener); err != nil {
				klog.ErrorS(err, "The E2B endpoint stopped")
			}
		}()
		return nil
	})
}

// hostNetworkRanges converts the flag's CIDRs (already parsed by the flag set) to prefixes.
func hostNetworkRanges(cidrs []net.IPNet) sandboxproxy.HostNetworkRanges {
	var out sandboxproxy.HostNetworkRanges
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c.String()); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}
