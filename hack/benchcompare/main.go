// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Command benchcompare summarizes the runs of hack/bench-compare.sh: for every figure the
// benchmarks wrote, the median of each side over its rounds, their spread, and each base's
// median against the head's as a ratio.
//
// The runs are directories of DIR named SIDE-rN (round N of SIDE), each holding the JSON files
// the benchmarks wrote (warm.json, apipath.json, churn.json, ...). Every number in them is a
// figure, named by its file and its path in the JSON (warm.burst.createToReadyP50Ms); lists (a
// run's samples) are left out, and so is the machine's description.
//
//	go run ./hack/benchcompare -dir _output/bench/compare/STAMP -head head
//
// It prints one table and writes DIR/compare.json and DIR/compare.txt.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// runDir is how hack/bench-compare.sh names a run's directory: SIDE-rROUND.
var runDir = regexp.MustCompile(`^(.+)-r([0-9]+)$`)

// Figure is one figure across the sides.
type Figure struct {
	Name  string           `json:"name"`
	Sides map[string]Stats `json:"sides"`
	// Ratios is the head's median divided by each base's: below 1, the head's figure is smaller.
	// Whether smaller is better depends on the figure (Better says, where the name tells).
	Ratios map[string]float64 `json:"headOverBase"`
	Better string             `json:"better,omitempty"`
}

// Stats are one side's values of a figure over its rounds.
type Stats struct {
	Runs   []float64 `json:"runs"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
}

// Comparison is the content of compare.json.
type Comparison struct {
	Head    string   `json:"head"`
	Bases   []string `json:"bases"`
	Figures []Figure `json:"figures"`
}

func main() {
	dir := flag.String("dir", "", "the directory of the runs (SIDE-rN subdirectories)")
	head := flag.String("head", "head", "the side the others are compared with")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "benchcompare: -dir is required")
		os.Exit(2)
	}
	cmp, err := compare(*dir, *head)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
	var text strings.Builder
	printTable(io.MultiWriter(os.Stdout, &text), cmp)
	data, err := json.MarshalIndent(cmp, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(*dir, "compare.json"), append(data, '\n'), 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(*dir, "compare.txt"), []byte(text.String()), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcompare:", err)
		os.Exit(1)
	}
}

// compare reads every run under dir and summarizes each figure per side.
func compare(dir, head string) (*Comparison, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	// values[figure][side] are the figure's values, one per round that wrote it.
	values := map[string]map[string][]float64{}
	sides := map[string]bool{}
	for _, e := range entries {
		m := runDir.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		side := m[1]
		sides[side] = true
		files, err := filepath.Glob(filepath.Join(dir, e.Name(), "*.json"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			var doc any
			if err := json.Unmarshal(raw, &doc); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			for name, v := range flatten(strings.TrimSuffix(filepath.Base(f), ".json"), doc) {
				if values[name] == nil {
					values[name] = map[string][]float64{}
				}
				values[name][side] = append(values[name][side], v)
			}
		}
	}
	if !sides[head] {
		return nil, fmt.Errorf("no run of %q under %s", head, dir)
	}
	out := &Comparison{Head: head}
	for side := range sides {
		if side != head {
			out.Bases = append(out.Bases, side)
		}
	}
	if len(out.Bases) == 0 {
		return nil, errors.New("no base side to compare with")
	}
	slices.Sort(out.Bases)
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		f := Figure{Name: name, Sides: map[string]Stats{}, Ratios: map[string]float64{}, Better: better(name)}
		for side, runs := range values[name] {
			f.Sides[side] = stats(runs)
		}
		h, ok := f.Sides[head]
		for _, base := range out.Bases {
			if b, found := f.Sides[base]; ok && found && b.Median != 0 {
				f.Ratios[base] = h.Median / b.Median
			}
		}
		out.Figures = append(out.Figures, f)
	}
	return out, nil
}

// flatten returns every number in doc by its dotted path under prefix, leaving out lists and the
// machine's description.
func flatten(prefix string, doc any) map[string]float64 {
	out := map[string]float64{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case float64:
			out[path] = v
		case map[string]any:
			for k, child := range v {
				if k == "machine" {
					continue
				}
				walk(path+"."+k, child)
			}
		}
	}
	walk(prefix, doc)
	return out
}

// stats summarizes runs: median (the mean of the middle two for an even count), min and max.
func stats(runs []float64) Stats {
	sorted := slices.Clone(runs)
	slices.Sort(sorted)
	n := len(sorted)
	median := sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return Stats{Runs: runs, Median: median, Min: sorted[0], Max: sorted[n-1]}
}

// better says which way a figure is better, where its name tells: "higher" for rates and claims
// served warm; "lower" for latencies, durations, memory, writes and CPU.
func better(name string) string {
	lower := strings.ToLower(name)
	last := lower[strings.LastIndex(lower, ".")+1:]
	switch {
	case strings.Contains(last, "persecond") || strings.HasSuffix(last, "pers") ||
		last == "readyincreateresponse" || last == "warmadoptions":
		return "higher"
	case strings.HasSuffix(last, "ms") || strings.HasSuffix(last, "seconds") || strings.HasSuffix(last, "mib") ||
		strings.Contains(lower, "writes") || strings.Contains(lower, "cpums"):
		return "lower"
	}
	return ""
}

// printTable writes one line per figure: each side's median with its range, and the head's ratio
// to each base.
func printTable(w io.Writer, c *Comparison) {
	sides := append(slices.Clone(c.Bases), c.Head)
	fmt.Fprintf(w, "%-64s", "figure (median [min-max] of the rounds)")
	for _, s := range sides {
		fmt.Fprintf(w, " %28s", s)
	}
	for _, b := range c.Bases {
		fmt.Fprintf(w, " %14s", c.Head+"/"+shorten(b, 7))
	}
	fmt.Fprintf(w, " %s\n", "better")
	for _, f := range c.Figures {
		fmt.Fprintf(w, "%-64s", f.Name)
		for _, s := range sides {
			st, ok := f.Sides[s]
			if !ok {
				fmt.Fprintf(w, " %28s", "-")
				continue
			}
			fmt.Fprintf(w, " %28s", fmt.Sprintf("%s [%s-%s]", num(st.Median), num(st.Min), num(st.Max)))
		}
		for _, b := range c.Bases {
			r, ok := f.Ratios[b]
			if !ok {
				fmt.Fprintf(w, " %14s", "-")
				continue
			}
			fmt.Fprintf(w, " %14s", strconv.FormatFloat(r, 'f', 2, 64))
		}
		fmt.Fprintf(w, " %s\n", f.Better)
	}
}

func shorten(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// num prints a figure with about four significant digits.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}
