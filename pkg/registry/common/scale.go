// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// ScaleREST serves the autoscaling/v1 scale subresource of a kind from the kind's own store, so
// kubectl scale and a HorizontalPodAutoscaler read and write spec.replicas through it.

package common

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	scalescheme "k8s.io/client-go/scale/scheme"
)

// ScaleAccessor maps one kind to and from a Scale.
type ScaleAccessor struct {
	// Kind is reported in errors about the scaled object.
	Kind schema.GroupKind
	// ToScale reads the replicas and selector of an object.
	ToScale func(obj runtime.Object) (*scalescheme.Scale, error)
	// SetReplicas writes spec.replicas into a copy of the object.
	SetReplicas func(obj runtime.Object, replicas int32)
	// ValidateReplicas checks a requested replica count; errors name spec.replicas.
	ValidateReplicas func(replicas int32) field.ErrorList
}

// ScaleREST is the scale subresource of one kind.
type ScaleREST struct {
	store    *genericregistry.Store
	accessor ScaleAccessor
}

// NewScaleREST serves the scale subresource of the objects in store.
func NewScaleREST(store *genericregistry.Store, accessor ScaleAccessor) *ScaleREST {
	return &ScaleREST{store: store, accessor: accessor}
}

var (
	_ rest.Patcher                  = &ScaleREST{}
	_ rest.GroupVersionKindProvider = &ScaleREST{}
)

// New returns an empty Scale.
func (r *ScaleREST) New() runtime.Object { return &scalescheme.Scale{} }

// Destroy does nothing: the store is shut down with the main resource.
func (r *ScaleREST) Destroy() {}

// GroupVersionKind serves Scale as autoscaling/v1 whatever group the scaled kind is in.
func (r *ScaleREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// Get returns the Scale of the named object.
func (r *ScaleREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	return r.accessor.ToScale(obj)
}

// Update writes the replicas of a Scale into the named object; the object's own validation runs too.
func (r *ScaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := r.store.Update(ctx, name,
		&scaleUpdatedObjectInfo{name: name, reqObjInfo: objInfo, accessor: r.accessor},
		r.toScaleCreateValidation(createValidation),
		r.toScaleUpdateValidation(updateValidation),
		false, // a scale never creates the object it scales
		options)
	if err != nil {
		return nil, false, err
	}
	scale, err := r.accessor.ToScale(obj)
	if err != nil {
		return nil, false, apierrors.NewBadRequest(err.Error())
	}
	return scale, false, nil
}

func (r *ScaleREST) toScaleCreateValidation(f rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		scale, err := r.accessor.ToScale(obj)
		if err != nil {
			return err
		}
		return f(ctx, scale)
	}
}

func (r *ScaleREST) toScaleUpdateValidation(f rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	return func(ctx context.Context, obj, old runtime.Object) error {
		newScale, err := r.accessor.ToScale(obj)
		if err != nil {
			return err
		}
		oldScale, err := r.accessor.ToScale(old)
		if err != nil {
			return err
		}
		return f(ctx, newScale, oldScale)
	}
}

// scaleUpdatedObjectInfo turns the Scale of a request into the updated object.
type scaleUpdatedObjectInfo struct {
	name       string
	reqObjInfo rest.UpdatedObjectInfo
	accessor   ScaleAccessor
}

func (i *scaleUpdatedObjectInfo) Preconditions() *metav1.Preconditions {
	return i.reqObjInfo.Preconditions()
}

func (i *scaleUpdatedObjectInfo) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	if oldObj == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: i.accessor.Kind.Group, Resource: i.accessor.Kind.Kind}, i.name)
	}
	oldScale, err := i.accessor.ToScale(oldObj)
	if err != nil {
		return nil, err
	}
	obj, err := i.reqObjInfo.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, apierrors.NewBadRequest("nil update passed to Scale")
	}
	scale, ok := obj.(*scalescheme.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but %T", obj))
	}
	if errs := i.validate(scale); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: "autoscaling", Kind: "Scale"}, scale.Name, errs)
	}
	newObj := oldObj.DeepCopyObject()
	i.accessor.SetReplicas(newObj, scale.Spec.Replicas)
	// A resourceVersion on the Scale is a precondition on the scaled object.
	if scale.ResourceVersion != "" {
		if err := setResourceVersion(newObj, scale.ResourceVersion); err != nil {
			return nil, err
		}
	}
	return newObj, nil
}

func (i *scaleUpdatedObjectInfo) validate(scale *scalescheme.Scale) field.ErrorList {
	var errs field.ErrorList
	if scale.Name != "" && scale.Name != i.name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), scale.Name, "must match the name of the scaled object"))
	}
	return append(errs, i.accessor.ValidateReplicas(scale.Spec.Replicas)...)
}

func setResourceVersion(obj runtime.Object, rv string) error {
	m, ok := obj.(metav1.Object)
	if !ok {
		return fmt.Errorf("%T has no object metadata", obj)
	}
	m.SetResourceVersion(rv)
	return nil
}

// NewScale returns the Scale of an object from its metadata, replicas and selector string.
func NewScale(obj metav1.ObjectMeta, specReplicas, statusReplicas int32, selector string) (*scalescheme.Scale, error) {
	scale := &scalescheme.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name:              obj.Name,
			Namespace:         obj.Namespace,
			UID:               obj.UID,
			ResourceVersion:   obj.ResourceVersion,
			CreationTimestamp: obj.CreationTimestamp,
		},
		Spec:   scalescheme.ScaleSpec{Replicas: specReplicas},
		Status: scalescheme.ScaleStatus{Replicas: statusReplicas},
	}
	if selector != "" {
		s, err := metav1.ParseToLabelSelector(selector)
		if err != nil {
			return nil, fmt.Errorf("status.selector %q: %w", selector, err)
		}
		scale.Status.Selector = s
	}
	return scale, nil
}
