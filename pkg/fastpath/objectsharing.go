// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// ShareParts lets decoded objects share one copy of the parts many of them hold
// alike: the pod spec of Sandboxes made from one template, and the field sets of their
// managedFields. The watch caches and the controllers' informers keep thousands of such objects,
// each decoded on its own; sharing those parts is most of their memory.
//
// Shared parts are read-only, as every object in a watch cache or an informer already is: code
// that changes an object changes a deep copy of it.

package fastpath

import (
	"container/list"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// keptValues bounds each table: distinct pod specs and field sets in use at once are about as
// many as the templates and the managers writing them, far fewer than the objects.
const keptValues = 256

// SharingTable keeps the most recently shared values, at most its size, keyed by their encoding. A value
// it no longer keeps stays shared by the objects already holding it.
type SharingTable[T any] struct {
	mu      sync.Mutex
	size    int
	entries map[string]*list.Element
	order   list.List // of *entry[T], the most recently used first
}

type entry[T any] struct {
	key   string
	value T
}

// NewSharingTable returns a table keeping at most size values.
func NewSharingTable[T any](size int) *SharingTable[T] {
	return &SharingTable[T]{size: size, entries: map[string]*list.Element{}}
}

// Share returns the value kept under key, or keeps value under key and returns it.
func (t *SharingTable[T]) Share(key []byte, value T) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.entries[string(key)]; ok {
		t.order.MoveToFront(e)
		return e.Value.(*entry[T]).value
	}
	e := &entry[T]{key: string(key), value: value}
	t.entries[e.key] = t.order.PushFront(e)
	if t.order.Len() > t.size {
		oldest := t.order.Back()
		t.order.Remove(oldest)
		delete(t.entries, oldest.Value.(*entry[T]).key)
	}
	return value
}

var (
	podSpecs  = NewSharingTable[corev1.PodSpec](keptValues)
	fieldSets = NewSharingTable[*metav1.FieldsV1](keptValues)
)

// SharePodSpec makes spec share its contents with an identical pod spec shared before. Identical
// means the same protobuf encoding, the form objects are stored and served in.
func SharePodSpec(spec *corev1.PodSpec) {
	raw, err := spec.Marshal()
	if err != nil {
		return
	}
	*spec = podSpecs.Share(raw, *spec)
}

// ShareManagedFields makes each entry's field set the identical one shared before.
func ShareManagedFields(entries []metav1.ManagedFieldsEntry) {
	for i := range entries {
		if f := entries[i].FieldsV1; f != nil {
			entries[i].FieldsV1 = fieldSets.Share(f.GetRawBytes(), f)
		}
	}
}

// ShareParts shares what obj holds alike with other objects: its managedFields and, for a Sandbox in
// its internal or v1beta1 form, its pod spec. obj must be freshly decoded, not yet seen by others.
func ShareParts(obj runtime.Object) {
	switch o := obj.(type) {
	case *agents.Sandbox:
		SharePodSpec(&o.Spec.PodTemplate.Spec)
	case *agentsv1beta1.Sandbox:
		SharePodSpec(&o.Spec.PodTemplate.Spec)
	}
	if m, ok := obj.(metav1.Object); ok {
		ShareManagedFields(m.GetManagedFields())
	}
}
