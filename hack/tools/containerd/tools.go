//go:build tools

// Package tools pins containerd, its runc shim and ctr for the local plane's real node
// (hack/build-node-tools.sh builds them), in a module of its own so that containerd's
// dependencies never move the control plane's pins in hack/tools.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
