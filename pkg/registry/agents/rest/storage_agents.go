// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package rest builds the storage of the agents.x-k8s.io group: the Sandbox registry with its
// status, scale and proxy subresources and the streaming ones, and what reaching a sandbox's pod
// takes (waking it, the proxy, the streams), which the extensions group's claims share.
package rest

import (
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1alpha1"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/agents/sandbox"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxproxy"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxstream"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxwake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
)

// Reach configures how requests reach a sandbox's pod: the proxy and the streaming subresources.
type Reach struct {
	// Pods finds a Sandbox's pod; nil without a cluster connection.
	Pods sandboxproxy.PodGetter
	// KubeConfig reaches the cluster's kube-apiserver, where the streams go; nil: they get a 503.
	KubeConfig *restclient.Config
	// Authorizer re-authorizes streams that came as a GET (a WebSocket).
	Authorizer authorizer.Authorizer
	// Events records stream sessions on their Sandbox; nil records none.
	Events record.EventRecorder
	// HostNetwork are the nodes whose host-network pods the proxy and the streams may reach.
	HostNetwork sandboxproxy.HostNetworkRanges
	// IdentitySystemGroups are the system: groups the proxy passes in X-Sandbox-Group.
	IdentitySystemGroups []string
	// Wake configures waking sandboxes and recording their activity, and the connection limits.
	Wake sandboxwake.Options
}

// Config is what the group's storage needs from the server.
type Config struct {
	common.Codecs
	OptsGetter generic.RESTOptionsGetter
	// SandboxFinalizer is put on every Sandbox at create ("" for none): the sandbox controller's,
	// when it runs.
	SandboxFinalizer string
	// Controllers is who the server's own controllers are.
	Controllers *trust.ControllerIdentity
	Reach       Reach
}

// Storage is the group's storage and what the extensions group shares of it.
type Storage struct {
	// Group is ready to install: every served version serves the same storage, objects being
	// converted through the internal types.
	Group     genericapiserver.APIGroupInfo
	Sandboxes *sandbox.Storage
	// Waker resumes suspended sandboxes for the proxy and records their activity; it runs from a
	// post-start hook.
	Waker   *sandboxwake.Waker
	Proxy   *sandboxproxy.Proxy
	Streams *sandboxstream.Streams
}

// New builds the group's storage.
func New(c Config) (*Storage, error) {
	sandboxes, err := sandbox.NewStorage(c.Scheme, c.OptsGetter, c.SandboxFinalizer, c.Controllers)
	if err != nil {
		return nil, err
	}
	r := c.Reach
	waker := sandboxwake.New(sandboxwake.Config{Sandboxes: sandboxes.Sandbox, Status: sandboxes.Status, Controllers: c.Controllers, Options: r.Wake})
	proxy := &sandboxproxy.Proxy{Pods: r.Pods, Waker: waker, HostNetwork: r.HostNetwork, IdentitySystemGroups: r.IdentitySystemGroups,
		Connections: &sandboxproxy.ConnectionLimit{What: "requests and connections", PerSandbox: r.Wake.MaxConnectionsPerSandbox, PerServer: r.Wake.MaxConnections}}
	streams, err := sandboxstream.New(sandboxstream.Config{
		KubeConfig: r.KubeConfig, Pods: r.Pods, Waker: waker, HostNetwork: r.HostNetwork,
		Streams:    &sandboxproxy.ConnectionLimit{What: "streams", PerSandbox: r.Wake.MaxStreamsPerSandbox, PerServer: r.Wake.MaxStreams},
		Authorizer: r.Authorizer, Events: r.Events,
	})
	if err != nil {
		return nil, err
	}
	resources := map[string]rest.Storage{
		"sandboxes":        sandboxes.Sandbox,
		"sandboxes/status": sandboxes.Status,
		"sandboxes/scale":  sandboxes.Scale,
		"sandboxes/proxy":  &sandbox.ProxyREST{Sandboxes: sandboxes.Sandbox, Proxy: proxy},
	}
	common.AddSubresources(resources, "sandboxes", sandbox.StreamStorage(sandboxes.Sandbox, streams))
	group := c.GroupInfo(agents.GroupName)
	for _, gv := range []string{agentsv1beta1.SchemeGroupVersion.Version, agentsv1alpha1.SchemeGroupVersion.Version} {
		group.VersionedResourcesStorageMap[gv] = resources
	}
	return &Storage{Group: group, Sandboxes: sandboxes, Waker: waker, Proxy: proxy, Streams: streams}, nil
}
