// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxclaim

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

func sizes(vcts []agentsv1beta1.PersistentVolumeClaimTemplate) []string {
	var out []string
	for _, v := range vcts {
		q := v.Spec.Resources.Requests[corev1.ResourceStorage]
		out = append(out, v.Name+"="+q.String())
	}
	return out
}

// TestCreateWithVolumeClaimTemplates: a claim's own volume claim templates make a cold sandbox,
// even with a Ready member waiting, with the template's list merged as its policy says; a template
// whose policy changed since the claim was admitted is reported on the claim.
func TestCreateWithVolumeClaimTemplates(t *testing.T) {
	home := pvcTemplate("home", "1Gi")
	clone := pvcTemplate("clone", "2Gi")
	clone.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "dataset"}
	opensDataSource := func(t *extensionsv1beta1.SandboxTemplate) {
		volumePolicy(extensionsv1beta1.VolumeClaimTemplatesPolicyAllowed, home)(t)
		t.Spec.ClaimVolumeClaimTemplates = &extensionsv1beta1.ClaimVolumeClaimTemplates{AllowedFields: []string{"dataSource"}}
	}
	cases := []struct {
		name      string
		template  func(*extensionsv1beta1.SandboxTemplate)
		claim     []agentsv1beta1.PersistentVolumeClaimTemplate
		wantSizes []string
		wantMsg   string
	}{
		{"Allowed adds a new name", volumePolicy(extensionsv1beta1.VolumeClaimTemplatesPolicyAllowed, home),
			[]agentsv1beta1.PersistentVolumeClaimTemplate{pvcTemplate("scratch", "2Gi")}, []string{"home=1Gi", "scratch=2Gi"}, ""},
		{"Overrides replaces the template's of the same name", volumePolicy(extensionsv1beta1.VolumeClaimTemplatesPolicyOverrides, home),
			[]agentsv1beta1.PersistentVolumeClaimTemplate{pvcTemplate("home", "5Gi"), pvcTemplate("scratch", "2Gi")}, []string{"home=5Gi", "scratch=2Gi"}, ""},
		{"Allowed refuses a name of the template", volumePolicy(extensionsv1beta1.VolumeClaimTemplatesPolicyAllowed, home),
			[]agentsv1beta1.PersistentVolumeClaimTemplate{pvcTemplate("home", "5Gi")}, nil,
			`spec.volumeClaimTemplates[0]: SandboxTemplate python has a volume claim template "home" and volumeClaimTemplatesPolicy Allowed`},
		{"Disallowed (set after the claim was admitted)", volumePolicy(extensionsv1beta1.VolumeClaimTemplatesPolicyDisallowed, home),
			[]agentsv1beta1.PersistentVolumeClaimTemplate{pvcTemplate("scratch", "2Gi")}, nil,
			`spec.volumeClaimTemplates: SandboxTemplate python has volumeClaimTemplatesPolicy "Disallowed"`},
		{"a data source the template opens", opensDataSource,
			[]agentsv1beta1.PersistentVolumeClaimTemplate{clone}, []string{"home=1Gi", "clone=2Gi"}, ""},
		{"a data source the template does not open (closed after the claim was admitted)", volumePolicy(extensionsv1beta1.VolumeClaimTemplatesPolicyAllowed, home),
			[]agentsv1beta1.PersistentVolumeClaimTemplate{clone}, nil, "spec.volumeClaimTemplates[0].spec.dataSource: Forbidden*"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, newClaim(withVolumes(tc.claim...)), newTemplate(tc.template))
			m := warmMember("m1", testPool)
			f.add(m)
			f.warm(m)
			if err := f.sync(testClaim); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if updated := f.updatedSandboxes(); len(updated) != 0 {
				t.Fatalf("adopted %s; a claim with volume claim templates is never served warm", updated[0].Name)
			}
			if f.chooser.Queue().Len(testBucket) != 1 {
				t.Errorf("the waiting member left the queue")
			}
			created := f.createdSandboxes()
			if tc.wantMsg != "" {
				if len(created) != 0 {
					t.Fatalf("created %s, want none", created[0].Name)
				}
				checkReady(t, f.lastStatus(), metav1.ConditionFalse, extensionsv1beta1.ClaimReasonReconcilerError, tc.wantMsg)
				return
			}
			if len(created) != 1 || created[0].Name != testClaim {
				t.Fatalf("writes %q, want one cold sandbox %s", f.writes(), testClaim)
			}
			if got := sizes(created[0].Spec.VolumeClaimTemplates); !slices.Equal(got, tc.wantSizes) {
				t.Errorf("sandbox volume claim templates %q, want %q", got, tc.wantSizes)
			}
			cached, err := f.c.templates.SandboxTemplates(testNS).Get(testTemplate)
			f.must(err)
			if got := sizes(cached.Spec.VolumeClaimTemplates); !slices.Equal(got, []string{"home=1Gi"}) {
				t.Errorf("the cached template changed: %q", got)
			}
		})
	}
}
