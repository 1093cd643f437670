// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwarmpool

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

func TestBatchSizes(t *testing.T) {
	for _, tc := range []struct {
		count int
		want  []int
	}{
		{0, nil},
		{1, []int{1}},
		{2, []int{1, 1}},
		{3, []int{1, 2}},
		{7, []int{1, 2, 4}},
		{8, []int{1, 2, 4, 1}},
		{14, []int{1, 2, 4, 7}},
		{300, []int{1, 2, 4, 8, 16, 32, 64, 128, 45}},
	} {
		if got := batchSizes(tc.count); !slices.Equal(got, tc.want) {
			t.Errorf("batchSizes(%d) = %v, want %v", tc.count, got, tc.want)
		}
	}
}

func TestSlowStart(t *testing.T) {
	for _, tc := range []struct {
		name          string
		count         int
		failAt        []int // indexes whose call fails
		wantCalls     int
		wantSuccesses int
		wantErr       bool
	}{
		{name: "all succeed", count: 14, wantCalls: 14, wantSuccesses: 14},
		{name: "none to do", count: 0},
		{name: "first call fails: nothing more is tried", count: 14, failAt: []int{0}, wantCalls: 1, wantErr: true},
		{name: "failure in the third batch stops after it", count: 14, failAt: []int{5}, wantCalls: 7, wantSuccesses: 6, wantErr: true},
		{name: "two failures in a batch", count: 14, failAt: []int{1, 2}, wantCalls: 3, wantSuccesses: 1, wantErr: true},
		{name: "failure in the last batch", count: 14, failAt: []int{13}, wantCalls: 14, wantSuccesses: 13, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var calls []int
			got, err := slowStart(tc.count, func(i int) error {
				mu.Lock()
				calls = append(calls, i)
				mu.Unlock()
				if slices.Contains(tc.failAt, i) {
					return errors.New("boom")
				}
				return nil
			})
			if len(calls) != tc.wantCalls || got != tc.wantSuccesses || (err != nil) != tc.wantErr {
				t.Fatalf("calls %d, successes %d, err %v; want %d, %d, err %v", len(calls), got, err, tc.wantCalls, tc.wantSuccesses, tc.wantErr)
			}
			slices.Sort(calls)
			for i, c := range calls {
				if c != i {
					t.Fatalf("calls %v are not the first %d indexes", calls, len(calls))
				}
			}
		})
	}
}
