// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package adoption

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

// TestIdleTimeout: the claim's lifecycle.idleTimeout wins over the template's, which wins over
// what an adopted warm sandbox carries.
func TestIdleTimeout(t *testing.T) {
	d := func(m time.Duration) *metav1.Duration { return &metav1.Duration{Duration: m} }
	claim := func(idle *metav1.Duration) *extensionsv1beta1.SandboxClaim {
		c := &extensionsv1beta1.SandboxClaim{}
		if idle != nil {
			c.Spec.Lifecycle = &extensionsv1beta1.Lifecycle{IdleTimeout: idle}
		}
		return c
	}
	template := func(idle *metav1.Duration) *extensionsv1beta1.SandboxTemplate {
		return &extensionsv1beta1.SandboxTemplate{Spec: extensionsv1beta1.SandboxTemplateSpec{IdleTimeout: idle}}
	}
	cases := []struct {
		name     string
		claim    *extensionsv1beta1.SandboxClaim
		template *extensionsv1beta1.SandboxTemplate
		has      *metav1.Duration
		want     *metav1.Duration
	}{
		{"neither", claim(nil), template(nil), d(time.Hour), nil},
		{"template", claim(nil), template(d(time.Hour)), nil, d(time.Hour)},
		{"claim over template", claim(d(time.Minute)), template(d(time.Hour)), nil, d(time.Minute)},
		{"claim, no template at hand", claim(d(time.Minute)), nil, d(time.Hour), d(time.Minute)},
		{"no template at hand: the sandbox's own", claim(nil), nil, d(time.Hour), d(time.Hour)},
	}
	for _, tc := range cases {
		got := IdleTimeout(tc.claim, tc.template, tc.has)
		if (got == nil) != (tc.want == nil) || (got != nil && got.Duration != tc.want.Duration) {
			t.Errorf("%s: idleTimeout = %v, want %v", tc.name, got, tc.want)
		}
	}
}
