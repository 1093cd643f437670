// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package agents

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SandboxProxyOptions is the query of a sandboxes/proxy request.
type SandboxProxyOptions struct {
	metav1.TypeMeta

	// Path is the URL path to use for the request to the pod.
	Path string
}

func init() {
	SchemeBuilder.Register(func(scheme *runtime.Scheme) error {
		scheme.AddKnownTypes(SchemeGroupVersion, &SandboxProxyOptions{})
		return nil
	})
}
