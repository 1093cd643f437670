// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package e2e holds the end-to-end tests: they run against the local control plane of
// hack/local-up.sh (real kube-apiserver, etcd, controller-manager, scheduler and kwok, with
// sandbox-apiserver behind the aggregator) and drive it with the real kubectl binary from
// _output/tools/bin, as a user would type it.
//
// Run them with `make test-e2e`. TestMain reuses a running local control plane and otherwise
// starts one for the run and stops it afterwards. Every test works in namespaces of its own
// (newNamespace), so tests are independent of each other and of objects others keep in the
// cluster. The helpers in framework_test.go (kubectl, kubectlErr, kubectlAs, applyYAML,
// eventually, startWatch) and users_test.go (newUser) are meant for every test of the package.
package e2e
