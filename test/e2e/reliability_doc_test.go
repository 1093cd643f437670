// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// definedTest finds the tests, fuzz targets and benchmarks a _test.go file defines.
	definedTest = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)\w*)\(`)
	// namedTest finds the names of tests and fuzz targets in prose.
	namedTest = regexp.MustCompile(`\b(?:Test|Fuzz)[A-Z]\w*`)
	// faultTest finds the top-level tests of faults_test.go.
	faultTest = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
)

// TestReliabilityDocListsTests keeps RELIABILITY.md true: every test it names is defined in a
// _test.go file of the repository, and every test of faults_test.go has a row in its table. A
// row whose Result says "pending" may name a test another change has yet to add. The test reads
// files only; it needs no cluster.
func TestReliabilityDocListsTests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "RELIABILITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	err = filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != repoRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "_output" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range definedTest.FindAllStringSubmatch(string(src), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	rows, header := reliabilityTable(t, string(doc))
	result := slices.Index(header, "Result")
	if result < 0 {
		t.Fatalf("the table of RELIABILITY.md has no Result column: %q", header)
	}
	inTable := map[string]bool{}
	for _, row := range rows {
		named := slices.Compact(slices.Sorted(slices.Values(namedTest.FindAllString(strings.Join(row, " "), -1))))
		if len(named) == 0 {
			t.Errorf("RELIABILITY.md: row %q names no test", row[0])
		}
		pending := len(row) > result && strings.HasPrefix(strings.ToLower(row[result]), "pending")
		for _, name := range named {
			inTable[name] = true
			switch {
			case defined[name]:
			case pending:
				t.Logf("RELIABILITY.md: %s is not written yet (row %q is pending)", name, row[0])
			default:
				t.Errorf("RELIABILITY.md names %s (row %q), which no _test.go file defines", name, row[0])
			}
		}
	}
	// Names in the prose around the table must exist too.
	for _, name := range namedTest.FindAllString(string(doc), -1) {
		if !defined[name] && !inTable[name] {
			t.Errorf("RELIABILITY.md names %s, which no _test.go file defines", name)
		}
	}

	faults, err := os.ReadFile(filepath.Join(repoRoot, "test/e2e/faults_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range faultTest.FindAllStringSubmatch(string(faults), -1) {
		if !inTable[m[1]] {
			t.Errorf("fault test %s has no row in the table of RELIABILITY.md", m[1])
		}
	}
}

// reliabilityTable returns the cells of the rows of the first Markdown table in doc and its header.
func reliabilityTable(t *testing.T, doc string) (rows [][]string, header []string) {
	t.Helper()
	var lines []string
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "|") {
			lines = append(lines, line)
		} else if len(lines) > 0 {
			break
		}
	}
	if len(lines) < 3 {
		t.Fatalf("RELIABILITY.md has no table (a header, a separator and rows)")
	}
	cells := func(line string) []string {
		parts := strings.Split(strings.Trim(line, "|"), "|")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts
	}
	header = cells(lines[0])
	for _, line := range lines[2:] {
		rows = append(rows, cells(line))
	}
	return rows, header
}
