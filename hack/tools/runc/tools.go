//go:build tools

// Package tools pins runc for the local plane's real node (hack/build-node-tools.sh builds it,
// with cgo and libseccomp), in a module of its own so its pins stay apart from containerd's.
package tools

import (
	_ "github.com/opencontainers/runc"
)
