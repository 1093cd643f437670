// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandboxclaim is the registry of sandboxclaims.extensions.agents.x-k8s.io.
package sandboxclaim

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
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/base"
)

// claimStrategy is the create, update and delete strategy of SandboxClaim: spec writes only.
type claimStrategy struct {
	base.Strategy
	// refs, when set, reads the pool and template a new claim names (see References).
	refs *References
}

// claimStatusStrategy is the strategy of the status subresource: status writes only.
type claimStatusStrategy struct {
	claimStrategy
}

// NewStrategy returns the main strategy and the status strategy of SandboxClaim.
func NewStrategy(typer runtime.ObjectTyper, finalizer string) (claimStrategy, claimStatusStrategy) {
	s := claimStrategy{Strategy: base.NewStrategy(typer, finalizer)}
	return s, claimStatusStrategy{s}
}

// GetResetFields tells server-side apply that a spec write never sets status.
func (claimStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return base.ResetFields(extensions.GroupName, "status")
}

func (st claimStrategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	c := obj.(*extensions.SandboxClaim)
	c.Status = extensions.SandboxClaimStatus{}
	c.Generation = 1
	st.AddFinalizer(c)
	st.refs.fillTemplate(ctx, c)
}

func (claimStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newC, oldC := obj.(*extensions.SandboxClaim), old.(*extensions.SandboxClaim)
	newC.Status = oldC.Status
	if !apiequality.Semantic.DeepEqual(newC.Spec, oldC.Spec) {
		newC.Generation = oldC.Generation + 1
	}
}

func (st claimStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	c := obj.(*extensions.SandboxClaim)
	return append(validation.ValidateSandboxClaim(c), st.refs.validate(ctx, c)...)
}

func (claimStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSandboxClaimUpdate(obj.(*extensions.SandboxClaim), old.(*extensions.SandboxClaim))
}

// GetResetFields tells server-side apply that a status write never sets spec.
func (claimStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return base.ResetFields(extensions.GroupName, "spec")
}

func (claimStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newC, oldC := obj.(*extensions.SandboxClaim), old.(*extensions.SandboxClaim)
	newC.Spec = oldC.Spec
	// Labels and annotations are not status: a status write keeps them as they were.
	newC.Labels = oldC.Labels
	newC.Annotations = oldC.Annotations
}

func (claimStatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSandboxClaimStatusUpdate(obj.(*extensions.SandboxClaim), old.(*extensions.SandboxClaim))
}

// GetAttrs returns the labels and selectable fields of a SandboxClaim.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	c, ok := obj.(*extensions.SandboxClaim)
	if !ok {
		return nil, nil, fmt.Errorf("not a SandboxClaim: %T", obj)
	}
	f := generic.ObjectMetaFieldsSet(&c.ObjectMeta, true)
	f[extensions.TemplateRefField] = c.Spec.TemplateRef.Name
	return c.Labels, f, nil
}

// Match selects SandboxClaims by labels and fields.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
