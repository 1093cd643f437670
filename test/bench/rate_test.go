// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RateResult is the content of _output/bench/rates.json.
type RateResult struct {
	Machine Machine `json:"machine"`
	// Sweep is one run per steady rate, each lasting SecondsPerRate, against a pool of as many
	// members as it has claims.
	Sweep          []WarmRun `json:"sweep"`
	SecondsPerRate float64   `json:"secondsPerRate"`
	// BestRatePerS is the highest rate of the sweep whose watcher p99 stayed within 250 ms.
	BestRatePerS float64 `json:"bestRateWithinWatcherP99Of250msPerSecond"`
	// Burst is every claim at once against a pool of as many.
	Burst WarmRun `json:"burst"`
	// Profiles are CPU profiles of both API servers taken during the burst, and the top of each.
	Profiles []CPUProfile `json:"burstCPUProfiles"`
	Note     string       `json:"note"`
}

// CPUProfile is one server's CPU profile, kept beside the JSON.
type CPUProfile struct {
	Server  string `json:"server"`
	File    string `json:"file"`
	TopFile string `json:"topFile,omitempty"`
	Error   string `json:"error,omitempty"`
}

// watcherP99Target is the claim latency, as a watching client sees it, a rate must keep.
const watcherP99Target = 250.0

// BenchmarkWarmClaimRates finds the claim rate the plane sustains: a sweep of steady rates
// (SANDBOX_BENCH_CLAIM_RATES, per second, default 75,150,300,600,1000), each for
// SANDBOX_BENCH_RATE_SECONDS (default 3) against a pool large enough, then a burst of
// SANDBOX_BENCH_BURST claims (default 3,000) at once from a pool of as many, with a CPU profile of
// kube-apiserver and sandbox-apiserver while it runs.
func BenchmarkWarmClaimRates(b *testing.B) {
	c := connect(b)
	rates := envFloats(b, "SANDBOX_BENCH_CLAIM_RATES", []float64{75, 150, 300, 600, 1000})
	seconds := envFloats(b, "SANDBOX_BENCH_RATE_SECONDS", []float64{3})[0]
	burst := int(envFloats(b, "SANDBOX_BENCH_BURST", []float64{3000})[0])
	// Enough clients that none of the rates waits for a free one while the server keeps up.
	const clients = 128
	res := RateResult{Machine: machine(), SecondsPerRate: seconds,
		Note: "local control plane (kube-apiserver, etcd, kwok) and sandbox-apiserver on one machine; a claim's latency " +
			"counts from when it was due at the steady rate, so time waiting for a client counts too"}

	for _, rate := range rates {
		claims := int(rate * seconds)
		run := c.warmRun(b, warmSpec{prefix: fmt.Sprintf("rate-%.0f", rate), poolSize: claims, claims: claims, clients: clients, rate: rate})
		res.Sweep = append(res.Sweep, run)
		if run.P99Ms <= watcherP99Target && rate > res.BestRatePerS {
			res.BestRatePerS = rate
		}
	}

	profileDir := c.out
	res.Burst = c.warmRun(b, warmSpec{prefix: "burst", poolSize: burst, claims: burst, clients: clients,
		during: func(ctx context.Context) func() {
			wait := c.profileServers(ctx, b, profileDir, "burst")
			return func() { res.Profiles = wait() }
		}})

	fmt.Printf("\nWarm claim rates on %s (%d CPUs), %g s per rate, %d clients\n", res.Machine.CPUModel, res.Machine.NumCPU, seconds, clients)
	fmt.Printf("%-10s %7s %10s %10s %12s %12s %12s %12s\n", "rate/s", "claims", "created/s", "Ready/s", "creator p50", "creator p99", "watch p50", "watch p99")
	for _, r := range append(res.Sweep, res.Burst) {
		name := fmt.Sprintf("%.0f", r.RatePerS)
		if r.RatePerS == 0 {
			name = "burst"
		}
		fmt.Printf("%-10s %7d %10.0f %10.0f %10.1fms %10.1fms %10.1fms %10.1fms\n", name, r.Claims, r.CreatedPerS, r.ReadyPerS,
			r.CreatorP50Ms, r.CreatorP99Ms, r.P50Ms, r.P99Ms)
	}
	fmt.Printf("highest rate with watcher p99 <= %.0f ms: %.0f/s; burst of %d all Ready (watch) in %.0f ms\n",
		watcherP99Target, res.BestRatePerS, burst, res.Burst.AllReadyMs)
	for _, p := range res.Profiles {
		if p.Error != "" {
			fmt.Printf("%s CPU profile: %s\n", p.Server, p.Error)
			continue
		}
		fmt.Printf("%s CPU profile: %s (top: %s)\n", p.Server, p.File, p.TopFile)
	}
	if err := writeJSON(c.outFile("rates.json"), res); err != nil {
		b.Fatal(err)
	}
}

// profileServers starts a CPU profile of kube-apiserver and of sandbox-apiserver, and returns a
// func that waits for both, having written them and the top of each to dir. The profiles last
// SANDBOX_BENCH_PROFILE_SECONDS (default 8), which should cover the run they are taken in.
func (c *cluster) profileServers(ctx context.Context, b *testing.B, dir, name string) func() []CPUProfile {
	seconds := strconv.Itoa(int(envFloats(b, "SANDBOX_BENCH_PROFILE_SECONDS", []float64{8})[0]))
	servers := []struct {
		server string
		get    func(ctx context.Context) ([]byte, error)
	}{
		{"kube-apiserver", func(ctx context.Context) ([]byte, error) {
			return c.kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", seconds).Timeout(time.Minute).DoRaw(ctx)
		}},
		{"sandbox-apiserver", func(ctx context.Context) ([]byte, error) {
			return c.ourGet(ctx, "/debug/pprof/profile?seconds="+seconds)
		}},
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	profiles := make([]CPUProfile, len(servers))
	for i, s := range servers {
		wg.Go(func() {
			p := CPUProfile{Server: s.server, File: filepath.Join(dir, name+"-cpu-"+s.server+".pprof")}
			raw, err := s.get(ctx)
			if err == nil {
				err = os.WriteFile(p.File, raw, 0o644)
			}
			if err != nil {
				p.Error = fmt.Sprintf("no profile (kube-apiserver serves them when the local plane is started with PROFILING=true): %v", err)
				p.File = ""
				profiles[i] = p
				return
			}
			// The top of the profile, by cumulative time, is what the account in
			// docs/benchmarks/2026-11-27-make-bench-runs.md is read from.
			top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=40", p.File).Output()
			if err != nil {
				p.Error = fmt.Sprintf("go tool pprof: %v", err)
			} else {
				p.TopFile = strings.TrimSuffix(p.File, ".pprof") + "-top.txt"
				if err := os.WriteFile(p.TopFile, top, 0o644); err != nil {
					p.Error = err.Error()
				}
			}
			profiles[i] = p
		})
	}
	return func() []CPUProfile {
		wg.Wait()
		return profiles
	}
}

// envFloats reads a comma-separated list of numbers from the environment, or returns def.
func envFloats(b *testing.B, name string, def []float64) []float64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []float64
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want positive numbers separated by commas", name, v)
		}
		out = append(out, n)
	}
	return out
}
