//go:build tools

// Package tools pins the upstream binaries the local control plane runs
// (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd and
// kwok). hack/build-tools.sh builds them from this module; nothing imports it.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
