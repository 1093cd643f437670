// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/fastpath"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
)

// Storage is every REST endpoint of sandboxclaims.
type Storage struct {
	SandboxClaim *REST
	Status       *common.StatusREST
}

// Policy is what decides, besides validation, whether a claim is written: who the controllers
// are, the templates claims are checked against, the authorizer of the use verb (nil: none) and
// the pools and templates a new claim's references are checked against.
type Policy struct {
	Controllers *trust.ControllerIdentity
	Templates   TemplateGetter
	Authorizer  authorizer.Authorizer
	// References, when not nil, reads the pools and templates new claims name.
	References *References
}

// NewStorage returns the registry of SandboxClaims on the storage of optsGetter. wrapStorage,
// when not nil, wraps the storage the registry writes through (binding claims at create time).
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, finalizer string, wrapStorage func(storage.Interface) storage.Interface, policy Policy) (*Storage, error) {
	strategy, statusStrategy := NewStrategy(scheme, finalizer, policy.Controllers, policy.Templates)
	strategy.refs = policy.References
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &extensions.SandboxClaim{} },
		NewListFunc:               func() runtime.Object { return &extensions.SandboxClaimList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  extensions.Resource("sandboxclaims"),
		SingularQualifiedResource: extensions.Resource("sandboxclaim"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor,
	}
	if wrapStorage != nil {
		optsGetter = fastpath.WrapStorage(optsGetter, wrapStorage)
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	return &Storage{
		SandboxClaim: &REST{REST: common.NewREST(store, "sandboxclaim"), authorizer: policy.Authorizer, refs: policy.References},
		Status:       common.NewStatusREST(store, statusStrategy),
	}, nil
}

var tableConvertor = common.NewTableConvertor([]metav1.TableColumnDefinition{
	{Name: "Template", Type: "string", Description: "The SandboxTemplate the claim uses."},
	{Name: "Sandbox", Type: "string", Description: "The Sandbox serving the claim."},
	{Name: "Ready", Type: "string", Description: "Status of the Ready condition."},
	{Name: "Reason", Type: "string", Priority: 1, Description: "Reason of the Ready condition."},
	{Name: "Warm Pool", Type: "string", Priority: 1, Description: "Which warm pools the claim may adopt from."},
	{Name: "Pod IPs", Type: "string", Priority: 1, Description: "IP addresses of the sandbox's pod."},
}, func(obj runtime.Object) ([]interface{}, error) {
	c := obj.(*extensions.SandboxClaim)
	ready, reason := common.Condition(c.Status.Conditions, "Ready")
	warmPool := ""
	if c.Spec.WarmPool != nil {
		warmPool = string(*c.Spec.WarmPool)
	}
	return []interface{}{c.Spec.TemplateRef.Name, c.Status.SandboxStatus.Name, ready, reason, warmPool, strings.Join(c.Status.SandboxStatus.PodIPs, ",")}, nil
})
