// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
)

// adminClients returns the cluster's clientset and ours as the admin, for the tests that need
// many requests at once (kubectl is one process per request).
func adminClients(t *testing.T) (kubernetes.Interface, versioned.Interface) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return kubernetes.NewForConfigOrDie(cfg), versioned.NewForConfigOrDie(cfg)
}
