// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRun writes one run's JSON file, as a benchmark does.
func writeRun(t *testing.T, dir, run, file, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, run), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, run, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCompare: medians over the rounds of each side, the head's ratio to each base, lists and the
// machine left out, a figure only one side wrote kept without a ratio.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	for i, p50 := range []string{"100", "300", "200"} {
		writeRun(t, dir, "base-abc-r"+string(rune('1'+i)), "warm.json",
			`{"machine": {"numCPU": 2}, "burst": {"createToReadyP50Ms": `+p50+`, "samples": [1, 2]}}`)
	}
	for i, p50 := range []string{"50", "150"} {
		writeRun(t, dir, "head-r"+string(rune('1'+i)), "warm.json",
			`{"machine": {"numCPU": 2}, "burst": {"createToReadyP50Ms": `+p50+`, "samples": [1, 2]}, "new": {"createdPerSecond": 7}}`)
	}
	writeRun(t, dir, "not-a-run", "warm.json", `{"x": 1}`)

	c, err := compare(dir, "head")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Bases) != 1 || c.Bases[0] != "base-abc" {
		t.Fatalf("bases %v, want [base-abc]", c.Bases)
	}
	byName := map[string]Figure{}
	for _, f := range c.Figures {
		byName[f.Name] = f
	}
	if len(byName) != 2 {
		t.Fatalf("figures %v, want warm.burst.createToReadyP50Ms and warm.new.createdPerSecond", byName)
	}
	p50 := byName["warm.burst.createToReadyP50Ms"]
	if b := p50.Sides["base-abc"]; b.Median != 200 || b.Min != 100 || b.Max != 300 {
		t.Errorf("base: %+v, want median 200 in [100, 300]", b)
	}
	if h := p50.Sides["head"]; h.Median != 100 {
		t.Errorf("head median %v, want 100 (the mean of an even count's middle two)", h.Median)
	}
	if r := p50.Ratios["base-abc"]; r != 0.5 {
		t.Errorf("ratio %v, want 0.5", r)
	}
	if p50.Better != "lower" {
		t.Errorf("a latency is better %q, want lower", p50.Better)
	}
	rate := byName["warm.new.createdPerSecond"]
	if _, ok := rate.Ratios["base-abc"]; ok || rate.Better != "higher" {
		t.Errorf("a figure only the head wrote: %+v, want no ratio and better higher", rate)
	}

	var out strings.Builder
	printTable(&out, c)
	if !strings.Contains(out.String(), "200.0 [100.0-300.0]") || !strings.Contains(out.String(), "0.50") {
		t.Errorf("table does not show the base's median, its range and the ratio:\n%s", out.String())
	}
}

// TestCompareNeedsBothSides: a comparison without the head or without a base is an error.
func TestCompareNeedsBothSides(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir, "head-r1", "warm.json", `{"a": 1}`)
	if _, err := compare(dir, "head"); err == nil {
		t.Error("no base: no error")
	}
	if _, err := compare(dir, "other"); err == nil {
		t.Error("no run of the head: no error")
	}
}
