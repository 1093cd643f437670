// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package apiserver assembles the sandbox API server: the generic server configuration and the two
// API groups with their registries.
package apiserver

import (
	"context"
	"fmt"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	genericapiserver "k8s.io/apiserver/pkg/server"
	restclient "k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/controllers/manager"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/fastpath"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/metrics"
	agentsrest "github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/agents/rest"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/claimbinding"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"
	extensionsrest "github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/extensions/rest"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxproxy"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxwake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/warm"
)

// Config is the configuration of the sandbox API server.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	// Controllers, when set, run in this process once it serves (the leader among replicas does).
	Controllers *manager.Options
	// Wake configures waking sandboxes on proxied requests and recording their activity; nil
	// takes the defaults.
	Wake *sandboxwake.Options
	// Proxy configures the sandboxes/proxy and sandboxclaims/proxy subresources.
	Proxy ProxyConfig
}

// ProxyConfig configures the proxy subresources.
type ProxyConfig struct {
	// HostNetwork are the nodes whose host-network Sandbox pods the proxy and the streams may
	// reach: such a pod's address is its node's.
	HostNetwork sandboxproxy.HostNetworkRanges
	// IdentitySystemGroups are the system: groups the proxy passes in X-Sandbox-Group.
	IdentitySystemGroups []string
}

// CompletedConfig is a Config with every default filled in.
type CompletedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	Controllers   *manager.Options
	Wake          sandboxwake.Options
	Proxy         ProxyConfig
	// KubeConfig reaches the cluster's kube-apiserver, where the controllers make children.
	KubeConfig *restclient.Config
	// ControllerIdentity is who the controllers are when they write here.
	ControllerIdentity *trust.ControllerIdentity
}

// Complete fills in the defaults of the generic server configuration and sets up the
// controllers' identity. Controllers need the cluster's kube-apiserver: without a client
// configuration for it they stay off.
func (c *Config) Complete() CompletedConfig {
	controllers := c.Controllers
	if c.GenericConfig.ClientConfig == nil || (controllers != nil && !controllers.Any()) {
		controllers = nil
	}
	identity := trust.NewControllerIdentity()
	identity.Install(&c.GenericConfig.Authentication)
	wake := sandboxwake.NewOptions()
	if c.Wake != nil {
		wake = c.Wake
	}
	c.GenericConfig.LongRunningFunc = longRunning
	return CompletedConfig{GenericConfig: c.GenericConfig.Complete(), Controllers: controllers, Wake: *wake, Proxy: c.Proxy, KubeConfig: c.GenericConfig.ClientConfig, ControllerIdentity: identity}
}

// SandboxServer is the running API server.
type SandboxServer struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
	// ControllerIdentity is who the controllers are when they write here (see
	// pkg/registry/trust).
	ControllerIdentity *trust.ControllerIdentity
	// Waker resumes suspended sandboxes for the proxy and records their activity.
	Waker *sandboxwake.Waker
	// Ours lists and watches our kinds from this server's registries for the controllers' caches.
	Ours *fastpath.InformerSource
	// ClaimBinder binds claims to warm members inside their create.
	ClaimBinder *claimbinding.Binder
	// WarmChooser picks the warm members claims adopt, at create time and in the claim
	// controller; nil when the claim controller is disabled.
	WarmChooser *warm.Chooser
	// KubeConfig reaches the cluster's kube-apiserver with the server's rights; nil without one.
	KubeConfig *restclient.Config
	// Authorizer is the server's authorizer (delegated to the cluster's SubjectAccessReviews).
	Authorizer authorizer.Authorizer
	// Pods finds Sandboxes' pods in the server's cache of them; nil without a cluster.
	Pods sandboxproxy.PodGetter
}

// New builds the server: both API groups from their storage (pkg/registry/<group>/rest), the
// claim binder between them, and the post-start hooks that run the sandbox activity recorder and
// the controllers.
func (c CompletedConfig) New() (*SandboxServer, error) {
	generic, err := c.GenericConfig.New("sandbox-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	// The registries' objects share the parts they hold alike (pkg/fastpath); the binder decodes
	// objects from etcd to change them and gets its own.
	bindingOptsGetter := c.GenericConfig.RESTOptionsGetter
	optsGetter := fastpath.DecodedGetter(bindingOptsGetter, fastpath.ShareParts)
	// The controllers and the warm chooser cache our kinds as this replica's registries hold
	// them, once they are all built.
	stores := &fastpath.RegistryStores{}
	ours := fastpath.NewInformerSource(Scheme, stores)
	events := clusterEvents(generic, c.KubeConfig)
	identity := c.ControllerIdentity
	pods, err := sandboxPods(generic, c.KubeConfig)
	if err != nil {
		return nil, err
	}
	agentsStorage, err := agentsrest.New(agentsrest.Config{
		Codecs: serverCodecs, OptsGetter: optsGetter, Controllers: identity,
		SandboxFinalizer: c.finalizer(controllers.Sandbox, agentsv1beta1.SandboxChildrenFinalizer),
		Reach: agentsrest.Reach{
			Pods: pods, KubeConfig: c.KubeConfig, Authorizer: c.GenericConfig.Authorization.Authorizer, Events: events,
			HostNetwork: c.Proxy.HostNetwork, IdentitySystemGroups: c.Proxy.IdentitySystemGroups, Wake: c.Wake,
		},
	})
	if err != nil {
		return nil, err
	}
	sandboxStorage := agentsStorage.Sandboxes

	// With the claim controller enabled, a claim that a warm pool can serve is stored already bound
	// to its sandbox (see pkg/registry/claimbinding), in every replica.
	chooser, err := newWarmChooser(generic, c, ours, events)
	if err != nil {
		return nil, err
	}
	binder, err := claimbinding.New(claimbinding.Config{
		Scheme: Scheme, Controllers: identity, OptsGetter: bindingOptsGetter, Chooser: chooser, SandboxKey: sandboxStorage.Sandbox.KeyFunc,
	})
	if err != nil {
		return nil, err
	}
	// Closed with the registries' storage, once the last request is served.
	generic.RegisterDestroyFunc(func() { _ = binder.Close() })
	extensionsStorage, err := extensionsrest.New(extensionsrest.Config{
		Codecs: serverCodecs, OptsGetter: optsGetter, Controllers: identity,
		Authorizer: c.GenericConfig.Authorization.Authorizer, WrapClaimStorage: binder.WrapClaimStorage, Agents: agentsStorage,
		Finalizers: extensionsrest.Finalizers{
			Claim:    c.finalizer(controllers.SandboxClaim, extensionsv1beta1.ClaimSandboxFinalizer),
			Template: c.finalizer(controllers.SandboxTemplate, extensionsv1beta1.TemplateNetworkPolicyFinalizer),
			WarmPool: c.finalizer(controllers.SandboxWarmPool, extensionsv1beta1.WarmPoolMembersFinalizer),
		},
	})
	if err != nil {
		return nil, err
	}
	*stores = fastpath.RegistryStores{
		Sandboxes: sandboxStorage.Sandbox.Store,
		Claims:    extensionsStorage.Claims.SandboxClaim.Store,
		Templates: extensionsStorage.Templates.Store,
		WarmPools: extensionsStorage.WarmPools.SandboxWarmPool.Store,
	}
	for _, group := range []*genericapiserver.APIGroupInfo{&agentsStorage.Group, &extensionsStorage.Group} {
		if err := generic.InstallAPIGroup(group); err != nil {
			return nil, err
		}
	}
	if err := binder.SetRegistry(claimbinding.Registry{
		ClaimStatus:      extensionsStorage.Claims.Status.UpdateStrategy(),
		Sandbox:          common.UpdateStrategyOf(sandboxStorage.Sandbox.Store),
		AgentsModels:     agentsStorage.Group.StaticOpenAPISpec,
		ExtensionsModels: extensionsStorage.Group.StaticOpenAPISpec,
	}); err != nil {
		return nil, err
	}
	// Every replica reports the sandboxes it serves, whether or not it runs the controllers.
	metrics.Register()
	metrics.RegisterSandboxCollector(storedSandboxes(sandboxStorage.Sandbox.Store))

	waker := agentsStorage.Waker
	generic.AddPostStartHookOrDie("start-sandbox-activity", func(hook genericapiserver.PostStartHookContext) error {
		go waker.Run(hook.Context)
		return nil
	})
	c.startControllers(generic, ours, chooser, binder.OneEtcd())
	return &SandboxServer{GenericAPIServer: generic, ClaimBinder: binder, ControllerIdentity: identity, Waker: waker, Ours: ours, WarmChooser: chooser,
		KubeConfig: c.KubeConfig, Authorizer: c.GenericConfig.Authorization.Authorizer, Pods: pods}, nil
}

// startControllers adds the post-start hook that runs the controllers, when they are configured:
// the manager starts those enabled while this replica leads. sharedRevisions says whether claims
// and sandboxes are kept in one etcd, whose resourceVersions compare.
func (c CompletedConfig) startControllers(generic *genericapiserver.GenericAPIServer, ours *fastpath.InformerSource, chooser *warm.Chooser, sharedRevisions bool) {
	if c.Controllers == nil {
		return
	}
	opts, identity, kubeConfig, tracer := c.Controllers, c.ControllerIdentity, c.KubeConfig, c.GenericConfig.TracerProvider
	generic.AddPostStartHookOrDie("start-sandbox-controllers", func(hook genericapiserver.PostStartHookContext) error {
		go func() {
			if err := manager.Run(hook.Context, opts, identity.ClientConfig(hook.LoopbackClientConfig), kubeConfig, ours, chooser, sharedRevisions, tracer); err != nil {
				klog.ErrorS(err, "Controllers failed to start")
			}
		}()
		return nil
	})
}

// finalizer is name when the controller is enabled, and "" otherwise: each kind gets its
// controller's finalizer at create time, when that controller runs.
func (c CompletedConfig) finalizer(controller, name string) string {
	if c.Controllers != nil && c.Controllers.Enabled(controller) {
		return name
	}
	return ""
}

// storedSandboxes lists every Sandbox from the registry's watch cache (resourceVersion 0), as a
// list request served by this replica would.
func storedSandboxes(store *genericregistry.Store) metrics.SandboxSource {
	return func(ctx context.Context) ([]agents.Sandbox, error) {
		obj, err := store.List(genericapirequest.WithNamespace(ctx, metav1.NamespaceAll), &metainternalversion.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return nil, err
		}
		list, ok := obj.(*agents.SandboxList)
		if !ok {
			return nil, fmt.Errorf("listing sandboxes gave %T", obj)
		}
		return list.Items, nil
	}
}
