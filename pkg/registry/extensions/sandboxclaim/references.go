// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

// References reads, from this server's own storage, the warm pool and the template a claim being
// created names: the pool decides the template of a claim by spec.warmPoolRef, and the template
// decides whether the claim may add volume claim templates. Both are looked up in the namespace
// of the request.
type References struct {
	Pools     rest.Getter
	Templates rest.Getter
}

// get reads name from the watch cache and, when it is not there, from etcd: an object created a
// moment before the claim (kubectl apply of a pool and its claim together) may not be cached yet.
func get[T any](ctx context.Context, g rest.Getter, name string) (*T, error) {
	obj, err := g.Get(ctx, name, &metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		obj, err = g.Get(ctx, name, &metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	out, ok := any(obj).(*T)
	if !ok {
		return nil, fmt.Errorf("storage returned a %T", obj)
	}
	return out, nil
}

// Template reads the template of this name, for the checks of what a claim copies into its
// sandbox (Policy.Templates).
func (r *References) Template(ctx context.Context, name string) (*extensions.SandboxTemplate, error) {
	return get[extensions.SandboxTemplate](ctx, r.Templates, name)
}

// resolve reads, before a claim is created, the pool and the template it names (fillTemplate).
// A template that does not exist is left for validate to report against its field; any other
// failure to read it (etcd unreachable, say) is returned as it is, an error the client may retry,
// not an invalid claim.
func (r *References) resolve(ctx context.Context, c *extensions.SandboxClaim) error {
	if err := r.fillTemplate(ctx, c); err != nil {
		return err
	}
	if name := c.Spec.TemplateRef.Name; r != nil && name != "" {
		if _, err := get[extensions.SandboxTemplate](ctx, r.Templates, name); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// fillTemplate gives a claim by warmPoolRef without a template the template of its pool, so that
// the use of that template is what is authorized. A pool that does not exist is left for validate
// to report; any other failure to read it is returned. A claim that names its template reads
// nothing here.
func (r *References) fillTemplate(ctx context.Context, c *extensions.SandboxClaim) error {
	if r == nil || c.Spec.WarmPoolRef == nil || c.Spec.WarmPoolRef.Name == "" || c.Spec.TemplateRef.Name != "" {
		return nil
	}
	pool, err := get[extensions.SandboxWarmPool](ctx, r.Pools, c.Spec.WarmPoolRef.Name)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	c.Spec.TemplateRef.Name = pool.Spec.TemplateRef.Name
	return nil
}

// validate checks what a new claim says against the pool and template it names: the pool exists
// and is of the claim's template, and the template's volumeClaimTemplatesPolicy allows the claim's
// volume claim templates.
func (r *References) validate(ctx context.Context, c *extensions.SandboxClaim) field.ErrorList {
	if r == nil {
		return nil
	}
	var allErrs field.ErrorList
	specPath := field.NewPath("spec")
	if ref := c.Spec.WarmPoolRef; ref != nil && ref.Name != "" {
		refPath := specPath.Child("warmPoolRef", "name")
		pool, err := get[extensions.SandboxWarmPool](ctx, r.Pools, ref.Name)
		switch {
		case apierrors.IsNotFound(err):
			allErrs = append(allErrs, field.NotFound(refPath, ref.Name))
		case err != nil:
			allErrs = append(allErrs, field.InternalError(refPath, err))
		case c.Spec.TemplateRef.Name != pool.Spec.TemplateRef.Name:
			allErrs = append(allErrs, field.Invalid(specPath.Child("sandboxTemplateRef", "name"), c.Spec.TemplateRef.Name,
				fmt.Sprintf("must be %q, the template of SandboxWarmPool %q (spec.warmPoolRef.name), or be left out", pool.Spec.TemplateRef.Name, ref.Name)))
		}
	}
	if len(c.Spec.VolumeClaimTemplates) > 0 && c.Spec.TemplateRef.Name != "" {
		allErrs = append(allErrs, r.validateVolumeClaimTemplates(ctx, c, specPath.Child("volumeClaimTemplates"))...)
	}
	return allErrs
}

// validateVolumeClaimTemplates checks a claim's volume claim templates against its template's
// volumeClaimTemplatesPolicy: Disallowed refuses them all, Allowed those of a name the template
// has, Overrides none.
func (r *References) validateVolumeClaimTemplates(ctx context.Context, c *extensions.SandboxClaim, fldPath *field.Path) field.ErrorList {
	name := c.Spec.TemplateRef.Name
	template, err := get[extensions.SandboxTemplate](ctx, r.Templates, name)
	switch {
	case apierrors.IsNotFound(err):
		return field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf(
			"SandboxTemplate %q does not exist, so no volumeClaimTemplatesPolicy allows them", name))}
	case err != nil:
		return field.ErrorList{field.InternalError(fldPath, err)}
	}
	policy := template.Spec.VolumeClaimTemplatesPolicy
	if policy != extensions.VolumeClaimTemplatesPolicyAllowed && policy != extensions.VolumeClaimTemplatesPolicyOverrides {
		return field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf(
			"SandboxTemplate %q has volumeClaimTemplatesPolicy %q: set it to Allowed or Overrides to let claims add volume claim templates", name, policy))}
	}
	_, conflicts := extensions.MergeVolumeClaimTemplates(template.Spec.VolumeClaimTemplates, c.Spec.VolumeClaimTemplates,
		func(v *agents.PersistentVolumeClaimTemplate) string { return v.Name }, policy == extensions.VolumeClaimTemplatesPolicyOverrides)
	var allErrs field.ErrorList
	for _, i := range conflicts {
		allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("metadata", "name"), fmt.Sprintf(
			"SandboxTemplate %q has a volume claim template of this name and volumeClaimTemplatesPolicy Allowed, which only adds new ones (Overrides replaces them)", name)))
	}
	return allErrs
}
