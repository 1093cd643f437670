// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package extensions

import (
	"slices"
	"testing"
)

// vct is a stand-in for a volume claim template: its name and where it came from.
type vct struct{ name, from string }

func TestMergeVolumeClaimTemplates(t *testing.T) {
	name := func(v *vct) string { return v.name }
	tmpl := []vct{{"home", "template"}, {"cache", "template"}}
	cases := []struct {
		name         string
		claim        []vct
		overrides    bool
		want         []vct
		wantConflict []int
	}{
		{"no claim templates", nil, false, tmpl, nil},
		{"Allowed: new names are appended", []vct{{"data", "claim"}}, false,
			[]vct{{"home", "template"}, {"cache", "template"}, {"data", "claim"}}, nil},
		{"Allowed: names of the template are conflicts", []vct{{"home", "claim"}, {"data", "claim"}, {"cache", "claim"}}, false, nil, []int{0, 2}},
		{"Overrides: same name replaced in place, new appended", []vct{{"data", "claim"}, {"home", "claim"}}, true,
			[]vct{{"home", "claim"}, {"cache", "template"}, {"data", "claim"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, conflict := MergeVolumeClaimTemplates(tmpl, tc.claim, name, tc.overrides)
			if !slices.Equal(conflict, tc.wantConflict) || !slices.Equal(got, tc.want) {
				t.Errorf("merged %v, conflicts %v; want %v, %v", got, conflict, tc.want, tc.wantConflict)
			}
		})
	}
	if tmpl[0].from != "template" {
		t.Errorf("the template's list was changed: %v", tmpl)
	}
}
