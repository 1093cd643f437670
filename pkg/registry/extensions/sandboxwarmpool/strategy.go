// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandboxwarmpool is the registry of sandboxwarmpools.extensions.agents.x-k8s.io.
package sandboxwarmpool

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/validation"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"
)

// poolStrategy is the create, update and delete strategy of SandboxWarmPool: spec writes only.
type poolStrategy struct {
	common.Strategy
}

// poolStatusStrategy is the strategy of the status subresource: status writes only.
type poolStatusStrategy struct {
	poolStrategy
}

// NewStrategy returns the main strategy and the status strategy of SandboxWarmPool.
func NewStrategy(typer runtime.ObjectTyper, finalizer string) (poolStrategy, poolStatusStrategy) {
	s := poolStrategy{common.NewStrategy(typer, finalizer)}
	return s, poolStatusStrategy{s}
}

// GetResetFields tells server-side apply that a spec write never sets status.
func (poolStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return common.ResetFields(extensions.GroupName, "status")
}

func (st poolStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	p := obj.(*extensions.SandboxWarmPool)
	p.Status = extensions.SandboxWarmPoolStatus{}
	p.Generation = 1
	st.AddFinalizer(p)
}

func (poolStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newP, oldP := obj.(*extensions.SandboxWarmPool), old.(*extensions.SandboxWarmPool)
	newP.Status = oldP.Status
	if !apiequality.Semantic.DeepEqual(newP.Spec, oldP.Spec) {
		newP.Generation = oldP.Generation + 1
	}
}

func (poolStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateSandboxWarmPool(obj.(*extensions.SandboxWarmPool))
}

func (poolStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSandboxWarmPoolUpdate(obj.(*extensions.SandboxWarmPool), old.(*extensions.SandboxWarmPool))
}

// GetResetFields tells server-side apply that a status write never sets spec.
func (poolStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return common.ResetFields(extensions.GroupName, "spec")
}

func (poolStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newP, oldP := obj.(*extensions.SandboxWarmPool), old.(*extensions.SandboxWarmPool)
	newP.Spec = oldP.Spec
	// Labels and annotations are not status: a status write keeps them as they were.
	newP.Labels = oldP.Labels
	newP.Annotations = oldP.Annotations
}

func (poolStatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSandboxWarmPoolStatusUpdate(obj.(*extensions.SandboxWarmPool), old.(*extensions.SandboxWarmPool))
}

// GetAttrs returns the labels and selectable fields of a SandboxWarmPool.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	p, ok := obj.(*extensions.SandboxWarmPool)
	if !ok {
		return nil, nil, fmt.Errorf("not a SandboxWarmPool: %T", obj)
	}
	f := generic.ObjectMetaFieldsSet(&p.ObjectMeta, true)
	f[extensions.TemplateRefField] = p.Spec.TemplateRef.Name
	return p.Labels, f, nil
}

// Match selects SandboxWarmPools by labels and fields.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
