// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package sandbox is the registry of sandboxes.agents.x-k8s.io.
package sandbox

import (
	"context"
	"fmt"
	"maps"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/validation"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/trust"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/objectmeta"
)

// sandboxStrategy is the create, update and delete strategy of Sandbox: spec writes only.
type sandboxStrategy struct {
	common.Strategy
	// controllers alone may set the marks of warm-pool membership and claim ownership.
	controllers *trust.ControllerIdentity
}

// sandboxStatusStrategy is the strategy of the status subresource: status writes only.
type sandboxStatusStrategy struct {
	sandboxStrategy
}

// NewStrategy returns the main strategy and the status strategy of Sandbox; only controllers may
// write the marks the controllers trust (see pkg/registry/trust).
func NewStrategy(typer runtime.ObjectTyper, finalizer string, controllers *trust.ControllerIdentity) (sandboxStrategy, sandboxStatusStrategy) {
	s := sandboxStrategy{Strategy: common.NewStrategy(typer, finalizer), controllers: controllers}
	return s, sandboxStatusStrategy{s}
}

// GetResetFields tells server-side apply that a spec write never sets status.
func (sandboxStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return common.ResetFields(agents.GroupName, "status")
}

func (st sandboxStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	s := obj.(*agents.Sandbox)
	s.Status = agents.SandboxStatus{}
	s.Generation = 1
	st.AddFinalizer(s)
	fillReplicasAndMode(&s.Spec)
	setLaunchType(s, launchType(s))
	if *s.Spec.Replicas == 0 {
		// Created suspended, it has nothing for the controller to make, so its status is known
		// now: storing it here spares the controller's status write, the half of the Sandbox's
		// cost that comes after its create. The controller, finding it, writes nothing.
		ready, suspended := agentsv1beta1.SuspendedConditions(s.Generation)
		now := metav1.Now()
		ready.LastTransitionTime, suspended.LastTransitionTime = now, now
		s.Status.Conditions = []metav1.Condition{ready, suspended}
	}
}

func (sandboxStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newS, oldS := obj.(*agents.Sandbox), old.(*agents.Sandbox)
	newS.Status = oldS.Status
	keepReplicasAndModeInStep(&newS.Spec, &oldS.Spec)
	keepLaunchType(newS, oldS)
	if !apiequality.Semantic.DeepEqual(newS.Spec, oldS.Spec) {
		newS.Generation = oldS.Generation + 1
	}
}

func (st sandboxStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	s := obj.(*agents.Sandbox)
	allErrs := validation.ValidateSandbox(s)
	if !st.controllers.InContext(ctx) {
		allErrs = append(allErrs, trust.SandboxMarks(s, nil)...)
	}
	return allErrs
}

func (st sandboxStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	newS, oldS := obj.(*agents.Sandbox), old.(*agents.Sandbox)
	allErrs := validation.ValidateSandboxUpdate(newS, oldS)
	if !st.controllers.InContext(ctx) {
		allErrs = append(allErrs, trust.SandboxMarks(newS, oldS)...)
	}
	return allErrs
}

// GetResetFields tells server-side apply that a status write never sets spec.
func (sandboxStatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return common.ResetFields(agents.GroupName, "spec")
}

func (sandboxStatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newS, oldS := obj.(*agents.Sandbox), old.(*agents.Sandbox)
	newS.Spec = oldS.Spec
	// Labels and annotations are not status: a status write keeps them as they were.
	newS.Labels = oldS.Labels
	newS.Annotations = oldS.Annotations
}

// ValidateUpdate also refuses controller references a status write would add or remove: it keeps
// labels and annotations, not the rest of the metadata.
func (st sandboxStatusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	newS, oldS := obj.(*agents.Sandbox), old.(*agents.Sandbox)
	allErrs := validation.ValidateSandboxStatusUpdate(newS, oldS)
	if !st.controllers.InContext(ctx) {
		allErrs = append(allErrs, trust.SandboxMarks(newS, oldS)...)
	}
	return allErrs
}

// GetAttrs returns the labels and selectable fields of a Sandbox.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	s, ok := obj.(*agents.Sandbox)
	if !ok {
		return nil, nil, fmt.Errorf("not a Sandbox: %T", obj)
	}
	return s.Labels, generic.ObjectMetaFieldsSet(&s.ObjectMeta, true), nil
}

// Match selects Sandboxes by labels and fields.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}

// fillReplicasAndMode sets whichever of spec.replicas and spec.operatingMode is missing from the
// other, Running with one replica when both are; the versioned defaulters do the same on decode.
func fillReplicasAndMode(spec *agents.SandboxSpec) {
	switch {
	case spec.Replicas == nil && spec.OperatingMode != "":
		spec.Replicas = ptr.To(validation.ReplicasOfMode(spec.OperatingMode))
	case spec.Replicas == nil:
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.OperatingMode == "" {
		spec.OperatingMode = validation.ModeOfReplicas(*spec.Replicas)
	}
}

// keepReplicasAndModeInStep makes the one of spec.replicas and spec.operatingMode that a write
// left as it was follow the one it changed, as the scale subresource (which writes replicas only)
// and a v1.0 manifest (operatingMode only) both need. When a write changes both so that they
// disagree, they are left for validation to refuse.
func keepReplicasAndModeInStep(newSpec, oldSpec *agents.SandboxSpec) {
	replicasChanged := newSpec.Replicas != nil && (oldSpec.Replicas == nil || *newSpec.Replicas != *oldSpec.Replicas)
	modeChanged := newSpec.OperatingMode != "" && newSpec.OperatingMode != oldSpec.OperatingMode
	switch {
	case replicasChanged && !modeChanged:
		if mode := validation.ModeOfReplicas(*newSpec.Replicas); mode != "" {
			newSpec.OperatingMode = mode
		}
	case modeChanged && !replicasChanged:
		newSpec.Replicas = ptr.To(validation.ReplicasOfMode(newSpec.OperatingMode))
	}
	fillReplicasAndMode(newSpec)
}

// launchType is how a new Sandbox comes to be: warm when a warm pool makes it (a claim that adopts
// it later keeps it warm), cold otherwise. The controller reference decides, which only the
// server's controllers may set to a pool, so nobody chooses the label by hand.
func launchType(s *agents.Sandbox) string {
	if objectmeta.ControllerOf(s, extensions.Kind("SandboxWarmPool")) != nil {
		return agentsv1beta1.LaunchTypeWarm
	}
	return agentsv1beta1.LaunchTypeCold
}

// keepLaunchType keeps the launch type a Sandbox was created with through every update. A Sandbox
// stored before the label existed gets it from what it was: warm if a pool made it.
func keepLaunchType(newS, oldS *agents.Sandbox) {
	lt, ok := oldS.Labels[agentsv1beta1.SandboxLaunchTypeLabel]
	if !ok {
		lt = launchType(oldS)
		if lt == agentsv1beta1.LaunchTypeCold {
			lt = launchType(newS)
		}
	}
	setLaunchType(newS, lt)
}

func setLaunchType(s *agents.Sandbox, lt string) {
	if s.Labels[agentsv1beta1.SandboxLaunchTypeLabel] == lt {
		return
	}
	s.Labels = maps.Clone(s.Labels)
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[agentsv1beta1.SandboxLaunchTypeLabel] = lt
}
