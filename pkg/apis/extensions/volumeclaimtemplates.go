// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package extensions

// MergeVolumeClaimTemplates is the list of volume claim templates of a sandbox made for a claim:
// the template's, then the claim's. With overrides (the template's volumeClaimTemplatesPolicy is
// Overrides) a claim's entry replaces the template's of the same name in place; without, such an
// entry is a conflict and conflict is its index in claim (-1 when there is none, and merged is nil
// when there is one). Whether the claim may add any at all is the caller's question. It works on
// the internal and the versioned types alike: name reads an entry's name.
func MergeVolumeClaimTemplates[T any](template, claim []T, name func(*T) string, overrides bool) (merged []T, conflict int) {
	at := make(map[string]int, len(template))
	merged = make([]T, 0, len(template)+len(claim))
	for i := range template {
		at[name(&template[i])] = i
		merged = append(merged, template[i])
	}
	for i := range claim {
		j, found := at[name(&claim[i])]
		switch {
		case !found:
			merged = append(merged, claim[i])
		case overrides:
			merged[j] = claim[i]
		default:
			return nil, i
		}
	}
	return merged, -1
}
