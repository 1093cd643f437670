// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package validation

import (
	"time"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

// ValidateTime refuses a time with no RFC 3339 form in UTC, that is a year outside 0-9999 once the
// offset is applied ("9999-12-31T23:59:59-23:59"): it would be stored as JSON nobody can read
// back, and every read of its kind would fail.
func ValidateTime(t *metav1.Time, fldPath *field.Path) field.ErrorList {
	if t == nil || t.IsZero() {
		return nil
	}
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return field.ErrorList{field.Invalid(fldPath, t.UTC().String(), "must be a time between the years 0 and 9999 in UTC")}
	}
	return nil
}

// ValidateOptionalTime is ValidateTime for a pointer field, where nil means unset. The zero time
// there is refused: it is written as null and reads back as unset, so a shutdownTime of
// 0001-01-01T00:00:00Z (due at once) would be stored as no shutdown at all.
func ValidateOptionalTime(t *metav1.Time, fldPath *field.Path) field.ErrorList {
	if t != nil && t.IsZero() {
		return field.ErrorList{field.Invalid(fldPath, t.UTC().Format(time.RFC3339),
			"must not be the zero time, which reads back as unset: leave the field out, or give a real time")}
	}
	return ValidateTime(t, fldPath)
}

// ValidateConditionTimes checks the lastTransitionTime of every condition.
func ValidateConditionTimes(conditions []metav1.Condition, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range conditions {
		allErrs = append(allErrs, ValidateTime(&conditions[i].LastTransitionTime, fldPath.Index(i).Child("lastTransitionTime"))...)
	}
	return allErrs
}

// ValidateObjectMeta is the standard object metadata validation plus the times clients may set
// (managedFields).
func ValidateObjectMeta(meta *metav1.ObjectMeta, nameFn apimachineryvalidation.ValidateNameFunc, fldPath *field.Path) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(meta, true, nameFn, fldPath)
	return append(allErrs, validateManagedFieldsTimes(meta, fldPath)...)
}

// ValidateObjectMetaUpdate is the standard metadata update validation plus the times clients may
// set (managedFields).
func ValidateObjectMetaUpdate(newMeta, oldMeta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(newMeta, oldMeta, fldPath)
	return append(allErrs, validateManagedFieldsTimes(newMeta, fldPath)...)
}

func validateManagedFieldsTimes(meta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range meta.ManagedFields {
		allErrs = append(allErrs, ValidateTime(meta.ManagedFields[i].Time, fldPath.Child("managedFields").Index(i).Child("time"))...)
	}
	return allErrs
}

// ValidateIdleTimeout checks an optional idle timeout: unset, or at least agents.MinIdleTimeout.
func ValidateIdleTimeout(d *metav1.Duration, fldPath *field.Path) field.ErrorList {
	if d == nil || d.Duration >= agents.MinIdleTimeout {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, d.Duration.String(),
		"must be at least "+agents.MinIdleTimeout.String()+": leave the field out for a sandbox that is never suspended for idleness")}
}
