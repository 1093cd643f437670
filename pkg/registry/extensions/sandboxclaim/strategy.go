// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandboxclaim is the registry of sandboxclaims.extensions.agents.x-k8s.io.
package sandboxclaim

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
)

// claimStrategy is the create, update and delete strategy of SandboxClaim: spec writes only.
type claimStrategy struct {
	common.Strategy
	// refs, when set, reads the pool and template a new claim names (see References).
	refs *References
	// controllers alone may set the marks of a bound claim (see pkg/registry/trust).
	controllers *trust.ControllerIdentity
	// templates reads the template a claim names, to check what the claim copies into its
	// sandbox against what the template opens.
	templates TemplateGetter
}

// TemplateGetter returns the SandboxTemplate name in the namespace of ctx.
type TemplateGetter func(ctx context.Context, name string) (*extensions.SandboxTemplate, error)

// claimStatusStrategy is the strategy of the status subresource: status writes only.
type claimStatusStrategy struct {
	claimStrategy
}

// NewStrategy returns the main strategy and the status strategy of SandboxClaim. templates may
// be nil (no checks against the template).
func NewStrategy(typer runtime.ObjectTyper, finalizer string, controllers *trust.ControllerIdentity, templates TemplateGetter) (claimStrategy, claimStatusStrategy) {
	s := claimStrategy{Strategy: common.NewStrategy(typer, finalizer), controllers: controllers, templates: templates}
	return s, claimStatusStrategy{s}
}

// GetResetFields tells server-side apply that a spec write never sets status.
func (claimStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return common.ResetFields(extensions.GroupName, "status")
}

func (st claimStrategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	c := obj.(*extensions.SandboxClaim)
	c.Status = extensions.SandboxClaimStatus{}
	c.Generation = 1
	st.AddFinalizer(c)
	// A create through an update (server-side apply) gets here without REST.Create's resolve;
	// a pool that cannot be read is left for Validate to report.
	_ = st.refs.fillTemplate(ctx, c)
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
	allErrs := append(validation.ValidateSandboxClaim(c), st.refs.validate(ctx, c)...)
	if !st.controllers.InContext(ctx) {
		allErrs = append(allErrs, trust.ClaimMarks(c, nil)...)
	}
	t, err := st.template(ctx, c)
	if err != nil {
		return append(allErrs, field.InternalError(field.NewPath("spec", "sandboxTemplateRef"), err))
	}
	if t != nil {
		allErrs = append(allErrs, validation.ValidateClaimPodMetadataForTemplate(c, t)...)
		allErrs = append(allErrs, validation.ValidateClaimEnvForTemplate(c, t)...)
		allErrs = append(allErrs, validation.ValidateClaimVolumesForTemplate(c, t)...)
	}
	return allErrs
}

// ValidateUpdate checks pod metadata against the template again when it changes (env and the
// template are immutable).
func (st claimStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	newC, oldC := obj.(*extensions.SandboxClaim), old.(*extensions.SandboxClaim)
	allErrs := validation.ValidateSandboxClaimUpdate(newC, oldC)
	if !st.controllers.InContext(ctx) {
		allErrs = append(allErrs, trust.ClaimMarks(newC, oldC)...)
	}
	if apiequality.Semantic.DeepEqual(newC.Spec.AdditionalPodMetadata, oldC.Spec.AdditionalPodMetadata) {
		return allErrs
	}
	t, err := st.template(ctx, newC)
	if err != nil {
		return append(allErrs, field.InternalError(field.NewPath("spec", "sandboxTemplateRef"), err))
	}
	if t != nil {
		allErrs = append(allErrs, validation.ValidateClaimPodMetadataForTemplate(newC, t)...)
	}
	return allErrs
}

// template is the claim's template, or nil when it does not exist (yet): the claim controller
// checks the claim against it when it makes the sandbox.
func (st claimStrategy) template(ctx context.Context, c *extensions.SandboxClaim) (*extensions.SandboxTemplate, error) {
	if st.templates == nil || c.Spec.TemplateRef.Name == "" {
		return nil, nil
	}
	t, err := st.templates(ctx, c.Spec.TemplateRef.Name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return t, err
}

// GetResetFields tells server-side apply that a status write never sets spec.
func (claimStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return common.ResetFields(extensions.GroupName, "spec")
}

func (claimStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newC, oldC := obj.(*extensions.SandboxClaim), old.(*extensions.SandboxClaim)
	newC.Spec = oldC.Spec
	// Labels and annotations are not status: a status write keeps them as they were.
	newC.Labels = oldC.Labels
	newC.Annotations = oldC.Annotations
}

// ValidateUpdate also refuses controller references a status write would add or remove: it keeps
// labels and annotations, not the rest of the metadata.
func (st claimStatusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	newC, oldC := obj.(*extensions.SandboxClaim), old.(*extensions.SandboxClaim)
	allErrs := validation.ValidateSandboxClaimStatusUpdate(newC, oldC)
	if !st.controllers.InContext(ctx) {
		allErrs = append(allErrs, trust.ClaimMarks(newC, oldC)...)
	}
	return allErrs
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
