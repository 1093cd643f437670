// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	scalescheme "k8s.io/client-go/scale/scheme"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
)

// Storage is every REST endpoint of sandboxes.
type Storage struct {
	Sandbox *common.REST
	Status  *common.StatusREST
	Scale   *common.ScaleREST
}

// NewStorage returns the registry of Sandboxes on the storage of optsGetter; finalizer (may be
// empty) is put on every new Sandbox.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, finalizer string, controllers *trust.ControllerIdentity) (*Storage, error) {
	strategy, statusStrategy := NewStrategy(scheme, finalizer, controllers)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &agents.Sandbox{} },
		NewListFunc:               func() runtime.Object { return &agents.SandboxList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  agents.Resource("sandboxes"),
		SingularQualifiedResource: agents.Resource("sandbox"),

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
		Sandbox: common.NewREST(store, "sandbox"),
		Status:  common.NewStatusREST(store, statusStrategy),
		Scale:   common.NewScaleREST(store, scaleAccessor),
	}, nil
}

// scaleAccessor maps spec.replicas (0 or 1) and status.selector to a Scale.
var scaleAccessor = common.ScaleAccessor{
	Kind: agents.Kind("Sandbox"),
	ToScale: func(obj runtime.Object) (*scalescheme.Scale, error) {
		s, ok := obj.(*agents.Sandbox)
		if !ok {
			return nil, fmt.Errorf("not a Sandbox: %T", obj)
		}
		var replicas int32 = 1
		if s.Spec.Replicas != nil {
			replicas = *s.Spec.Replicas
		}
		return common.NewScale(s.ObjectMeta, replicas, s.Status.Replicas, s.Status.LabelSelector)
	},
	SetReplicas: func(obj runtime.Object, replicas int32) {
		obj.(*agents.Sandbox).Spec.Replicas = &replicas
	},
	ValidateReplicas: func(replicas int32) field.ErrorList {
		if replicas < 0 || replicas > 1 {
			return field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), replicas, "a Sandbox runs one pod or none: must be 0 or 1")}
		}
		return nil
	},
}

var tableConvertor = common.NewTableConvertor([]metav1.TableColumnDefinition{
	{Name: "Ready", Type: "string", Description: "Status of the Ready condition."},
	{Name: "Reason", Type: "string", Description: "Reason of the Ready condition."},
	{Name: "Replicas", Type: "integer", Description: "Pods running for the Sandbox (0 or 1)."},
	{Name: "Service", Type: "string", Priority: 1, Description: "Name of the Sandbox's Service."},
	{Name: "Pod IPs", Type: "string", Priority: 1, Description: "IP addresses of the Sandbox's pod."},
	{Name: "Shutdown Time", Type: "string", Priority: 1, Description: "When the Sandbox expires."},
}, func(obj runtime.Object) ([]interface{}, error) {
	s := obj.(*agents.Sandbox)
	ready, reason := common.Condition(s.Status.Conditions, "Ready")
	shutdown := "<none>"
	if s.Spec.ShutdownTime != nil {
		shutdown = s.Spec.ShutdownTime.UTC().Format("2006-01-02T15:04:05Z")
	}
	return []interface{}{ready, reason, int64(s.Status.Replicas), s.Status.Service, strings.Join(s.Status.PodIPs, ","), shutdown}, nil
})
