// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package objectmeta

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

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
			if got := StaleNamespace(obj, ns); got != tc.want {
				t.Errorf("StaleNamespace = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInactive(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name      string
		namespace *corev1.Namespace
		recorded  string
		want      bool
	}{
		{"namespace not cached yet", nil, "uid-now", false},
		{"live namespace, its own object", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-now"}}, "uid-now", false},
		{"live namespace, an earlier one's object", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-now"}}, "uid-before", true},
		{"namespace terminating", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-now"},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}, "uid-now", true},
		{"namespace deleted, phase not yet Terminating", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "uid-now", DeletionTimestamp: &now}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if tc.namespace != nil {
				if err := indexer.Add(tc.namespace); err != nil {
					t.Fatal(err)
				}
			}
			obj := &metav1.ObjectMeta{Namespace: "team", Name: "x", Annotations: map[string]string{agentsv1beta1.NamespaceUIDAnnotation: tc.recorded}}
			if got := InInactiveNamespace(corelisters.NewNamespaceLister(indexer), obj); got != tc.want {
				t.Errorf("InInactiveNamespace = %v, want %v", got, tc.want)
			}
		})
	}
}
