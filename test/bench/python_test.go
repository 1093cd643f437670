// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// PythonSDKResult is the content of _output/bench/python-sdk.json.
type PythonSDKResult struct {
	Machine  Machine `json:"machine"`
	Runs     int     `json:"runs"`
	PoolSize int     `json:"poolSize"`
	P50Ms    float64 `json:"warmCreateAndRunP50Ms"`
	P99Ms    float64 `json:"warmCreateAndRunP99Ms"`
	MaxMs    float64 `json:"warmCreateAndRunMaxMs"`
	LoadAvg  string  `json:"loadAverageAtStart"`
	Note     string  `json:"note"`
}

const (
	pythonSDKRuns     = 100
	pythonSDKPoolSize = 10
)

// BenchmarkPythonSDK times, with the Python SDK's sync client (clients/python), a warm
// create_sandbox from a pool plus one commands.run, 100 times one after the other, each sandbox
// deleted (untimed) before the next; kwok's pods, so the command runs on this machine.
func BenchmarkPythonSDK(b *testing.B) {
	const python = "/usr/bin/python3" // Debian's, with the packages of hack/python-deps.sh
	c := connect(b)
	root, err := repoRoot()
	if err != nil {
		b.Fatal(err)
	}
	if err := exec.Command(python, "-c", "import kubernetes, aiohttp").Run(); err != nil {
		b.Fatalf("%s lacks the Python SDK's packages (%v): run hack/python-deps.sh", python, err)
	}
	ns := c.namespace(b, "python")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c.makePool(ctx, b, ns, pythonSDKPoolSize)
	load := loadAverage()

	cmd := exec.CommandContext(ctx, python, filepath.Join(root, "clients/python/bench/warm_claim.py"),
		"--kubeconfig", filepath.Join(c.plane, "kubeconfig"), "--namespace", ns, "--pool", "pool", "--runs", strconv.Itoa(pythonSDKRuns))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "clients/python/src"), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("clients/python/bench/warm_claim.py: %v", err)
	}
	var seconds []float64
	if err := json.Unmarshal(out, &seconds); err != nil || len(seconds) != pythonSDKRuns {
		b.Fatalf("warm_claim.py printed %q (%v); want %d durations", out, err, pythonSDKRuns)
	}
	durations := make([]time.Duration, len(seconds))
	for i, s := range seconds {
		durations[i] = time.Duration(s * float64(time.Second))
	}
	r := PythonSDKResult{Machine: machine(), Runs: pythonSDKRuns, PoolSize: pythonSDKPoolSize, LoadAvg: load,
		Note: "sync SandboxClient: create_sandbox(warmpool=...) until Ready plus commands.run(\"echo ok\"), sequential; kwok pods"}
	r.P50Ms, r.P99Ms = p50p99(durations)
	r.MaxMs = ms(durations[len(durations)-1])
	fmt.Printf("\nPython SDK: warm create_sandbox + commands.run, %d runs: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", r.Runs, r.P50Ms, r.P99Ms, r.MaxMs)
	if err := writeJSON(c.outFile("python-sdk.json"), r); err != nil {
		b.Fatal(err)
	}
}
