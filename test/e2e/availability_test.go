// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// localUpT runs hack/local-up.sh COMMAND for a test, with its output in the test log, and returns
// that output.
func localUpT(t *testing.T, timeout time.Duration, command string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, localUp, command)
	cmd.Dir = repoRoot
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("$ hack/local-up.sh %s  (%s)\n%s", command, time.Since(start).Round(time.Millisecond), indent(string(out)))
	if err != nil {
		t.Fatalf("hack/local-up.sh %s: %v", command, err)
	}
	return string(out)
}

// TestAvailability stops sandbox-apiserver behind the aggregator: requests for its resources
// fail fast with 503 while the rest of the cluster keeps working, and once it is back every
// object is still there.
//
// It is not parallel, so it never overlaps the parallel tests of the package (they run after
// every sequential test has finished), and a cleanup starts the server again even when the test
// fails half-way.
func TestAvailability(t *testing.T) {
	if !componentsRunning()["sandbox-apiserver"] {
		t.Skip("sandbox-apiserver is not run by hack/local-up.sh in this checkout; cannot stop and start it")
	}
	ns := newNamespace(t)
	applyYAML(t, ns, fourKinds)
	// The objects of fourKinds (controllers may add more, which may change over the outage).
	objects := []string{"sandbox/x", "sandboxclaim/c", "sandboxtemplate/t", "sandboxwarmpool/p"}
	const uidsExpr = `{range .items[*]}{.kind}/{.metadata.name}={.metadata.uid}{"\n"}{end}`
	before := jsonpath(t, ns, uidsExpr, objects...)
	if n := len(names(before)); n != len(objects) {
		t.Fatalf("want %d objects before the outage, got %d:\n%s", len(objects), n, before)
	}

	stopped := true
	t.Cleanup(func() {
		if stopped {
			localUpT(t, 5*time.Minute, "start-sandbox-apiserver")
			waitSandboxesServed(t, ns)
		}
	})
	localUpT(t, 2*time.Minute, "stop-sandbox-apiserver")

	for _, resource := range []string{"sandboxes", "sandboxwarmpools"} {
		start := time.Now()
		_, stderr, err := kubectlErr(t, "get", resource, "-n", ns, "--request-timeout=20s")
		elapsed := time.Since(start)
		if err == nil {
			t.Errorf("kubectl get %s succeeded with sandbox-apiserver stopped", resource)
		} else if !strings.Contains(stderr, "ServiceUnavailable") && !strings.Contains(stderr, "the server is currently unable to handle the request") {
			t.Errorf("kubectl get %s with sandbox-apiserver stopped: stderr does not say the service is unavailable:\n%s", resource, indent(stderr))
		}
		if elapsed >= 20*time.Second {
			t.Errorf("kubectl get %s took %s to fail, not within its 20s request timeout", resource, elapsed)
		}
	}

	// The rest of the cluster does not depend on the aggregated API.
	expectContains(t, "kubectl get namespaces during the outage", kubectl(t, "get", "namespaces", "--request-timeout=20s"), ns)
	// Raw, because a table of pods is empty (and says so only on stderr) when no pod exists yet.
	expectContains(t, "kubectl get --raw /api/v1/pods during the outage",
		kubectl(t, "get", "--raw", "/api/v1/pods?limit=1", "--request-timeout=20s"), `"kind":"PodList"`)

	stopped = false
	localUpT(t, 5*time.Minute, "start-sandbox-apiserver")
	waitSandboxesServed(t, ns)

	after := jsonpath(t, ns, uidsExpr, objects...)
	if before != after {
		t.Errorf("objects changed over the restart:\nbefore:\n%s\nafter:\n%s", indent(before), indent(after))
	}
	expectNames(t, "kubectl api-resources --categories=agents after the restart",
		kubectl(t, "api-resources", "--categories=agents", "-o", "name"),
		"sandboxes.agents.x-k8s.io", "sandboxclaims.extensions.agents.x-k8s.io",
		"sandboxtemplates.extensions.agents.x-k8s.io", "sandboxwarmpools.extensions.agents.x-k8s.io")
}

// waitSandboxesServed polls until discovery lists the sandbox APIs again and kubectl get
// sandboxes works in ns.
func waitSandboxesServed(t *testing.T, ns string) {
	t.Helper()
	eventually(t, 2*time.Minute, "the sandbox APIs to be served again", func() (bool, string) {
		if ready, state := sandboxAPIsReady(kubectlOptions{}); !ready {
			return false, state
		}
		_, stderr, err := kubectlErr(t, "get", "sandboxes", "-n", ns, "--request-timeout=10s")
		return err == nil, stderr
	})
}
