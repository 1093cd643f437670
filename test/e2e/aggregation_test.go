// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"strings"
	"testing"
)

// TestExplainIsTheFirstCommand runs kubectl explain right after hack/local-up.sh start returned,
// before any other command of the run (this file sorts first, so its tests run first): start
// must return only once kube-apiserver serves the aggregated OpenAPI, v3 and v2, of every kind.
// Then an apply with strict validation, which reads the same schemas.
func TestExplainIsTheFirstCommand(t *testing.T) {
	if planeStartedHere {
		t.Log("the control plane was started by this run: these are its first commands")
	} else {
		t.Log("reusing a running control plane: explain is checked, the start-up race is not")
	}
	cases := []struct {
		args []string
		want string
	}{
		// OpenAPI v3, the preferred version of each group.
		{[]string{"explain", "sandboxclaim.spec.warmPoolRef"}, "FIELD: warmPoolRef"},
		{[]string{"explain", "sandbox.spec.podTemplate.metadata"}, "FIELD: metadata"},
		// Another version, then OpenAPI v2.
		{[]string{"explain", "sandboxwarmpools.spec", "--api-version=extensions.agents.x-k8s.io/v1alpha1"}, "extensions.agents.x-k8s.io"},
		{[]string{"explain", "sandboxtemplates.spec", "--output=plaintext-openapiv2"}, "RESOURCE: spec"},
	}
	for _, tc := range cases {
		out, stderr, err := kubectlErr(t, tc.args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(tc.args, " "), err, stderr)
		}
		expectContains(t, "kubectl "+strings.Join(tc.args, " "), out, tc.want)
	}

	ns := newNamespace(t)
	manifest := `apiVersion: extensions.agents.x-k8s.io/v1beta1
kind: SandboxTemplate
metadata:
  name: strict
spec:
  podTemplate:
    spec:
      containers:
      - name: main
        image: busybox
`
	if _, stderr, err := kubectlWith(t, kubectlOptions{stdin: manifest}, "apply", "--validate=strict", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply --validate=strict: %v\n%s", err, stderr)
	}
	// Strict validation refuses an unknown field by name.
	_, stderr, err := kubectlWith(t, kubectlOptions{stdin: strings.Replace(manifest, "  podTemplate:", "  podTempalte: {}\n  podTemplate:", 1)},
		"apply", "--validate=strict", "-n", ns, "-f", "-")
	expectFailure(t, "apply --validate=strict with a misspelled field", stderr, err, "podTempalte")
}
