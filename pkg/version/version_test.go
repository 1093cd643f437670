// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	rev := "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name  string
		start Info
		bi    debug.BuildInfo
		want  Info
	}{
		{
			name: "released module",
			bi:   debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}},
			want: Info{GitVersion: "v1.2.3"},
		},
		{
			name: "checkout with changes",
			bi: debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-24T00:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			want: Info{GitVersion: "v0.0.0-dev+0123456789ab-dirty", GitCommit: rev, BuildDate: "2026-11-24T00:00:00Z"},
		},
		{
			name:  "link-time values win",
			start: Info{GitVersion: "v9.9.9", GitCommit: "abc", BuildDate: "today"},
			bi: debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-24T00:00:00Z"}}},
			want: Info{GitVersion: "v9.9.9", GitCommit: "abc", BuildDate: "today"},
		},
		{
			name: "nothing recorded",
			bi:   debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			want: Info{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.start
			fromBuildInfo(&got, &tc.bi)
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
