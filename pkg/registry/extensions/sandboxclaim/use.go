// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"
)

// UseVerb is the verb on sandboxtemplates that lets a user create claims of a template: an admin
// grants it per template (resourceNames) or per namespace, as for any verb.
const UseVerb = "use"

// REST is the main endpoint of claims: a claim is created only by a user who may use its
// template. Template references are immutable, so only creates are checked (a server-side apply
// that creates the claim included).
type REST struct {
	*common.REST
	authorizer authorizer.Authorizer
	// refs, when set, reads the pool and template a new claim names (References.resolve).
	refs *References
}

// Create checks that the user may use the claim's template, then creates it. A claim that names
// only a warm pool is checked against the pool's template.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if c, ok := obj.(*extensions.SandboxClaim); ok {
		if err := r.refs.resolve(ctx, c); err != nil {
			return nil, err
		}
		if err := r.authorizeUse(ctx, c); err != nil {
			return nil, err
		}
	}
	return r.REST.Create(ctx, obj, createValidation, options)
}

// Update checks, when it creates the claim, that the user may use its template.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	checkedCreate := func(ctx context.Context, obj runtime.Object) error {
		if c, ok := obj.(*extensions.SandboxClaim); ok {
			if err := r.authorizeUse(ctx, c); err != nil {
				return err
			}
		}
		if createValidation == nil {
			return nil
		}
		return createValidation(ctx, obj)
	}
	return r.REST.Update(ctx, name, objInfo, checkedCreate, updateValidation, forceAllowCreate, options)
}

// authorizeUse asks the server's authorizer (RBAC through a SubjectAccessReview, in a cluster)
// whether the user of ctx may use the claim's template; a server without authorization allows it.
func (r *REST) authorizeUse(ctx context.Context, c *extensions.SandboxClaim) error {
	if r.authorizer == nil {
		return nil
	}
	template := c.Spec.TemplateRef.Name
	namespace := c.Namespace
	if ns, ok := genericapirequest.NamespaceFrom(ctx); ok && ns != "" {
		namespace = ns
	}
	resource := extensions.Resource("sandboxtemplates")
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return apierrors.NewForbidden(resource, template, fmt.Errorf("no user to authorize"))
	}
	decision, reason, err := r.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            UseVerb,
		Namespace:       namespace,
		APIGroup:        extensions.GroupName,
		APIVersion:      "*",
		Resource:        resource.Resource,
		Name:            template,
		ResourceRequest: true,
	})
	if decision == authorizer.DecisionAllow {
		return nil
	}
	msg := fmt.Sprintf("User %q cannot use resource %q in API group %q in the namespace %q: creating a SandboxClaim needs the %q verb on its template",
		u.GetName(), resource.Resource, resource.Group, namespace, UseVerb)
	if reason != "" {
		msg += ": " + reason
	}
	if err != nil {
		msg += ": " + err.Error()
	}
	return apierrors.NewForbidden(resource, template, fmt.Errorf("%s", msg))
}
