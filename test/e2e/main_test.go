// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/plane"
)

// Paths of the checkout the tests run in; set by TestMain.
var (
	repoRoot        string // the module root
	kubectlBin      string // _output/tools/bin/kubectl
	localUp         string // hack/local-up.sh
	adminKubeconfig string // _output/local/kubeconfig (system:masters)
	certsDir        string // _output/local/certs (ca.crt and ca.key sign client certificates)
	examplesDir     string // artifacts/examples
	kubeCacheDir    string // kubectl's discovery and HTTP cache for this run (KUBECACHEDIR)
	// planeStartedHere: this run started the control plane, and no command has talked to the
	// sandbox APIs since hack/local-up.sh start returned (TestExplainIsTheFirstCommand's premise).
	planeStartedHere bool
)

// controlPlaneComponents are the plane's processes in start order, but the real node's (which
// runs only as root on Linux): the table of hack/localplane/plane, set by TestMain.
var controlPlaneComponents []string

// TestMain makes sure the local control plane runs: a running one is reused (the
// sandbox-apiserver in it restarted first when `make build` produced a different binary), otherwise
// `hack/local-up.sh start` brings one up for the run and `hack/local-up.sh stop` takes it down
// afterwards. E2E_KEEP_CONTROL_PLANE=1 leaves a control plane started here running.
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if err := findPaths(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	var missing []string
	for _, bin := range []string{filepath.Join(repoRoot, "_output/bin/sandbox-apiserver"), kubectlBin} {
		if _, err := os.Stat(bin); err != nil {
			missing = append(missing, strings.TrimPrefix(bin, repoRoot+"/"))
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: %s missing: run `make build tools` first (or `make test-e2e`, which does)\n",
			strings.Join(missing, " and "))
		return 1
	}

	dir, err := os.MkdirTemp("", "sandbox-e2e-kubecache-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	kubeCacheDir = dir

	owned, err := ensureControlPlane()
	if owned && os.Getenv("E2E_KEEP_CONTROL_PLANE") == "" {
		defer stopControlPlane()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: local control plane: %v\n", err)
		return 1
	}
	return m.Run()
}

// findPaths locates the module root from the package directory the test binary runs in.
func findPaths() error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "hack/local-up.sh")); err == nil {
				repoRoot = dir
				break
			}
		}
		if dir == filepath.Dir(dir) {
			return fmt.Errorf("no module root with hack/local-up.sh above %s", wd)
		}
	}
	kubectlBin = filepath.Join(repoRoot, "_output/tools/bin/kubectl")
	localUp = filepath.Join(repoRoot, "hack/local-up.sh")
	adminKubeconfig = filepath.Join(repoRoot, "_output/local/kubeconfig")
	certsDir = filepath.Join(repoRoot, "_output/local/certs")
	cfg, err := plane.ConfigFromEnv(repoRoot)
	if err != nil {
		return err
	}
	controlPlaneComponents = nil
	for _, c := range cfg.Components() {
		if !c.Node {
			controlPlaneComponents = append(controlPlaneComponents, c.Name)
		}
	}
	examplesDir = filepath.Join(repoRoot, "artifacts/examples")
	return nil
}

// ensureControlPlane reuses or starts the local control plane and waits until the sandbox APIs
// answer. owned reports whether this run started it (nothing of it was running before).
func ensureControlPlane() (owned bool, err error) {
	running := componentsRunning()
	all, none := true, true
	for _, c := range controlPlaneComponents {
		all = all && running[c]
		none = none && !running[c]
	}
	switch {
	case all:
		fmt.Fprintln(os.Stderr, "e2e: reusing the running local control plane")
		if err := restartIfStale(); err != nil {
			return false, err
		}
	case none && adminAnswers():
		fmt.Fprintln(os.Stderr, "e2e: reusing the control plane that answers on "+adminKubeconfig)
	default:
		owned = none
		if owned {
			fmt.Fprintln(os.Stderr, "e2e: starting the local control plane (hack/local-up.sh start)")
		} else {
			fmt.Fprintln(os.Stderr, "e2e: local control plane partly running; starting the rest (hack/local-up.sh start)")
		}
		if err := runLocalUp(10*time.Minute, "start"); err != nil {
			return owned, err
		}
		if owned {
			// start returns once the APIs are served, OpenAPI included: the first test checks that
			// with kubectl explain, before any other command.
			planeStartedHere = true
			return owned, nil
		}
	}
	return owned, waitForSandboxAPIs(2 * time.Minute)
}

// componentsRunning asks the plane's package which components run (as hack/local-up.sh status
// does).
func componentsRunning() map[string]bool {
	running := map[string]bool{}
	cfg, err := plane.ConfigFromEnv(repoRoot)
	if err != nil {
		return running
	}
	r := plane.Runner{Config: cfg}
	for _, c := range cfg.Components() {
		_, running[c.Name] = r.Running(c)
	}
	return running
}

// adminAnswers reports whether a kube-apiserver answers with the admin kubeconfig.
func adminAnswers() bool {
	if _, err := os.Stat(adminKubeconfig); err != nil {
		return false
	}
	_, _, err := runKubectlCmd(context.Background(), kubectlOptions{timeout: 10 * time.Second},
		"--request-timeout=5s", "get", "--raw=/readyz")
	return err == nil
}

// restartIfStale restarts a running sandbox-apiserver whose executable differs from the binary in
// _output/bin (make build replaced it since), so the tests exercise the code of the checkout.
func restartIfStale() error {
	bin := filepath.Join(repoRoot, "_output/bin/sandbox-apiserver")
	pid, err := os.ReadFile(filepath.Join(repoRoot, "_output/local/pids/sandbox-apiserver.pid"))
	if err != nil {
		return nil // not started by hack/local-up.sh: nothing to compare
	}
	running, err := fileDigest(filepath.Join("/proc", strings.TrimSpace(string(pid)), "exe"))
	if err != nil {
		return nil
	}
	built, err := fileDigest(bin)
	if err != nil {
		return err
	}
	if running == built {
		return nil
	}
	fmt.Fprintln(os.Stderr, "e2e: the running sandbox-apiserver is not the binary in _output/bin; restarting it")
	return runLocalUp(5*time.Minute, "restart-sandbox-apiserver")
}

// fileDigest returns the SHA-256 of a file's content.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func stopControlPlane() {
	fmt.Fprintln(os.Stderr, "e2e: stopping the local control plane started for this run")
	if err := runLocalUp(3*time.Minute, "stop"); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: hack/local-up.sh stop: %v\n", err)
	}
}

// runLocalUp runs hack/local-up.sh COMMAND with its output on stderr.
func runLocalUp(timeout time.Duration, command string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, localUp, command)
	cmd.Dir = repoRoot
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/local-up.sh %s: %w", command, err)
	}
	return nil
}

// waitForSandboxAPIs polls until the sandbox APIs are usable through the aggregator: all four
// group-versions and kinds in fresh discovery, and the admin can list all four kinds.
func waitForSandboxAPIs(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ready, state := sandboxAPIsReady(kubectlOptions{})
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sandbox APIs did not answer within %s: %s", timeout, state)
		}
		time.Sleep(time.Second)
	}
}

// sandboxAPIsReady reports whether discovery (fetched afresh by kubectl api-versions and
// api-resources) lists the sandbox group-versions and kinds and listing them works; state says
// what is missing.
func sandboxAPIsReady(o kubectlOptions) (ready bool, state string) {
	o.timeout = 30 * time.Second
	versions, stderr, err := runKubectlCmd(context.Background(), o, "--request-timeout=10s", "api-versions")
	if err != nil {
		return false, "kubectl api-versions: " + strings.TrimSpace(stderr)
	}
	for _, gv := range []string{"agents.x-k8s.io/v1beta1", "agents.x-k8s.io/v1alpha1",
		"extensions.agents.x-k8s.io/v1beta1", "extensions.agents.x-k8s.io/v1alpha1"} {
		if !strings.Contains(versions, gv+"\n") {
			return false, "kubectl api-versions lacks " + gv
		}
	}
	resources, stderr, err := runKubectlCmd(context.Background(), o, "--request-timeout=10s", "api-resources", "--categories=agents", "-o", "name")
	if err != nil {
		return false, "kubectl api-resources: " + strings.TrimSpace(stderr)
	}
	if n := len(strings.Fields(resources)); n != 4 {
		return false, fmt.Sprintf("kubectl api-resources --categories=agents lists %d resources: %q", n, resources)
	}
	if _, stderr, err = runKubectlCmd(context.Background(), o, "--request-timeout=10s", "get",
		"sandboxes,sandboxclaims,sandboxtemplates,sandboxwarmpools", "-A"); err != nil {
		return false, "kubectl get: " + strings.TrimSpace(stderr)
	}
	return true, ""
}

// runKubectlCmd runs the kubectl binary outside of any test (TestMain, cleanups).
func runKubectlCmd(ctx context.Context, o kubectlOptions, args ...string) (stdout, stderr string, err error) {
	if o.timeout == 0 {
		o.timeout = defaultKubectlTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, args...)
	cmd.Dir = repoRoot
	cmd.Env = kubectlEnv(o)
	if o.stdin != "" {
		cmd.Stdin = strings.NewReader(o.stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	err = cmd.Run()
	if ctx.Err() != nil && err != nil {
		err = errors.Join(err, fmt.Errorf("kubectl did not finish within %s", o.timeout))
	}
	return out.String(), errb.String(), err
}

// kubectlEnv is the environment of a kubectl run: the caller's, with KUBECONFIG set to the
// chosen user, the run's own discovery cache and o.env added.
func kubectlEnv(o kubectlOptions) []string {
	kc := o.kubeconfig
	if kc == "" {
		kc = adminKubeconfig
	}
	var env []string
	for _, e := range os.Environ() {
		if strings.HasPrefix(e, "KUBECONFIG=") || strings.HasPrefix(e, "KUBECACHEDIR=") ||
			strings.HasPrefix(e, "KUBE_EDITOR=") || strings.HasPrefix(e, "KUBERC=") || strings.HasPrefix(e, "KUBECTL_") {
			continue
		}
		env = append(env, e)
	}
	// KUBERC=off: no personal kuberc aliases or defaults change what the tests type.
	env = append(env, "KUBECONFIG="+kc, "KUBERC=off")
	if kubeCacheDir != "" {
		env = append(env, "KUBECACHEDIR="+kubeCacheDir)
	}
	return append(env, o.env...)
}
