// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

type propagateCase struct {
	name                   string
	labels, annotations    map[string]string // on the object before
	tmplLabels, tmplAnnots map[string]string
	wantLabels, wantAnnots map[string]string
	wantChanged            bool
	// identity are the labels that always win; the hash label "h" when nil.
	identity map[string]string
}

func runPropagate(t *testing.T, tc propagateCase) {
	t.Helper()
	obj := &metav1.ObjectMeta{Labels: maps.Clone(tc.labels), Annotations: maps.Clone(tc.annotations)}
	tmpl := &agentsv1beta1.PodMetadata{Labels: maps.Clone(tc.tmplLabels), Annotations: maps.Clone(tc.tmplAnnots)}
	identity := map[string]string{hashLabel: "h"}
	if tc.identity != nil {
		identity = tc.identity
	}
	changed := propagateMetadata(obj, tmpl, identity)
	if changed != tc.wantChanged {
		t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
	}
	checkMap(t, "labels", obj.Labels, tc.wantLabels)
	checkMap(t, "annotations", obj.Annotations, tc.wantAnnots)
	if !maps.Equal(tmpl.Labels, tc.tmplLabels) || !maps.Equal(tmpl.Annotations, tc.tmplAnnots) {
		t.Errorf("template modified: %+v", tmpl)
	}
	// Idempotent: the result is what the template asks for, so a second pass changes nothing.
	again := obj.DeepCopy()
	if propagateMetadata(again, tmpl, identity) {
		t.Errorf("second pass reports a change: %v/%v -> %v/%v", obj.Labels, obj.Annotations, again.Labels, again.Annotations)
	}
}

// TestPropagateMetadata is the label and annotation propagation with its bookkeeping, as a pure
// function. The identity label is the hash "h".
func TestPropagateMetadata(t *testing.T) {
	cases := []propagateCase{
		{
			name:        "empty object, empty template: only the hash label",
			wantLabels:  labels(hashLabel, "h"),
			wantChanged: true,
		},
		{
			name:        "hash label already there, empty template: unchanged",
			labels:      labels(hashLabel, "h"),
			wantLabels:  labels(hashLabel, "h"),
			wantChanged: false,
		},
		{
			name:        "wrong hash is corrected",
			labels:      labels(hashLabel, "old"),
			wantLabels:  labels(hashLabel, "h"),
			wantChanged: true,
		},
		{
			name:        "template keys are set and recorded, sorted",
			tmplLabels:  labels("c", "3", "a", "1", "b", "2"),
			tmplAnnots:  labels("y", "2", "x", "1"),
			wantLabels:  labels(hashLabel, "h", "a", "1", "b", "2", "c", "3"),
			wantAnnots:  labels("x", "1", "y", "2", propLabels, "a,b,c", propAnnots, "x,y"),
			wantChanged: true,
		},
		{
			name:        "in sync: unchanged",
			labels:      labels(hashLabel, "h", "a", "1"),
			annotations: labels("x", "1", propLabels, "a", propAnnots, "x"),
			tmplLabels:  labels("a", "1"),
			tmplAnnots:  labels("x", "1"),
			wantLabels:  labels(hashLabel, "h", "a", "1"),
			wantAnnots:  labels("x", "1", propLabels, "a", propAnnots, "x"),
			wantChanged: false,
		},
		{
			name:        "drifted values are set back",
			labels:      labels(hashLabel, "h", "a", "changed"),
			annotations: labels("x", "changed", propLabels, "a", propAnnots, "x"),
			tmplLabels:  labels("a", "1"),
			tmplAnnots:  labels("x", "1"),
			wantLabels:  labels(hashLabel, "h", "a", "1"),
			wantAnnots:  labels("x", "1", propLabels, "a", propAnnots, "x"),
			wantChanged: true,
		},
		{
			name:        "a recorded key the template dropped is removed; a foreign key is kept",
			labels:      labels(hashLabel, "h", "a", "1", "b", "2", "mine", "user"),
			annotations: labels("x", "1", "gone", "1", "theirs", "user", propLabels, "a,b", propAnnots, "gone,x"),
			tmplLabels:  labels("a", "1"),
			tmplAnnots:  labels("x", "1"),
			wantLabels:  labels(hashLabel, "h", "a", "1", "mine", "user"),
			wantAnnots:  labels("x", "1", "theirs", "user", propLabels, "a", propAnnots, "x"),
			wantChanged: true,
		},
		{
			name:        "template emptied: recorded keys and both records removed, foreign keys kept",
			labels:      labels(hashLabel, "h", "a", "1", "mine", "user"),
			annotations: labels("x", "1", "theirs", "user", propLabels, "a", propAnnots, "x"),
			wantLabels:  labels(hashLabel, "h", "mine", "user"),
			wantAnnots:  labels("theirs", "user"),
			wantChanged: true,
		},
		{
			name:        "a foreign key the template now sets takes the template's value and is recorded",
			labels:      labels(hashLabel, "h", "team", "user"),
			tmplLabels:  labels("team", "platform"),
			wantLabels:  labels(hashLabel, "h", "team", "platform"),
			wantAnnots:  labels(propLabels, "team"),
			wantChanged: true,
		},
		{
			name:        "a recorded key already gone from the object: only the record is rewritten",
			labels:      labels(hashLabel, "h", "a", "1"),
			annotations: labels(propLabels, "a,b"),
			tmplLabels:  labels("a", "1"),
			wantLabels:  labels(hashLabel, "h", "a", "1"),
			wantAnnots:  labels(propLabels, "a"),
			wantChanged: true,
		},
		{
			name:        "empty entries in a record are ignored",
			labels:      labels(hashLabel, "h", "a", "1", "", "x"),
			annotations: labels(propLabels, ",a,,"),
			wantLabels:  labels(hashLabel, "h", "", "x"),
			wantChanged: true,
		},
		{
			name:        "labels and annotations are tracked apart: an annotation record does not prune labels",
			labels:      labels(hashLabel, "h", "k", "label"),
			annotations: labels("k", "annotation", propAnnots, "k"),
			wantLabels:  labels(hashLabel, "h", "k", "label"),
			wantChanged: true,
		},
		{
			name:        "a recorded key set again by the template is kept",
			labels:      labels(hashLabel, "h", "a", "1"),
			annotations: labels(propLabels, "a"),
			tmplLabels:  labels("a", "1", "b", "2"),
			wantLabels:  labels(hashLabel, "h", "a", "1", "b", "2"),
			wantAnnots:  labels(propLabels, "a,b"),
			wantChanged: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runPropagate(t, tc) })
	}
}

// TestPropagateMetadataTemplateSetsHashLabel: validation lets a pod template carry the hash label
// key; the hash must still win, and the result must be stable.
func TestPropagateMetadataTemplateSetsHashLabel(t *testing.T) {
	runPropagate(t, propagateCase{
		tmplLabels:  labels(hashLabel, "forged"),
		wantLabels:  labels(hashLabel, "h"),
		wantAnnots:  labels(propLabels, hashLabel),
		wantChanged: true,
	})
}

// TestPropagateMetadataTemplateForgesUIDLabel: a pod template that sets the UID label of another
// Sandbox, or an existing pod carrying one, cannot put the pod behind that Sandbox's Service: the
// Sandbox's own UID wins.
func TestPropagateMetadataTemplateForgesUIDLabel(t *testing.T) {
	uidLabel := agentsv1beta1.SandboxUIDLabel
	runPropagate(t, propagateCase{
		labels:      labels(uidLabel, "victim-uid"),
		tmplLabels:  labels(uidLabel, "victim-uid", hashLabel, "forged"),
		identity:    labels(uidLabel, "own-uid", hashLabel, "h"),
		wantLabels:  labels(uidLabel, "own-uid", hashLabel, "h"),
		wantAnnots:  labels(propLabels, hashLabel+","+uidLabel),
		wantChanged: true,
	})
}
