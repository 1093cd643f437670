// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxtemplate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"
)

// NewREST returns the registry of SandboxTemplates on the storage of optsGetter.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, finalizer string) (*common.REST, error) {
	strategy := NewStrategy(scheme, finalizer)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &extensions.SandboxTemplate{} },
		NewListFunc:               func() runtime.Object { return &extensions.SandboxTemplateList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  extensions.Resource("sandboxtemplates"),
		SingularQualifiedResource: extensions.Resource("sandboxtemplate"),

		CreateStrategy: strategy,
		UpdateStrategy: strategy,
		DeleteStrategy: strategy,

		TableConvertor: tableConvertor,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	return common.NewREST(store, "sandboxtemplate"), nil
}

var tableConvertor = common.NewTableConvertor([]metav1.TableColumnDefinition{
	{Name: "Network Policy", Type: "string", Description: "Whether the controller manages the template's NetworkPolicy."},
	{Name: "Env Injection", Type: "string", Description: "Whether claims may inject environment variables."},
	{Name: "Service", Type: "string", Priority: 1, Description: "Whether sandboxes get a headless Service."},
	{Name: "Images", Type: "string", Priority: 1, Description: "Images of the pod's containers."},
}, func(obj runtime.Object) ([]interface{}, error) {
	t := obj.(*extensions.SandboxTemplate)
	service := "<unset>"
	if t.Spec.Service != nil {
		service = map[bool]string{true: "true", false: "false"}[*t.Spec.Service]
	}
	images := ""
	for i, c := range t.Spec.PodTemplate.Spec.Containers {
		if i > 0 {
			images += ","
		}
		images += c.Image
	}
	return []interface{}{string(t.Spec.NetworkPolicyManagement), string(t.Spec.EnvVarsInjectionPolicy), service, images}, nil
})
