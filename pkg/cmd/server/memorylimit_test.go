// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"math"
	"testing"
)

func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		limit   string
		want    int64
		wantErr bool
	}{
		{limit: "512Mi", want: 512 << 20},
		{limit: "1G", want: 1e9},
		{limit: "0", want: math.MaxInt64},
		{limit: "32Mi", wantErr: true},
		{limit: "-1Gi", wantErr: true},
		{limit: "lots", wantErr: true},
	} {
		t.Run(tc.limit, func(t *testing.T) {
			o := &MemoryOptions{Limit: tc.limit}
			got, err := o.bytes()
			if (err != nil) != tc.wantErr {
				t.Fatalf("--memory-limit=%s: error %v, want error %v", tc.limit, err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("--memory-limit=%s: %d bytes, want %d", tc.limit, got, tc.want)
			}
			if errs := o.Validate(); (len(errs) > 0) != tc.wantErr {
				t.Errorf("Validate() = %v, want error %v", errs, tc.wantErr)
			}
		})
	}
	t.Run("auto defers to GOMEMLIMIT", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "300MiB")
		if got, err := NewMemoryOptions().bytes(); err != nil || got != -1 {
			t.Errorf("auto with GOMEMLIMIT set: %d, %v; want -1 (the runtime's own)", got, err)
		}
	})
}
