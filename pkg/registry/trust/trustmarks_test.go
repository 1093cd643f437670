// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package trust

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

// Every agents.x-k8s.io key a client of this server or of the peer system may write or read, by
// whether a user may set it on an object's own metadata.
var domainKeys = []struct {
	key        string
	label      bool // a label; an annotation otherwise
	userMaySet bool
}{
	// What the peer's Go and Python SDKs write on every claim: informational.
	{"agents.x-k8s.io/created-by", true, true},
	{"agents.x-k8s.io/client-first-requested-at", false, true},
	// The seeds give users the pod-name annotation.
	{"agents.x-k8s.io/pod-name", false, true},
	// Marks the controllers trust or write: membership, identity, hashes, propagation lists, the
	// controllers' own timestamps, and keys not known yet.
	{"agents.x-k8s.io/warm-pool-sandbox", true, false},
	{"agents.x-k8s.io/claim-uid", true, false},
	{"agents.x-k8s.io/sandbox-name", true, false},
	{"agents.x-k8s.io/sandbox-uid", true, false},
	{"agents.x-k8s.io/sandbox-name-hash", true, false},
	{"agents.x-k8s.io/sandbox-template-ref-hash", true, false},
	{"agents.x-k8s.io/sandbox-pod-template-hash", true, false},
	{"agents.x-k8s.io/sandbox-template-ref", false, false},
	{"agents.x-k8s.io/propagated-labels", false, false},
	{"agents.x-k8s.io/propagated-annotations", false, false},
	{"agents.x-k8s.io/controller-first-observed-at", false, false},
	{"agents.x-k8s.io/claim-first-ready-at", false, false},
	{"agents.x-k8s.io/webhook-first-observed-at", false, false},
	{"agents.x-k8s.io/creation-latency-recorded", false, false},
	{"agents.x-k8s.io/adoptable", true, false},
	{"agents.x-k8s.io/some-key-added-later", true, false},
	{"sub.agents.x-k8s.io/some-key-added-later", false, false},
	// The informational keys keep their place: the other kind of mark is not theirs.
	{"agents.x-k8s.io/created-by", false, false},
	{"agents.x-k8s.io/client-first-requested-at", true, false},
}

func withKey(m *metav1.ObjectMeta, key string, label bool, value string) {
	if label {
		m.Labels = map[string]string{key: value}
	} else {
		m.Annotations = map[string]string{key: value}
	}
}

func TestUsersSetOnlyInformationalKeys(t *testing.T) {
	for _, k := range domainKeys {
		kind := "annotation"
		if k.label {
			kind = "label"
		}
		t.Run(kind+" "+k.key, func(t *testing.T) {
			for _, op := range []string{"create", "update"} {
				claim := &extensions.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
				sb := &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
					Spec: agents.SandboxSpec{PodTemplate: agents.PodTemplate{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}}}
				var oldClaim *extensions.SandboxClaim
				var oldSandbox *agents.Sandbox
				if op == "update" {
					oldClaim, oldSandbox = claim.DeepCopy(), sb.DeepCopy()
				}
				withKey(&claim.ObjectMeta, k.key, k.label, "2026-11-26T17:00:00.123456789Z")
				withKey(&sb.ObjectMeta, k.key, k.label, "go-client")
				claimErrs, sandboxErrs := ClaimMarks(claim, oldClaim), SandboxMarks(sb, oldSandbox)
				if got := len(claimErrs) == 0; got != k.userMaySet {
					t.Errorf("%s of a claim: accepted=%v, want %v (%v)", op, got, k.userMaySet, claimErrs)
				}
				if got := len(sandboxErrs) == 0; got != k.userMaySet {
					t.Errorf("%s of a sandbox: accepted=%v, want %v (%v)", op, got, k.userMaySet, sandboxErrs)
				}
				if !k.userMaySet && len(claimErrs) > 0 {
					want := "metadata." + map[bool]string{true: "labels", false: "annotations"}[k.label] + "[" + k.key + "]"
					if claimErrs[0].Field != want {
						t.Errorf("refusal names %q, want %q", claimErrs[0].Field, want)
					}
				}
			}
		})
	}
}

// The peer's informational keys are for an object's own metadata: the pod a Sandbox makes keeps
// only the pod-name annotation of the domain.
func TestPodTemplateTakesNoInformationalKeys(t *testing.T) {
	sb := &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}}
	sb.Spec.PodTemplate.ObjectMeta.Labels = map[string]string{"agents.x-k8s.io/created-by": "go-client"}
	sb.Spec.PodTemplate.ObjectMeta.Annotations = map[string]string{
		"agents.x-k8s.io/client-first-requested-at": "2026-11-26T17:00:00Z",
		"agents.x-k8s.io/pod-name":                  "p",
	}
	errs := SandboxMarks(sb, nil)
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	want := []string{
		"spec.podTemplate.metadata.labels[agents.x-k8s.io/created-by]",
		"spec.podTemplate.metadata.annotations[agents.x-k8s.io/client-first-requested-at]",
	}
	if len(fields) != len(want) || fields[0] != want[0] || fields[1] != want[1] {
		t.Fatalf("refused %v, want %v", fields, want)
	}
}
