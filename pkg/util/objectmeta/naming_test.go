// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package objectmeta

import "testing"

func TestNameHash(t *testing.T) {
	// Reference values of 32-bit FNV-1a (offset basis 0x811c9dc5, prime 0x01000193), computed
	// independently of hash/fnv.
	cases := map[string]string{
		"":            "811c9dc5",
		"a":           "e40c292c",
		"hello-world": "428d118e",
	}
	for in, want := range cases {
		if got := NameHash(in); got != want {
			t.Errorf("NameHash(%q) = %s, want %s", in, got, want)
		}
	}
}
