// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// StatusREST serves the status subresource of a kind from a copy of its store that carries the
// kind's status strategy.

package common

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// StatusStrategy is what a status strategy provides: update rules and the fields it never sets.
type StatusStrategy interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}

// StatusREST is the status subresource of one kind.
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Patcher             = &StatusREST{}
	_ rest.ResetFieldsStrategy = &StatusREST{}
	_ rest.TableConvertor      = &StatusREST{}
)

// NewStatusREST serves the status of the objects in store, written under strategy.
func NewStatusREST(store *genericregistry.Store, strategy StatusStrategy) *StatusREST {
	statusStore := *store
	statusStore.UpdateStrategy = strategy
	statusStore.ResetFieldsStrategy = strategy
	return &StatusREST{store: &statusStore}
}

// New returns an empty object of the kind.
func (r *StatusREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the store is shut down with the main resource.
func (r *StatusREST) Destroy() {}

// Get returns the object.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes the status of the object; it never creates one.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields implements rest.ResetFieldsStrategy.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the object like the main resource does.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}

// UpdateStrategy is the status strategy the subresource writes under.
func (r *StatusREST) UpdateStrategy() StatusStrategy { return UpdateStrategyOf(r.store) }

// UpdateStrategyOf is the strategy store writes updates under, with the fields they leave alone:
// what another writer of the kind's objects (the create-time claim binding) checks its writes
// with, so that they obey the same rules as the registry's.
func UpdateStrategyOf(store *genericregistry.Store) StatusStrategy {
	return storeStrategy{store.UpdateStrategy, store.ResetFieldsStrategy}
}

type storeStrategy struct {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}
