// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestMetricsWithoutControllers: a server that does not run the controllers (as a replica that
// does not hold the lease) still reports agent_sandboxes from its own storage, running and
// suspended ones apart, and its build.
// Not parallel: the process has one metrics registry, reporting the newest server's storage.
func TestMetricsWithoutControllers(t *testing.T) {
	s := startServer(t)
	ctx := testContext(t)
	const ns = "metrics-replica"
	createSandbox(t, ctx, s, ns, "one")
	createSandbox(t, ctx, s, ns, "two")
	// Suspended by spec.replicas alone: the label is the operatingMode the server derived.
	paused := newSandbox(ns, "paused")
	paused.Spec.Replicas = new(int32(0))
	if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, paused, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	series := `agent_sandboxes{expired="false",launch_type="cold",namespace="` + ns + `",operating_mode="%s",owned_by="None",ready_condition="false",sandbox_template="unknown"} %d`
	want := []string{fmt.Sprintf(series, "Running", 2), fmt.Sprintf(series, "Suspended", 1)}
	var raw string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		out, err := s.Client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return false, err
		}
		raw = string(out)
		return strings.Contains(raw, want[0]) && strings.Contains(raw, want[1]), nil
	})
	if err != nil {
		t.Fatalf("/metrics never had %q: %v\n%s", want, err, grepLines(raw, "agent_sandbox"))
	}
	var buildInfo string
	for _, line := range strings.Split(raw, "\n") {
		if strings.HasPrefix(line, "agent_sandbox_build_info{") {
			buildInfo = line
		}
	}
	for _, label := range []string{"git_version=", "git_commit=", "build_date=", "go_version=", "compiler=", "platform="} {
		if !strings.Contains(buildInfo, label) {
			t.Errorf("agent_sandbox_build_info %q lacks %s", buildInfo, label)
		}
	}
	if !strings.HasSuffix(buildInfo, "} 1") {
		t.Errorf("agent_sandbox_build_info = %q, want the value 1", buildInfo)
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
