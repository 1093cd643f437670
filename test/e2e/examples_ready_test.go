// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// notReadyMark starts the line by which an example file says that its objects are not meant to
// become Ready, and why; hack/run-examples.sh reads the same line.
const notReadyMark = "# Not Ready on purpose: "

// examplesReadyTimeout bounds how long the examples may take to become Ready on the local plane
// (hack/run-examples.sh waits as long).
const examplesReadyTimeout = 3 * time.Minute

// notReadyOnPurpose returns, by example file name, why its objects are not meant to be Ready.
func notReadyOnPurpose(t *testing.T, examples []example) map[string]string {
	t.Helper()
	res := map[string]string{}
	for _, e := range examples {
		data, err := os.ReadFile(filepath.Join(examplesDir, e.file))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if reason, ok := strings.CutPrefix(line, notReadyMark); ok {
				res[e.file] = reason
				break
			}
		}
	}
	return res
}

// expectExamplesReady checks, in a namespace the examples were applied to, what `make run`
// promises: within a bounded wait every Sandbox and SandboxClaim meant to work is Ready, every
// warm pool has all its replicas Ready, and every PersistentVolumeClaim (the volume claim
// templates') is Bound. The examples marked as not Ready on purpose are not Ready.
func expectExamplesReady(t *testing.T, ns string, examples []example) {
	t.Helper()
	notReady := notReadyOnPurpose(t, examples)
	var ready, pools, refused []string
	for _, e := range examples {
		switch {
		case notReady[e.file] != "" && (e.kind == "Sandbox" || e.kind == "SandboxClaim"):
			refused = append(refused, e.ref())
		case notReady[e.file] != "":
		case e.kind == "Sandbox" || e.kind == "SandboxClaim":
			ready = append(ready, e.ref())
		case e.kind == "SandboxWarmPool":
			pools = append(pools, e.ref())
		}
	}
	if len(ready) == 0 {
		t.Fatal("no example is meant to become Ready")
	}

	start := time.Now()
	args := append([]string{"wait", "-n", ns, "--for=condition=Ready", "--timeout=" + examplesReadyTimeout.String()}, ready...)
	if _, stderr, err := kubectlErr(t, args...); err != nil {
		out, _, _ := kubectlErr(t, "get", "agents,pods,pvc", "-n", ns, "-o", "wide")
		t.Fatalf("examples not Ready within %s: %v\n%s\n%s", examplesReadyTimeout, err, indent(stderr), indent(out))
	}
	for _, ref := range pools {
		eventually(t, examplesReadyTimeout-time.Since(start), ref+" with all replicas Ready", func() (bool, string) {
			got := jsonpath(t, ns, "{.spec.replicas}/{.status.readyReplicas}", ref)
			want, readyReplicas, _ := strings.Cut(got, "/")
			return want == readyReplicas, got + " (replicas/readyReplicas)"
		})
	}
	pvcs := jsonpath(t, ns, `{range .items[*]}{.metadata.name}={.status.phase}{"\n"}{end}`, "persistentvolumeclaims")
	if strings.TrimSpace(pvcs) == "" {
		t.Error("the examples' volume claim templates made no PersistentVolumeClaim")
	}
	for line := range strings.SplitSeq(strings.TrimSpace(pvcs), "\n") {
		if !strings.HasSuffix(line, "=Bound") {
			t.Errorf("PersistentVolumeClaim %s, want Bound", line)
		}
	}
	t.Logf("examples Ready %.1fs after they were applied (%d sandboxes and claims, %d pools)",
		time.Since(start).Seconds(), len(ready), len(pools))

	for _, ref := range refused {
		if got := jsonpath(t, ns, `{.status.conditions[?(@.type=="Ready")].status}`, ref); got == "True" {
			t.Errorf("%s is Ready, but its example file says it is not meant to be", ref)
		}
	}
}
