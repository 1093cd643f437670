// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// defaultKubectlTimeout bounds one kubectl run that is not a watch.
	defaultKubectlTimeout = 2 * time.Minute
	// waitTimeout bounds one wait of a test: a poll, a watch event.
	waitTimeout = 60 * time.Second
)

// kubectlOptions says how kubectl runs: as which user (kubeconfig, the admin when empty), with
// what on stdin, which extra environment variables (NAME=value) and for how long at most.
type kubectlOptions struct {
	kubeconfig string
	stdin      string
	env        []string
	timeout    time.Duration
}

// kubectlWith runs kubectl with o and logs the command line and, on failure, its stderr.
func kubectlWith(t *testing.T, o kubectlOptions, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	start := time.Now()
	stdout, stderr, err = runKubectlCmd(context.Background(), o, args...)
	who := ""
	if o.kubeconfig != "" {
		who = "[" + strings.TrimSuffix(filepath.Base(o.kubeconfig), ".kubeconfig") + "] "
	}
	elapsed := time.Since(start).Round(time.Millisecond)
	switch {
	case err != nil && strings.TrimSpace(stderr) != "":
		t.Logf("%s$ kubectl %s  (%s, %v)\n%s", who, shellJoin(args), elapsed, err, indent(stderr))
	case err != nil:
		t.Logf("%s$ kubectl %s  (%s, %v)", who, shellJoin(args), elapsed, err)
	default:
		t.Logf("%s$ kubectl %s  (%s)", who, shellJoin(args), elapsed)
	}
	return stdout, stderr, err
}

// kubectl runs kubectl as the cluster admin and returns its stdout; it fails the test, showing
// stderr, when kubectl fails.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	return kubectlAs(t, "", args...)
}

// kubectlErr runs kubectl as the cluster admin and returns what it printed and how it exited.
func kubectlErr(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return kubectlWith(t, kubectlOptions{}, args...)
}

// kubectlAs runs kubectl as the user of kubeconfig (see newUser) and returns its stdout; it
// fails the test, showing stderr, when kubectl fails.
func kubectlAs(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	stdout, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kubeconfig}, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstderr:\n%s", shellJoin(args), err, indent(stderr))
	}
	return stdout
}

// kubectlAsErr runs kubectl as the user of kubeconfig and returns what it printed and how it
// exited.
func kubectlAsErr(t *testing.T, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return kubectlWith(t, kubectlOptions{kubeconfig: kubeconfig}, args...)
}

// kubectlAsStdin runs kubectl as the user of kubeconfig (the admin when empty) with stdin and
// returns its stdout; it fails the test, showing stderr, when kubectl fails.
func kubectlAsStdin(t *testing.T, kubeconfig, stdin string, args ...string) string {
	t.Helper()
	stdout, stderr, err := kubectlWith(t, kubectlOptions{kubeconfig: kubeconfig, stdin: stdin}, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstderr:\n%s", shellJoin(args), err, indent(stderr))
	}
	return stdout
}

// applyYAML runs `kubectl apply -n ns -f -` as the admin with manifest on stdin.
func applyYAML(t *testing.T, ns, manifest string) string {
	t.Helper()
	stdout, stderr, err := kubectlWith(t, kubectlOptions{stdin: manifest}, "apply", "-n", ns, "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply -n %s -f -: %v\nstderr:\n%s\nmanifest:\n%s", ns, err, indent(stderr), indent(manifest))
	}
	return stdout
}

// newNamespace creates a namespace named after the test (e2e-<test>-<random>) and deletes it
// when the test ends; on failure it first logs what the namespace held.
//
// Its pods go to the kwok nodes (through the namespace's node selector and default tolerations,
// which kube-apiserver's PodNodeSelector and PodTolerationRestriction admission apply): the tests
// that use it check the API and the controllers, at kwok's speed and scale. Tests of what runs
// inside a sandbox use newRealNamespace.
func newNamespace(t *testing.T) string {
	t.Helper()
	return createNamespace(t, `{scheduler.alpha.kubernetes.io/node-selector: type=kwok, `+
		`scheduler.alpha.kubernetes.io/defaultTolerations: '[{"key":"sandbox-apiserver.dev/kwok","operator":"Exists","effect":"NoSchedule"}]'}`)
}

// newRealNamespace is newNamespace for tests of what runs inside a sandbox: its pods go where the
// scheduler puts them, on the real node when the plane has one.
func newRealNamespace(t *testing.T) string {
	t.Helper()
	return createNamespace(t, "{}")
}

// createNamespace creates a namespace for t with annotations (YAML flow style) and deletes it at
// t's end, logging our objects in it first when t failed.
func createNamespace(t *testing.T, annotations string) string {
	t.Helper()
	name := "e2e-" + testSlug(t) + "-" + randSuffix(5)
	manifest := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, annotations: %s}\n", name, annotations)
	if _, stderr, err := kubectlWith(t, kubectlOptions{stdin: manifest}, "create", "-f", "-"); err != nil {
		t.Fatalf("creating namespace %s: %v\n%s", name, err, indent(stderr))
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, stderr, _ := kubectlErr(t, "get", "agents", "-n", name, "-o", "wide")
			t.Logf("objects in %s at failure:\n%s\n%s", name, indent(out), indent(stderr))
		}
		if _, stderr, err := kubectlErr(t, "delete", "namespace", name, "--wait=false", "--ignore-not-found"); err != nil {
			t.Errorf("deleting namespace %s: %v\n%s", name, err, stderr)
		}
	})
	return name
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// testSlug makes a DNS label part out of the test name, "TestScale/swp" -> "scale-swp".
func testSlug(t *testing.T) string {
	s := strings.TrimPrefix(t.Name(), "Test")
	s = strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 40 {
		s = strings.TrimRight(s[:40], "-")
	}
	return s
}

// randSuffix returns n random lower-case letters and digits.
func randSuffix(n int) string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = chars[rand.IntN(len(chars))]
	}
	return string(b)
}

// eventually polls cond until it reports done, failing the test after timeout with what was
// awaited and the last state cond reported.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (done bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	interval := 100 * time.Millisecond
	for {
		done, state := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, state)
		}
		time.Sleep(interval)
		interval = min(2*interval, 2*time.Second)
	}
}

// jsonpath returns `kubectl get RESOURCE... -n ns -o jsonpath=EXPR` as the admin.
func jsonpath(t *testing.T, ns, expr string, resource ...string) string {
	t.Helper()
	args := append([]string{"get"}, resource...)
	return kubectl(t, append(args, "-n", ns, "-o", "jsonpath="+expr)...)
}

// getObject returns `kubectl get RESOURCE NAME -n ns -o json` decoded.
func getObject(t *testing.T, ns, resource, name string) map[string]any {
	t.Helper()
	out := kubectl(t, "get", resource, name, "-n", ns, "-o", "json")
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("decoding %s/%s: %v", resource, name, err)
	}
	return obj
}

// lookup returns the value at a dotted path ("spec.lifecycle.shutdownPolicy") of a decoded
// object, and whether it is there.
func lookup(obj map[string]any, path string) (any, bool) {
	var cur any = obj
	for _, key := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[key]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// names splits `kubectl ... -o name` output into its sorted lines.
func names(out string) []string {
	var res []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			res = append(res, l)
		}
	}
	slices.Sort(res)
	return res
}

// expectNames fails the test unless `-o name` output lists exactly want (in any order).
func expectNames(t *testing.T, what, out string, want ...string) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if got := names(out); !slices.Equal(got, want) {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

// expectIncludes fails the test unless `-o name` output lists every one of want; controllers may
// have made more objects.
func expectIncludes(t *testing.T, what, out string, want ...string) {
	t.Helper()
	got := names(out)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: %q missing from %q", what, w, got)
		}
	}
}

// expectContains reports every sub that s lacks.
func expectContains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s: %q not found in:\n%s", what, sub, indent(s))
		}
	}
}

// expectFailure fails the test unless kubectl failed and stderr holds every sub.
func expectFailure(t *testing.T, what, stderr string, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: kubectl succeeded, want a failure mentioning %q", what, subs)
		return
	}
	expectContains(t, what+" (stderr)", stderr, subs...)
}

// table is a parsed `kubectl get` table: its column headers and one map per row.
type table struct {
	header []string
	rows   []map[string]string
}

var headerCell = regexp.MustCompile(`\S+( \S+)*`)

// parseTable parses the single table kubectl get prints for one resource type. Cells are cut at
// the offsets of the header cells, so empty cells come out empty.
func parseTable(t *testing.T, out string) table {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) == "" {
		t.Fatalf("no table in kubectl output %q", out)
	}
	locs := headerCell.FindAllStringIndex(lines[0], -1)
	var tab table
	for _, l := range locs {
		tab.header = append(tab.header, lines[0][l[0]:l[1]])
	}
	for _, line := range lines[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		row := map[string]string{}
		for i, l := range locs {
			start, end := l[0], len(line)
			if i+1 < len(locs) {
				end = min(locs[i+1][0], len(line))
			}
			if start < end {
				row[tab.header[i]] = strings.TrimSpace(line[start:end])
			} else {
				row[tab.header[i]] = ""
			}
		}
		tab.rows = append(tab.rows, row)
	}
	return tab
}

// row returns the row whose NAME cell is name.
func (tab table) row(t *testing.T, name string) map[string]string {
	t.Helper()
	for _, r := range tab.rows {
		if r["NAME"] == name {
			return r
		}
	}
	t.Fatalf("no row %q in table with rows %v", name, tab.rows)
	return nil
}

// expectColumns fails the test unless the header starts with NAME, ends with AGE and holds cols
// in this order (other columns may sit between them).
func expectColumns(t *testing.T, what string, tab table, cols ...string) {
	t.Helper()
	h := tab.header
	if len(h) < 2 || h[0] != "NAME" || h[len(h)-1] != "AGE" {
		t.Errorf("%s: header %q does not run from NAME to AGE", what, h)
	}
	i := 0
	for _, c := range h {
		if i < len(cols) && c == cols[i] {
			i++
		}
	}
	if i < len(cols) {
		t.Errorf("%s: header %q lacks %q (in this order: %q)", what, h, cols[i], cols)
	}
}

// watcher is a kubectl --watch running in the background; lines collects its stdout.
type watcher struct {
	args   []string
	lines  chan string
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	stderr bytes.Buffer
	seen   []string
}

// startWatch starts `kubectl ARGS` (which should hold --watch or --watch-only) as the user of
// kubeconfig (the admin when empty). It ends after timeout at the latest and with the test.
func startWatch(t *testing.T, kubeconfig string, timeout time.Duration, args ...string) *watcher {
	t.Helper()
	return startKubectl(t, kubectlOptions{kubeconfig: kubeconfig}, timeout, args...)
}

// startKubectl starts `kubectl ARGS` with o in the background (a watch, a port-forward...); its
// stdout lines are read with next. It ends after timeout at the latest and with the test.
func startKubectl(t *testing.T, o kubectlOptions, timeout time.Duration, args ...string) *watcher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	w := &watcher{args: args, lines: make(chan string, 1024), cancel: cancel, done: make(chan struct{})}
	cmd := exec.CommandContext(ctx, kubectlBin, args...)
	cmd.Dir = repoRoot
	cmd.Env = kubectlEnv(o)
	cmd.Stderr = lockedWriter{&w.mu, &w.stderr}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting kubectl %s: %v", shellJoin(args), err)
	}
	t.Logf("$ kubectl %s &", shellJoin(args))
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case w.lines <- sc.Text():
			case <-ctx.Done(): // nobody reads any more: drain until kubectl is gone
			}
		}
		_ = cmd.Wait() // stderr is complete once the lines channel closes
		close(w.lines)
	}()
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	return w
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// next waits up to waitTimeout for an output line that match accepts and returns it; lines
// before it are skipped. It fails the test when the watch ends or the time is up.
func (w *watcher) next(t *testing.T, what string, match func(line string) bool) string {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				w.mu.Lock()
				defer w.mu.Unlock()
				t.Fatalf("kubectl %s ended before %s; printed:\n%s\nstderr:\n%s",
					shellJoin(w.args), what, indent(strings.Join(w.seen, "\n")), indent(w.stderr.String()))
			}
			w.seen = append(w.seen, line)
			if match(line) {
				t.Logf("watch: %s", line)
				return line
			}
		case <-timer.C:
			t.Fatalf("no line for %s within %s from kubectl %s; printed:\n%s",
				what, waitTimeout, shellJoin(w.args), indent(strings.Join(w.seen, "\n")))
		}
	}
}

// fields returns a predicate for watch lines whose whitespace-separated fields start with want.
func fields(want ...string) func(string) bool {
	return func(line string) bool {
		f := strings.Fields(line)
		return len(f) >= len(want) && slices.Equal(f[:len(want)], want)
	}
}

// writeScript writes an executable shell script into the test's temporary directory.
func writeScript(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\nset -e\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// shellJoin prints args as a shell would need them, quoting those with special characters.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"{}[]$*?!|&;<>()\\`") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

// indent indents every line of s for test logs.
func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "    <empty>"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
