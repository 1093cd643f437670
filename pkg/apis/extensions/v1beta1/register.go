// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package v1beta1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of SandboxClaim, SandboxTemplate and SandboxWarmPool.
const GroupName = "extensions.agents.x-k8s.io"

// SchemeGroupVersion is the group version of this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

var (
	localSchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, addDefaultingFuncs, addFieldLabelConversionFuncs)
	SchemeBuilder      = &localSchemeBuilder
	AddToScheme        = localSchemeBuilder.AddToScheme
)

// Resource takes an unqualified resource and returns it qualified with this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&SandboxClaim{}, &SandboxClaimList{},
		&SandboxTemplate{}, &SandboxTemplateList{},
		&SandboxWarmPool{}, &SandboxWarmPoolList{},
	)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// addFieldLabelConversionFuncs lets clients select claims and warm pools by their template.
func addFieldLabelConversionFuncs(scheme *runtime.Scheme) error {
	for _, kind := range []string{"SandboxClaim", "SandboxWarmPool"} {
		err := scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind(kind), func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "metadata.namespace", "spec.sandboxTemplateRef.name":
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label %q not supported for %s", label, kind)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
