// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package apiserver assembles the sandbox API server: the generic server configuration and the two
// API groups with their registries.
package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1alpha1"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	extensionsv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1alpha1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/agents/sandbox"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/extensions/sandboxclaim"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/extensions/sandboxtemplate"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/extensions/sandboxwarmpool"
)

// Config is the configuration of the sandbox API server.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
}

// CompletedConfig is a Config with every default filled in.
type CompletedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
}

// Complete fills in the defaults of the generic server configuration.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{GenericConfig: c.GenericConfig.Complete()}
}

// SandboxServer is the running API server.
type SandboxServer struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
}

// New builds the server and installs both API groups in every served version.
func (c CompletedConfig) New() (*SandboxServer, error) {
	generic, err := c.GenericConfig.New("sandbox-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	optsGetter := c.GenericConfig.RESTOptionsGetter

	sandboxStorage, err := sandbox.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	agentsResources := map[string]rest.Storage{
		"sandboxes":        sandboxStorage.Sandbox,
		"sandboxes/status": sandboxStorage.Status,
		"sandboxes/scale":  sandboxStorage.Scale,
	}

	claimStorage, err := sandboxclaim.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	templateStorage, err := sandboxtemplate.NewREST(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	poolStorage, err := sandboxwarmpool.NewStorage(Scheme, optsGetter)
	if err != nil {
		return nil, err
	}
	extensionsResources := map[string]rest.Storage{
		"sandboxclaims":           claimStorage.SandboxClaim,
		"sandboxclaims/status":    claimStorage.Status,
		"sandboxtemplates":        templateStorage,
		"sandboxwarmpools":        poolStorage.SandboxWarmPool,
		"sandboxwarmpools/status": poolStorage.Status,
		"sandboxwarmpools/scale":  poolStorage.Scale,
	}

	groups := []struct {
		group     string
		versions  []schema.GroupVersion
		resources map[string]rest.Storage
	}{
		{agents.GroupName, []schema.GroupVersion{agentsv1beta1.SchemeGroupVersion, agentsv1alpha1.SchemeGroupVersion}, agentsResources},
		{extensions.GroupName, []schema.GroupVersion{extensionsv1beta1.SchemeGroupVersion, extensionsv1alpha1.SchemeGroupVersion}, extensionsResources},
	}
	for _, g := range groups {
		info := genericapiserver.NewDefaultAPIGroupInfo(g.group, Scheme, ParameterCodec, Codecs)
		// Every version serves the same storage: objects are converted through the internal types.
		for _, gv := range g.versions {
			info.VersionedResourcesStorageMap[gv.Version] = g.resources
		}
		if err := generic.InstallAPIGroup(&info); err != nil {
			return nil, err
		}
	}
	return &SandboxServer{GenericAPIServer: generic}, nil
}
