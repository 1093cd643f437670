// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/hostchange"
)

// Plane starts, stops and reports the whole local plane: the components of the table in
// components.go, in the order of startOrder, with what each needs written before it starts and
// the cluster's objects made after.
type Plane struct {
	Config Config
	// Log reports progress, as hack/lib/common.sh's log does (a time stamp, to stderr).
	Log func(format string, args ...any)

	// kube is the admin's client of kube-apiserver, made on first use.
	kube *cluster
	// nodeFresh: containerd starts without containers (prepareContainerd).
	nodeFresh bool
	// realNode: this start runs the real node.
	realNode bool
	// kubeletStarted is when kubelet was launched (afterKubelet reports the time to Ready).
	kubeletStarted time.Time
	// interval is how often the waits poll the cluster (0: 500ms).
	interval time.Duration
}

// ErrReported is an error already reported to the user (with the end of the component's log):
// the command exits 1 without saying more.
var ErrReported = errors.New("reported")

// step is one step of the plane's start. A component step starts the component unless it runs,
// with prepare (writing what it reads) before its launch and after (making what depends on it)
// once it is ready; prepare and after run only when it is started. Any other step runs do at
// every start.
type step struct {
	component      string
	prepare, after func(context.Context) error

	name string
	do   func(context.Context) error

	// server: only when sandbox-apiserver runs (not with SKIP_SANDBOX_APISERVER).
	server bool
	// host: only when it runs here (not in the chart mode); chart: only in the chart mode.
	host, chart bool
}

// startOrder is the plane's start, the one place that says it. The components come in the order
// of their table (components.go), so stop, which runs the table backwards, undoes it; the real
// node's (their Node field set) run only when it does.
func (p *Plane) startOrder() []step {
	return []step{
		{component: "etcd"},
		{component: "kube-apiserver"},
		{name: "apply artifacts/local", do: p.applyLocalManifests},
		{component: "kube-controller-manager"},
		{component: "local-path-provisioner"},
		{component: "kube-scheduler"},
		{component: "kwok", prepare: p.prepareKwok},
		{component: "kwok-guard"},
		{name: "kwok's Nodes", do: p.makeKwokNodes},
		{component: "containerd", prepare: p.prepareContainerd, after: p.afterContainerd},
		{component: "kubelet", prepare: p.prepareKubelet, after: p.afterKubelet},
		{component: "kube-proxy", prepare: p.prepareNetwork},
		{component: "kube-router", prepare: p.Config.guardUnpolicedPods},
		{component: "coredns"},
		{component: "kubernetes-service"},
		{name: "taint kwok's Nodes", do: p.taintKwokNodes},
		{component: "sandbox-etcd", prepare: p.stopEmbeddedServer, host: true},
		{component: "sandbox-apiserver", server: true, host: true},
		{name: "helm install the chart", do: p.installChart, chart: true},
		{name: "APIServices Available", do: p.waitAPIServices, server: true},
		{name: "OpenAPI served", do: p.waitOpenAPI, server: true},
	}
}

// stepsToRun is the start order without the steps this start skips: the real node's components
// unless node, sandbox-apiserver's steps with SKIP_SANDBOX_APISERVER, those of the other mode.
func (p *Plane) stepsToRun(node bool) ([]step, error) {
	var out []step
	chart := p.Config.Mode == ModeChart
	for _, s := range p.startOrder() {
		if (s.server && p.Config.SkipSandboxAPIServer && !chart) || p.otherMode(s) {
			continue
		}
		if s.component != "" {
			c, err := p.Config.Component(s.component)
			if err != nil {
				return nil, err
			}
			if c.Node && !node {
				continue
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *Plane) runner() Runner { return Runner{Config: p.Config, Log: p.Log} }

func (p *Plane) pollInterval() time.Duration {
	if p.interval > 0 {
		return p.interval
	}
	return 500 * time.Millisecond
}

// cluster is the admin's client of kube-apiserver.
func (p *Plane) cluster() (*cluster, error) {
	if p.kube == nil {
		cl, err := newCluster(p.Config.AdminKubeconfig())
		if err != nil {
			return nil, err
		}
		p.kube = cl
	}
	return p.kube, nil
}

// rel is path relative to the checkout, as the plane's messages print paths.
func (p *Plane) rel(path string) string {
	if r, err := filepath.Rel(p.Config.Root, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

func (p *Plane) certLog(s string) { p.Log("certs: %s", s) }

// fail reports a component that did not do what start waits for, with the end of its log, and
// stops it.
func (p *Plane) fail(name, msg string) error {
	p.Log("ERROR: %s: %s", name, msg)
	r := p.runner()
	c, err := p.Config.Component(name)
	if err != nil {
		return err
	}
	r.printLogTail(c)
	r.Stop(c)
	return ErrReported
}

// run runs steps in order.
func (p *Plane) run(ctx context.Context, steps []step) error {
	for _, s := range steps {
		var err error
		if s.component != "" {
			err = p.startComponent(ctx, s)
		} else if err = s.do(ctx); err != nil && !errors.Is(err, ErrReported) {
			err = fmt.Errorf("%s: %w", s.name, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// startComponent starts a component step's component unless it runs, with its prepare and after.
func (p *Plane) startComponent(ctx context.Context, s step) error {
	c, err := p.Config.Component(s.component)
	if err != nil {
		return err
	}
	r := p.runner()
	if pid, ok := r.Running(c); ok {
		p.Log("%s: already running (PID %d)", c.Name, pid)
		return nil
	}
	if s.prepare != nil {
		if err := s.prepare(ctx); err != nil {
			return err
		}
	}
	if err := r.Start(ctx, c); err != nil {
		return err
	}
	if s.after != nil {
		return s.after(ctx)
	}
	return nil
}

// stepOf is the start order's step of a component.
func (p *Plane) stepOf(component string) step {
	for _, s := range p.startOrder() {
		if s.component == component {
			return s
		}
	}
	return step{component: component}
}

// controlTools are the binaries start needs (make tools builds them).
var controlTools = []string{"etcd", "kube-apiserver", "kube-controller-manager", "local-path-provisioner", "kube-scheduler", "kwok", "kubectl"}

// prepare checks the tools and writes what every component reads: the directories, the
// volumes' directory (the owner's alone) and the certificates and kubeconfigs.
func (p *Plane) prepare() error {
	var missing []string
	for _, t := range controlTools {
		if !executable(p.Config.Tool(t)) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing tools in _output/tools/bin: %s (run: make tools)", strings.Join(missing, " "))
	}
	if _, err := os.Stat(p.Config.kwokStage("node-initialize")); err != nil {
		return fmt.Errorf("kwok stage files missing in _output/tools/kwok-stages (run: make tools)")
	}
	for _, d := range []string{p.Config.Logs(), p.Config.Pids(), p.Config.Data()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := EnsureOwnDir(p.Config.Volumes()); err != nil {
		return err
	}
	return p.Config.WriteCredentials(false, p.certLog)
}

// serverBinaryPresent fails when sandbox-apiserver's binary is not built.
func (p *Plane) serverBinaryPresent() error {
	if _, err := os.Stat(p.Config.SandboxAPIServerBin); err != nil {
		p.Log("ERROR: sandbox-apiserver binary not found at %s (run: make build)", p.rel(p.Config.SandboxAPIServerBin))
		return ErrReported
	}
	return nil
}

// Start brings the plane up: components that run are left alone, stopped ones are started. Every
// port is checked before anything starts, so a conflict is reported before half a cluster is up.
func (p *Plane) Start(ctx context.Context) error {
	if err := p.prepare(); err != nil {
		return err
	}
	node, err := p.nodeEnabled()
	if err != nil {
		return err
	}
	p.realNode = node
	chart := p.Config.Mode == ModeChart
	switch {
	case chart && !node:
		return errors.New("SANDBOX_APISERVER_MODE=chart installs the server on the real node, which does not run here")
	case !chart && p.Config.ChartInstalled():
		return errors.New("the chart is installed on this plane (SANDBOX_APISERVER_MODE=chart): stop it first (make down)")
	}
	steps, err := p.stepsToRun(node)
	if err != nil {
		return err
	}
	r := p.runner()
	for _, s := range steps {
		if s.component == "" {
			continue
		}
		c, _ := p.Config.Component(s.component)
		if _, ok := r.Running(c); !ok {
			if err := r.CheckPorts(c); err != nil {
				return err
			}
		}
	}
	if !p.Config.SkipSandboxAPIServer && !chart {
		if err := p.serverBinaryPresent(); err != nil {
			return err
		}
	}
	if err := p.run(ctx, steps); err != nil {
		return err
	}
	switch {
	case chart:
		p.Log("sandbox-apiserver installed by its chart in %s", ChartNamespace)
	case p.Config.SkipSandboxAPIServer:
		p.Log("SKIP_SANDBOX_APISERVER set: sandbox-apiserver not started")
	}
	p.Log("local control plane is up; logs in %s", p.rel(p.Config.Logs()))
	fmt.Printf("export KUBECONFIG=%s\n", p.Config.AdminKubeconfig())
	return nil
}

// StartServer starts sandbox-apiserver (and sandbox-etcd first) in a running plane and waits
// until its APIs are served.
func (p *Plane) StartServer(ctx context.Context) error {
	if err := p.prepare(); err != nil {
		return err
	}
	if err := p.requireRunning("kube-apiserver", "run: hack/local-up.sh start"); err != nil {
		return err
	}
	if err := p.serverBinaryPresent(); err != nil {
		return err
	}
	return p.run(ctx, p.serverSteps())
}

// serverSteps are the start order's steps from sandbox-etcd on, of this plane's mode.
func (p *Plane) serverSteps() []step {
	steps := p.startOrder()
	from := slices.IndexFunc(steps, func(s step) bool { return s.component == "sandbox-etcd" })
	return slices.DeleteFunc(steps[from:], p.otherMode)
}

// otherMode says whether s belongs to the mode this plane does not run: the host process's
// steps in the chart mode, the chart's install in the host mode.
func (p *Plane) otherMode(s step) bool {
	chart := p.Config.Mode == ModeChart
	return (s.host && chart) || (s.chart && !chart)
}

// StartComponent starts one component alone (its start-order step's prepare and after included)
// unless it runs.
func (p *Plane) StartComponent(ctx context.Context, name string) error {
	if err := p.prepare(); err != nil {
		return err
	}
	return p.startComponent(ctx, step{component: name})
}

// RestartComponent stops and starts one component alone; the others keep running. A real node's
// component restarts with its start-order step's prepare and after, and its containers keep
// running (containerd's shims keep them, and kubelet finds them again).
func (p *Plane) RestartComponent(ctx context.Context, name, needs, hint string) error {
	if err := p.prepare(); err != nil {
		return err
	}
	if err := p.requireRunning(needs, hint); err != nil {
		return err
	}
	c, err := p.Config.Component(name)
	if err != nil {
		return err
	}
	p.runner().Stop(c)
	s := step{component: name}
	if c.Node {
		s = p.stepOf(name)
	}
	return p.startComponent(ctx, s)
}

// requireRunning fails unless the component runs.
func (p *Plane) requireRunning(name, hint string) error {
	c, err := p.Config.Component(name)
	if err != nil {
		return err
	}
	if _, ok := p.runner().Running(c); !ok {
		return fmt.Errorf("%s is not running (%s)", name, hint)
	}
	return nil
}

// StopComponent stops one component (SIGTERM, then SIGKILL after STOP_TIMEOUT).
func (p *Plane) StopComponent(name string) error {
	c, err := p.Config.Component(name)
	if err != nil {
		return err
	}
	p.runner().Stop(c)
	return nil
}

// KillComponent ends one component with SIGKILL: no graceful shutdown, requests in flight cut.
func (p *Plane) KillComponent(name string) error {
	c, err := p.Config.Component(name)
	if err != nil {
		return err
	}
	return p.runner().Kill(c)
}

// stopEmbeddedServer: a sandbox-apiserver found running an embedded etcd (started without
// --etcd-servers, by a version of the plane from before sandbox-etcd) holds sandbox-etcd's data
// directory: it is stopped, and started again on sandbox-etcd after it. One already on
// sandbox-etcd is left running; it reconnects by itself.
func (p *Plane) stopEmbeddedServer(context.Context) error {
	c, err := p.Config.Component("sandbox-apiserver")
	if err != nil {
		return err
	}
	r := p.runner()
	pid, ok := r.Running(c)
	if !ok {
		return nil
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !embeddedEtcd(strings.Split(string(cmdline), "\x00")) {
		return nil
	}
	p.Log("sandbox-apiserver runs an embedded etcd: restarting it on sandbox-etcd (same data directory)")
	r.Stop(c)
	return nil
}

// embeddedEtcd reports whether sandbox-apiserver's arguments run it on an embedded etcd.
func embeddedEtcd(args []string) bool {
	return !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--etcd-servers=") })
}

// Stop stops every component, newest first; once containerd is down, it undoes what the real
// node did to the host (what cannot be undone now stays in the journal for the next stop; the
// rest still stops). It removes the data of the plane's volumes, and waits a moment for the
// ports to be released.
func (p *Plane) Stop() {
	p.uninstallChart(context.Background())
	r := p.runner()
	comps := p.Config.Components()
	for i := len(comps) - 1; i >= 0; i-- {
		r.Stop(comps[i])
		if comps[i].Name == "containerd" && p.Config.nodeTouched() {
			if err := p.Config.RestoreHost(p.Log); err != nil {
				p.Log("ERROR: %v", err)
				p.Log("WARNING: node: the host is not fully restored; hack/local-up.sh stop tries again")
			}
		}
	}
	p.removeVolumes()
	left := false
	for _, c := range comps {
		for _, port := range c.Ports {
			// A killed process may take a moment to release its sockets.
			if poll(context.Background(), 200*time.Millisecond, 5*time.Second, func() (bool, error) {
				return !PortInUse(c.Listen, port), nil
			}) != nil {
				p.Log("WARNING: port %d (%s) still has a listener%s", port, c.Name, portOwner(port))
				left = true
			}
		}
	}
	if !left {
		p.Log("local control plane stopped")
	}
}

// removeVolumes removes the data of this plane's volumes (make down; the PersistentVolumes stay
// in etcd and come back empty on the next start).
func (p *Plane) removeVolumes() {
	dir := p.Config.Volumes()
	info, err := os.Lstat(dir)
	if err != nil || !info.IsDir() {
		return
	}
	if err := (hostchange.Linux{}).RemoveAll(dir); err != nil {
		p.Log("WARNING: volumes: %v", err)
		return
	}
	p.Log("volumes: removed %s (the data of this plane's PersistentVolumes)", p.rel(dir))
}

// Status prints whether each component runs, and the real node's state; it returns false when
// one does not run.
func (p *Plane) Status(ctx context.Context) bool {
	r := p.runner()
	ok := true
	touched := p.Config.nodeTouched()
	for _, c := range p.Config.Components() {
		if c.Node && !touched {
			fmt.Printf("%-24s not run (no real node: LOCAL_NODE=%s)\n", c.Name, p.Config.LocalNode)
			continue
		}
		state, running := r.Status(c)
		ok = ok && running
		fmt.Printf("%-24s %s\n", c.Name, state)
	}
	if kubelet, err := p.Config.Component("kubelet"); err == nil {
		if _, running := r.Running(kubelet); running {
			fmt.Println(p.nodeStatus(ctx))
		}
	}
	return ok
}

// Manifests is where the manifests the plane applies are rendered.
func (c Config) Manifests() string { return filepath.Join(c.Out, "manifests") }

// applyLocalManifests renders artifacts/local/*.yaml (CA bundle, port and volumes' directory
// filled in) and applies them: the Namespace first, the APIServices last (after the Service they
// point at).
func (p *Plane) applyLocalManifests(ctx context.Context) error {
	rendered, err := p.Config.renderLocalManifests(p.realNode)
	if err != nil {
		return err
	}
	cl, err := p.cluster()
	if err != nil {
		return err
	}
	p.Log("applying artifacts/local")
	if p.Config.Mode == ModeChart {
		var hostOnly []string
		rendered, hostOnly = splitFunc(rendered, hostModeManifest)
		if err := p.deleteHostModeObjects(ctx, cl, hostOnly); err != nil {
			return err
		}
	}
	// A StorageClass's provisioner cannot change: the class of a plane kept from before
	// local-path-provisioner (kube-controller-manager's host-path provisioner) is made anew.
	sc, err := cl.kube.StorageV1().StorageClasses().Get(ctx, "standard", metav1.GetOptions{})
	if err == nil && sc.Provisioner != "rancher.io/local-path" {
		if err := cl.kube.StorageV1().StorageClasses().Delete(ctx, "standard", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		fmt.Fprintln(os.Stderr, `    storageclass.storage.k8s.io "standard" deleted`)
	}
	// kubectl's client-side apply, as users apply them: its last-applied annotation lets a later
	// kubectl apply of the same objects (the deploy manifests' Service and APIServices, say)
	// replace what this one set instead of merging into it.
	args := []string{"--kubeconfig", p.Config.AdminKubeconfig(), "--request-timeout=20s", "apply"}
	for _, f := range rendered {
		args = append(args, "-f", f)
	}
	cmd := exec.CommandContext(ctx, p.Config.Tool("kubectl"), args...)
	out, err := cmd.Output()
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fmt.Fprintf(os.Stderr, "    %s\n", l)
	}
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Stderr.Write(exit.Stderr)
		}
		return fmt.Errorf("kubectl apply of artifacts/local: %w", err)
	}
	return nil
}

// renderLocalManifests writes artifacts/local/*.yaml, filled in, to Manifests and returns them in
// the order they are applied. With realNode, local-path-provisioner's helper pods run there (they
// open the volumes' directories to the pods' users).
func (c Config) renderLocalManifests(realNode bool) ([]string, error) {
	if err := os.MkdirAll(c.Manifests(), 0o755); err != nil {
		return nil, err
	}
	old, _ := filepath.Glob(filepath.Join(c.Manifests(), "*.yaml"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return nil, err
		}
	}
	ca, err := os.ReadFile(c.Cert("ca.crt"))
	if err != nil {
		return nil, err
	}
	sources, err := filepath.Glob(filepath.Join(c.Root, "artifacts/local/*.yaml"))
	if err != nil {
		return nil, err
	}
	fill := strings.NewReplacer(
		"@CA_BUNDLE@", base64.StdEncoding.EncodeToString(ca),
		"@SANDBOX_APISERVER_PORT@", fmt.Sprint(c.SandboxAPIServerPort),
		"@VOLUMES_DIR@", c.Volumes(),
		"@HELPER_NODE_SELECTOR@", map[bool]string{true: "{type: real}", false: "{}"}[realNode])
	var out []string
	for _, src := range sources {
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		dst := filepath.Join(c.Manifests(), filepath.Base(src))
		if err := writeFile(dst, []byte(fill.Replace(string(data)))); err != nil {
			return nil, err
		}
		out = append(out, dst)
	}
	return applyOrder(out), nil
}

// applyOrder puts namespace.yaml first and apiservices.yaml last, the others between in name
// order.
func applyOrder(files []string) []string {
	rank := func(f string) int {
		switch filepath.Base(f) {
		case "namespace.yaml":
			return 0
		case "apiservices.yaml":
			return 2
		}
		return 1
	}
	out := slices.Clone(files)
	slices.SortStableFunc(out, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return out
}

// splitFunc splits files into those in does not match and those it does.
func splitFunc(files []string, in func(string) bool) (out, matched []string) {
	for _, f := range files {
		if in(f) {
			matched = append(matched, f)
		} else {
			out = append(out, f)
		}
	}
	return out, matched
}

// writeFile writes data to path, making its directory.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
