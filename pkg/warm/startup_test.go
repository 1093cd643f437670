// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package warm

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
)

func TestClientRequestedAt(t *testing.T) {
	now := time.Date(2026, 11, 26, 17, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		stamp  *string
		want   time.Time
		wantOK bool
	}{
		{"no stamp: written by hand", nil, time.Time{}, false},
		{"the Go SDK's RFC 3339 with nanoseconds", new("2026-11-26T16:59:59.250000001Z"), time.Date(2026, 11, 26, 16, 59, 59, 250000001, time.UTC), true},
		{"whole seconds with an offset", new("2026-11-26T17:59:58+01:00"), time.Date(2026, 11, 26, 16, 59, 58, 0, time.UTC), true},
		{"unparseable", new("yesterday"), time.Time{}, false},
		{"in the future: a skewed clock", new("2026-11-26T17:00:01Z"), time.Time{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			claim := &extensionsv1beta1.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
			if tc.stamp != nil {
				claim.Annotations = map[string]string{agentsv1beta1.ClientRequestedAtAnnotation: *tc.stamp}
			}
			got, ok := clientRequestedAt(claim, now)
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Fatalf("clientRequestedAt = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
