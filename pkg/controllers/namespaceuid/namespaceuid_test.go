// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package namespaceuid

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

func TestStale(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-now"}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{"made in this namespace", map[string]string{agentsv1beta1.NamespaceUIDAnnotation: "uid-now"}, false},
		{"made in an earlier namespace of the name", map[string]string{agentsv1beta1.NamespaceUIDAnnotation: "uid-before"}, true},
		{"made before the UID was recorded", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Namespace: "team", Name: "x", Annotations: tc.annotations}
			if got := Stale(obj, ns); got != tc.want {
				t.Errorf("Stale = %v, want %v", got, tc.want)
			}
		})
	}
}
