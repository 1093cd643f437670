// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"testing"
	"time"
)

func TestWithPodMetadata(t *testing.T) {
	settings := claimSettings{}
	WithPodMetadata(map[string]string{"team": "a"}, map[string]string{"note": "x"})(&settings)
	claim := newClaim(FromTemplate("python"), settings, time.Now())
	pod := claim.Spec.AdditionalPodMetadata
	if pod.Labels["team"] != "a" || pod.Annotations["note"] != "x" || len(pod.Labels) != 1 || len(pod.Annotations) != 1 {
		t.Errorf("additionalPodMetadata %+v", pod)
	}
}
