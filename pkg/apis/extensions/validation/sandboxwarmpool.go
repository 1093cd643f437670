// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"fmt"
	"slices"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"

	"k8s.io/apimachinery/pkg/util/validation/field"

	agentsvalidation "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/validation"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

var supportedUpdateStrategyTypes = []extensions.SandboxWarmPoolUpdateStrategyType{
	extensions.RecreateSandboxWarmPoolUpdateStrategyType, extensions.OnReplenishSandboxWarmPoolUpdateStrategyType,
}

// ValidateSandboxWarmPool validates a SandboxWarmPool on create.
func ValidateSandboxWarmPool(p *extensions.SandboxWarmPool) field.ErrorList {
	allErrs := agentsvalidation.ValidateObjectMeta(&p.ObjectMeta, ValidateSandboxWarmPoolName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSandboxWarmPoolSpec(&p.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateSandboxWarmPoolUpdate validates an update of a pool's metadata and spec.
//
// The whole spec stays mutable: spec.replicas is what kubectl scale and an autoscaler change,
// spec.updateStrategy and spec.readinessGracePeriodSeconds only affect how the controller
// replaces members from then on, and
// spec.sandboxTemplateRef may point to another template: the members made from the old one are
// then stale and are replaced as spec.updateStrategy says (at once for Recreate, as they are
// claimed or deleted for OnReplenish).
func ValidateSandboxWarmPoolUpdate(newP, oldP *extensions.SandboxWarmPool) field.ErrorList {
	allErrs := agentsvalidation.ValidateObjectMetaUpdate(&newP.ObjectMeta, &oldP.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSandboxWarmPoolSpec(&newP.Spec, field.NewPath("spec"))...)
	return allErrs
}

// ValidateSandboxWarmPoolStatusUpdate validates an update of a pool's status. The counts are only
// required to be non-negative: readyReplicas may briefly exceed replicas while the controller
// catches up, and neither is compared with spec.replicas.
func ValidateSandboxWarmPoolStatusUpdate(newP, oldP *extensions.SandboxWarmPool) field.ErrorList {
	allErrs := agentsvalidation.ValidateObjectMetaUpdate(&newP.ObjectMeta, &oldP.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	st := &newP.Status
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(st.ObservedGeneration, statusPath.Child("observedGeneration"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(st.Replicas), statusPath.Child("replicas"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(st.ReadyReplicas), statusPath.Child("readyReplicas"))...)
	allErrs = append(allErrs, agentsvalidation.ValidateSelectorString(st.Selector, statusPath.Child("selector"))...)
	return allErrs
}

// MaxWarmPoolReplicas bounds a pool's replicas: each is a running pod, and a pool is refilled
// without anyone asking, so a typo or a runaway autoscaler must not fill the cluster.
const MaxWarmPoolReplicas = 5000

func validateSandboxWarmPoolSpec(spec *extensions.SandboxWarmPoolSpec, fldPath *field.Path) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateNonnegativeField(int64(spec.Replicas), fldPath.Child("replicas"))
	if spec.Replicas > MaxWarmPoolReplicas {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("replicas"), spec.Replicas, fmt.Sprintf("must be at most %d", MaxWarmPoolReplicas)))
	}
	allErrs = append(allErrs, validateTemplateRef(&spec.TemplateRef, fldPath.Child("sandboxTemplateRef"))...)
	if s := spec.UpdateStrategy; s != nil && !slices.Contains(supportedUpdateStrategyTypes, s.Type) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("updateStrategy", "type"), s.Type, supportedUpdateStrategyTypes))
	}
	if g := spec.ReadinessGracePeriodSeconds; g != nil && *g < extensions.MinReadinessGracePeriodSeconds {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("readinessGracePeriodSeconds"), *g,
			fmt.Sprintf("must be at least %d", extensions.MinReadinessGracePeriodSeconds)))
	}
	return allErrs
}
