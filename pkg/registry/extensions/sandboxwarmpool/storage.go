// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwarmpool

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	scalescheme "k8s.io/client-go/scale/scheme"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"
)

// Storage is every REST endpoint of sandboxwarmpools.
type Storage struct {
	SandboxWarmPool *common.REST
	Status          *common.StatusREST
	Scale           *common.ScaleREST
}

// NewStorage returns the registry of SandboxWarmPools on the storage of optsGetter.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, finalizer string) (*Storage, error) {
	strategy, statusStrategy := NewStrategy(scheme, finalizer)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &extensions.SandboxWarmPool{} },
		NewListFunc:               func() runtime.Object { return &extensions.SandboxWarmPoolList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  extensions.Resource("sandboxwarmpools"),
		SingularQualifiedResource: extensions.Resource("sandboxwarmpool"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: tableConvertor,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	return &Storage{
		SandboxWarmPool: common.NewREST(store, "swp"),
		Status:          common.NewStatusREST(store, statusStrategy),
		Scale:           common.NewScaleREST(store, scaleAccessor),
	}, nil
}

// scaleAccessor maps spec.replicas, status.replicas and status.selector to a Scale, for kubectl
// scale and HorizontalPodAutoscalers.
var scaleAccessor = common.ScaleAccessor{
	Kind: extensions.Kind("SandboxWarmPool"),
	ToScale: func(obj runtime.Object) (*scalescheme.Scale, error) {
		p, ok := obj.(*extensions.SandboxWarmPool)
		if !ok {
			return nil, fmt.Errorf("not a SandboxWarmPool: %T", obj)
		}
		return common.NewScale(p.ObjectMeta, p.Spec.Replicas, p.Status.Replicas, p.Status.Selector)
	},
	SetReplicas: func(obj runtime.Object, replicas int32) {
		obj.(*extensions.SandboxWarmPool).Spec.Replicas = replicas
	},
	ValidateReplicas: func(replicas int32) field.ErrorList {
		if replicas < 0 {
			return field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), replicas, "must be greater than or equal to 0")}
		}
		return nil
	},
}

var tableConvertor = common.NewTableConvertor([]metav1.TableColumnDefinition{
	{Name: "Ready", Type: "integer", Description: "Members whose Ready condition is True."},
	{Name: "Replicas", Type: "integer", Description: "Members the pool keeps (spec.replicas)."},
	{Name: "Template", Type: "string", Description: "The SandboxTemplate members are made from."},
	{Name: "Current", Type: "integer", Priority: 1, Description: "Members the pool has now."},
	{Name: "Update Strategy", Type: "string", Priority: 1, Description: "How stale members are replaced."},
	{Name: "Selector", Type: "string", Priority: 1, Description: "Label selector of the members."},
}, func(obj runtime.Object) ([]interface{}, error) {
	p := obj.(*extensions.SandboxWarmPool)
	strategy := ""
	if p.Spec.UpdateStrategy != nil {
		strategy = string(p.Spec.UpdateStrategy.Type)
	}
	return []interface{}{int64(p.Status.ReadyReplicas), int64(p.Spec.Replicas), p.Spec.TemplateRef.Name, int64(p.Status.Replicas), strategy, p.Status.Selector}, nil
})
