// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// NameHash and PVCName derive the names and label values the controllers share.

package objectmeta

import (
	"fmt"
	"hash/fnv"
)

// NameHash is the 8 hex digits of the 32-bit FNV-1a hash of name. It is the value of the hash
// labels (sandbox name, template ref, warm pool), short and always a valid label value.
func NameHash(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return fmt.Sprintf("%08x", h.Sum32())
}

// PVCName is the name of the PersistentVolumeClaim of volume claim template vct of a sandbox.
func PVCName(vct, sandbox string) string {
	return vct + "-" + sandbox
}
