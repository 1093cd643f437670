// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandboxtemplate is the registry of sandboxtemplates.extensions.agents.x-k8s.io.
package sandboxtemplate

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

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/validation"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"
)

// templateStrategy is the strategy of SandboxTemplate, a kind with a spec and no status.
type templateStrategy struct {
	common.Strategy
}

// NewStrategy returns the strategy of SandboxTemplate.
func NewStrategy(typer runtime.ObjectTyper, finalizer string) templateStrategy {
	return templateStrategy{common.NewStrategy(typer, finalizer)}
}

func (st templateStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	t := obj.(*extensions.SandboxTemplate)
	t.Generation = 1
	st.AddFinalizer(t)
}

func (templateStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newT, oldT := obj.(*extensions.SandboxTemplate), old.(*extensions.SandboxTemplate)
	if !apiequality.Semantic.DeepEqual(newT.Spec, oldT.Spec) {
		newT.Generation = oldT.Generation + 1
	}
}

func (templateStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateSandboxTemplate(obj.(*extensions.SandboxTemplate))
}

func (templateStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSandboxTemplateUpdate(obj.(*extensions.SandboxTemplate), old.(*extensions.SandboxTemplate))
}

// GetAttrs returns the labels and selectable fields of a SandboxTemplate.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	t, ok := obj.(*extensions.SandboxTemplate)
	if !ok {
		return nil, nil, fmt.Errorf("not a SandboxTemplate: %T", obj)
	}
	return t.Labels, generic.ObjectMetaFieldsSet(&t.ObjectMeta, true), nil
}

// Match selects SandboxTemplates by labels and fields.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
