// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwarmpool

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestExpectations(t *testing.T) {
	const key = "ns/pool"
	for _, tc := range []struct {
		name     string
		do       func(e *expectations, clk *clocktesting.FakePassiveClock)
		wantOK   bool
		wantWait time.Duration
	}{
		{name: "nothing recorded", do: func(*expectations, *clocktesting.FakePassiveClock) {}, wantOK: true},
		{name: "creates pending", do: func(e *expectations, _ *clocktesting.FakePassiveClock) {
			e.expect(key, 2, nil)
			e.created(key)
		}, wantWait: ExpectationsTimeout},
		{name: "creates observed", do: func(e *expectations, _ *clocktesting.FakePassiveClock) {
			e.expect(key, 2, nil)
			e.created(key)
			e.created(key)
		}, wantOK: true},
		{name: "more creates observed than expected", do: func(e *expectations, _ *clocktesting.FakePassiveClock) {
			e.expect(key, 1, nil)
			e.created(key)
			e.created(key)
		}, wantOK: true},
		{name: "a delete observed twice counts once", do: func(e *expectations, _ *clocktesting.FakePassiveClock) {
			e.expect(key, 0, []types.UID{"a", "b"})
			e.deleted(key, "a")
			e.deleted(key, "a")
		}, wantWait: ExpectationsTimeout},
		{name: "deletes observed", do: func(e *expectations, _ *clocktesting.FakePassiveClock) {
			e.expect(key, 0, []types.UID{"a", "b"})
			e.deleted(key, "b")
			e.deleted(key, "a")
		}, wantOK: true},
		{name: "another pool's events do not count", do: func(e *expectations, _ *clocktesting.FakePassiveClock) {
			e.expect(key, 1, []types.UID{"a"})
			e.created("ns/other")
			e.deleted("ns/other", "a")
		}, wantWait: ExpectationsTimeout},
		{name: "waiting, part of the timeout gone", do: func(e *expectations, clk *clocktesting.FakePassiveClock) {
			e.expect(key, 1, nil)
			clk.SetTime(clk.Now().Add(time.Minute))
		}, wantWait: ExpectationsTimeout - time.Minute},
		{name: "expired", do: func(e *expectations, clk *clocktesting.FakePassiveClock) {
			e.expect(key, 1, nil)
			clk.SetTime(clk.Now().Add(ExpectationsTimeout))
		}, wantOK: true},
		{name: "forgotten", do: func(e *expectations, _ *clocktesting.FakePassiveClock) {
			e.expect(key, 1, nil)
			e.forget(key)
		}, wantOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			e := newExpectations(clk)
			tc.do(e, clk)
			ok, wait := e.satisfied(key)
			if ok != tc.wantOK || wait != tc.wantWait {
				t.Errorf("satisfied = %v, %v; want %v, %v", ok, wait, tc.wantOK, tc.wantWait)
			}
		})
	}
}
