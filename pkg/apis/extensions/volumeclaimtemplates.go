// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package extensions

// MergeVolumeClaimTemplates is the list of volume claim templates of a sandbox made for a claim:
// the template's, then the claim's. With overrides (the template's volumeClaimTemplatesPolicy is
// Overrides) a claim's entry replaces the template's of the same name in place; without, such
// entries are conflicts, listed by their index in claim (merged is nil when there are any).
// Whether the claim may add any at all is the caller's question. It works on the internal and the
// versioned types alike: name reads an entry's name.
func MergeVolumeClaimTemplates[T any](template, claim []T, name func(*T) string, overrides bool) (merged []T, conflicts []int) {
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
			conflicts = append(conflicts, i)
		}
	}
	if len(conflicts) > 0 {
		return nil, conflicts
	}
	return merged, nil
}
