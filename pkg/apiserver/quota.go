// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"errors"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

// QuotaResources are the kinds ResourceQuota object counts apply to:
// count/sandboxes.agents.x-k8s.io, count/sandboxclaims.extensions.agents.x-k8s.io and so on.
var QuotaResources = []schema.GroupResource{
	agents.Resource("sandboxes"),
	extensions.Resource("sandboxclaims"),
	extensions.Resource("sandboxtemplates"),
	extensions.Resource("sandboxwarmpools"),
}

// errUsageElsewhere: the usage of a quota is kube-controller-manager's to compute (its quota
// controller discovers our resources through the aggregator); this server only admits creates.
var errUsageElsewhere = errors.New("quota usage of sandbox resources is computed by kube-controller-manager")

// QuotaConfiguration is the quota of our kinds as admission sees it: one object-count evaluator
// per kind, as kube-apiserver has for custom resources.
func QuotaConfiguration() quota.Configuration {
	evaluators := make([]quota.Evaluator, 0, len(QuotaResources))
	for _, gr := range QuotaResources {
		evaluators = append(evaluators, generic.NewObjectCountEvaluator(gr, func(string) ([]runtime.Object, error) {
			return nil, errUsageElsewhere
		}, ""))
	}
	return generic.NewConfiguration(evaluators, nil)
}

// UseResourceQuota enables k8s.io/apiserver's ResourceQuota admission: a create that would exceed
// a ResourceQuota of its namespace (kept in the cluster, read through the informers of the core
// API) is refused with a 403, and the quota's usage is raised at once, as kube-apiserver does.
func UseResourceQuota(o *genericoptions.RecommendedOptions) {
	resourcequota.Register(o.Admission.Plugins)
	o.Admission.RecommendedPluginOrder = append(slices.Clone(o.Admission.RecommendedPluginOrder), resourcequota.PluginName)
	o.ExtraAdmissionInitializers = func(*genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		return []admission.PluginInitializer{quotaConfigurationInitializer{QuotaConfiguration()}}, nil
	}
}

// quotaConfigurationInitializer gives the quota admission plugin its evaluators.
type quotaConfigurationInitializer struct {
	configuration quota.Configuration
}

func (i quotaConfigurationInitializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(initializer.WantsQuotaConfiguration); ok {
		wants.SetQuotaConfiguration(i.configuration)
	}
}
