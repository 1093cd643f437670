// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package rest builds the storage of the extensions.agents.x-k8s.io group: SandboxTemplates,
// SandboxWarmPools (status, scale) and SandboxClaims (status, proxy, streams), the claims reaching
// their sandbox through the agents group's storage.
package rest

import (
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	extensionsv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1alpha1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	agentsrest "github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/agents/rest"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/extensions/sandboxclaim"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/extensions/sandboxtemplate"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/extensions/sandboxwarmpool"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
)

// Finalizers are put on each kind's objects at create ("" for none): each controller's own, when
// it runs.
type Finalizers struct {
	Claim, Template, WarmPool string
}

// Config is what the group's storage needs from the server.
type Config struct {
	common.Codecs
	OptsGetter generic.RESTOptionsGetter
	Finalizers Finalizers
	// Controllers is who the server's own controllers are.
	Controllers *trust.ControllerIdentity
	// Authorizer checks a claim's creator may use its template (nil: no check).
	Authorizer authorizer.Authorizer
	// WrapClaimStorage wraps the claims' storage: the binder's, which binds claims at create.
	WrapClaimStorage func(storage.Interface) storage.Interface
	// Agents is the agents group's storage: the claims' sandboxes, and the proxy and streams to
	// their pods.
	Agents *agentsrest.Storage
}

// Storage is the group's storage.
type Storage struct {
	// Group is ready to install, every served version serving the same storage.
	Group     genericapiserver.APIGroupInfo
	Claims    *sandboxclaim.Storage
	Templates *common.REST
	WarmPools *sandboxwarmpool.Storage
}

// New builds the group's storage.
func New(c Config) (*Storage, error) {
	templates, err := sandboxtemplate.NewREST(c.Scheme, c.OptsGetter, c.Finalizers.Template)
	if err != nil {
		return nil, err
	}
	pools, err := sandboxwarmpool.NewStorage(c.Scheme, c.OptsGetter, c.Finalizers.WarmPool)
	if err != nil {
		return nil, err
	}
	refs := &sandboxclaim.References{Pools: pools.SandboxWarmPool, Templates: templates}
	claims, err := sandboxclaim.NewStorage(c.Scheme, c.OptsGetter, c.Finalizers.Claim, c.WrapClaimStorage,
		sandboxclaim.Policy{Controllers: c.Controllers, Templates: refs.Template, Authorizer: c.Authorizer, References: refs})
	if err != nil {
		return nil, err
	}
	sandboxes := c.Agents.Sandboxes.Sandbox
	resources := map[string]rest.Storage{
		"sandboxclaims":           claims.SandboxClaim,
		"sandboxclaims/status":    claims.Status,
		"sandboxclaims/proxy":     &sandboxclaim.ProxyREST{Claims: claims.SandboxClaim, Sandboxes: sandboxes, Proxy: c.Agents.Proxy},
		"sandboxtemplates":        templates,
		"sandboxwarmpools":        pools.SandboxWarmPool,
		"sandboxwarmpools/status": pools.Status,
		"sandboxwarmpools/scale":  pools.Scale,
	}
	common.AddSubresources(resources, "sandboxclaims", sandboxclaim.StreamStorage(claims.SandboxClaim, sandboxes, c.Agents.Streams))
	group := c.GroupInfo(extensions.GroupName)
	for _, gv := range []string{extensionsv1beta1.SchemeGroupVersion.Version, extensionsv1alpha1.SchemeGroupVersion.Version} {
		group.VersionedResourcesStorageMap[gv] = resources
	}
	return &Storage{Group: group, Claims: claims, Templates: templates, WarmPools: pools}, nil
}
