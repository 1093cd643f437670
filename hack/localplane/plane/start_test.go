// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// componentSteps lists the components of steps, in order.
func componentSteps(steps []step) []string {
	var out []string
	for _, s := range steps {
		if s.component != "" {
			out = append(out, s.component)
		}
	}
	return out
}

// Every component of the table starts once, in the order of the table, so that stop (the table
// backwards) undoes the start; a component added to the table and not to the start order fails
// here.
func TestStartOrderFollowsTheTable(t *testing.T) {
	p := &Plane{Config: Config{Root: "/repo", Out: "/repo/_output/local"}}
	var table []string
	for _, c := range p.Config.Components() {
		table = append(table, c.Name)
	}
	if got := componentSteps(p.startOrder()); !slices.Equal(got, table) {
		t.Errorf("start order's components %v, want the table's %v", got, table)
	}
	for _, s := range p.startOrder() {
		if s.component == "" && (s.name == "" || s.do == nil) {
			t.Errorf("step %+v: neither a component nor a named step", s)
		}
	}
}

// What start runs given the real node and SKIP_SANDBOX_APISERVER.
func TestStepsToRun(t *testing.T) {
	cases := []struct {
		node, skipServer bool
		want             []string
	}{
		{true, false, []string{"etcd", "kube-apiserver", "kube-controller-manager", "local-path-provisioner", "kube-scheduler",
			"kwok", "kwok-guard", "containerd", "kubelet", "kube-proxy", "kube-router", "coredns", "kubernetes-service",
			"sandbox-etcd", "sandbox-apiserver"}},
		{false, false, []string{"etcd", "kube-apiserver", "kube-controller-manager", "local-path-provisioner", "kube-scheduler",
			"kwok", "kwok-guard", "sandbox-etcd", "sandbox-apiserver"}},
		{false, true, []string{"etcd", "kube-apiserver", "kube-controller-manager", "local-path-provisioner", "kube-scheduler",
			"kwok", "kwok-guard", "sandbox-etcd"}},
	}
	for _, tc := range cases {
		p := &Plane{Config: Config{Root: "/repo", Out: "/repo/_output/local", SkipSandboxAPIServer: tc.skipServer}}
		steps, err := p.stepsToRun(tc.node)
		if err != nil {
			t.Fatal(err)
		}
		if got := componentSteps(steps); !slices.Equal(got, tc.want) {
			t.Errorf("node=%v skip=%v: components %v, want %v", tc.node, tc.skipServer, got, tc.want)
		}
		waits := slices.ContainsFunc(steps, func(s step) bool { return s.name == "APIServices Available" })
		if waits == tc.skipServer {
			t.Errorf("node=%v skip=%v: waits for the APIServices: %v", tc.node, tc.skipServer, waits)
		}
	}
}

// What start-sandbox-apiserver runs in each mode: the host process after sandbox-etcd, or the
// chart's install; never the other mode's steps.
func TestServerSteps(t *testing.T) {
	names := func(steps []step) []string {
		var out []string
		for _, s := range steps {
			out = append(out, s.component+s.name)
		}
		return out
	}
	for mode, want := range map[string][]string{
		ModeHost:  {"sandbox-etcd", "sandbox-apiserver", "APIServices Available", "OpenAPI served"},
		ModeChart: {"helm install the chart", "APIServices Available", "OpenAPI served"},
	} {
		p := &Plane{Config: Config{Root: "/repo", Out: "/repo/_output/local", Mode: mode}}
		if got := names(p.serverSteps()); !slices.Equal(got, want) {
			t.Errorf("mode %s: steps %v, want %v", mode, got, want)
		}
	}
}

func TestConfigKnobs(t *testing.T) {
	cfg, err := ConfigFromEnv("/repo")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LocalNode != NodeAuto || cfg.KwokNodes != 3 || cfg.PortForwardFirst != 18000 || cfg.PortForwardLast != 18099 ||
		cfg.SandboxWorkDir != "/repo/_output/local/sandbox-work" || cfg.APIServiceTimeout != 120*time.Second || cfg.SkipSandboxAPIServer {
		t.Errorf("defaults %+v", cfg)
	}
	t.Setenv("LOCAL_NODE", "maybe")
	t.Setenv("KWOK_NODES", "-1")
	t.Setenv("PORT_FORWARD_PORTS", "18100-18000")
	t.Setenv("APISERVICE_TIMEOUT", "soon")
	_, err = ConfigFromEnv("/repo")
	for _, knob := range []string{"LOCAL_NODE", "KWOK_NODES", "PORT_FORWARD_PORTS", "APISERVICE_TIMEOUT"} {
		if err == nil || !strings.Contains(err.Error(), knob) {
			t.Errorf("bad %s: %v; want it named", knob, err)
		}
	}
	t.Setenv("LOCAL_NODE", "false")
	t.Setenv("KWOK_NODES", "5")
	t.Setenv("PORT_FORWARD_PORTS", "20000-20001")
	t.Setenv("APISERVICE_TIMEOUT", "30")
	t.Setenv("SKIP_SANDBOX_APISERVER", "1")
	cfg, err = ConfigFromEnv("/repo")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LocalNode != NodeOff || cfg.KwokNodes != 5 || cfg.PortForwardFirst != 20000 || cfg.PortForwardLast != 20001 ||
		cfg.APIServiceTimeout != 30*time.Second || !cfg.SkipSandboxAPIServer {
		t.Errorf("set %+v", cfg)
	}
}

func TestWhyNoNode(t *testing.T) {
	cases := []struct {
		host nodeHost
		want string
	}{
		{nodeHost{os: "linux", uid: 0}, ""},
		{nodeHost{os: "darwin", uid: 0}, "needs Linux"},
		{nodeHost{os: "linux", uid: 1000}, "needs root"},
		{nodeHost{os: "linux", uid: 0, missing: []string{"kubelet", "CNI-bridge"}}, "missing kubelet CNI-bridge (run make tools as root"},
		{nodeHost{os: "linux", uid: 0, foreignKubelet: true}, "another kubelet runs"},
	}
	for _, tc := range cases {
		got := whyNoNode(tc.host)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.host, got, tc.want)
		}
	}
}

func TestNormalizeImage(t *testing.T) {
	for ref, want := range map[string]string{
		"busybox":                      "docker.io/library/busybox:latest",
		"python:3.13":                  "docker.io/library/python:3.13",
		"ghcr.io/example/agent":        "ghcr.io/example/agent:latest",
		"ghcr.io/example/agent:v1":     "ghcr.io/example/agent:v1",
		"example/agent:v1":             "docker.io/example/agent:v1",
		"localhost/sandbox:local":      "localhost/sandbox:local",
		"registry:5000/agent":          "registry:5000/agent:latest",
		"registry.example.com/agent:1": "registry.example.com/agent:1",
	} {
		if got := normalizeImage(ref); got != want {
			t.Errorf("normalizeImage(%q) = %q, want %q", ref, got, want)
		}
	}
}

// The pull policy names every locally served image and is two valid objects.
func TestPullPolicyManifest(t *testing.T) {
	data, err := pullPolicyManifest()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(data)
	if err != nil || len(objs) != 2 || objs[0].GetKind() != "MutatingAdmissionPolicy" || objs[1].GetKind() != "MutatingAdmissionPolicyBinding" {
		t.Fatalf("objects %v, %v", objs, err)
	}
	for _, img := range append(slices.Clone(nodeImageAliases), nodeImagesLocal...) {
		if !strings.Contains(string(data), "'"+img+"'") {
			t.Errorf("%s not in the policy", img)
		}
	}
}

// kwok's streams forward every port of the range to the same port at kwok's address.
func TestWriteKwokStreams(t *testing.T) {
	root := t.TempDir()
	cfg := Config{Root: root, Out: filepath.Join(root, "_output/local"), SandboxWorkDir: filepath.Join(root, "work"),
		PortForwardFirst: 18000, PortForwardLast: 18002, KwokNodeIP: netip.MustParseAddr("10.89.0.1"), KwokExecUID: 65534}
	if err := cfg.writeKwokStreams(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "work/container.log")); err != nil {
		t.Error(err)
	}
	data, err := os.ReadFile(cfg.KwokStreams())
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(data)
	if err != nil || len(objs) != 4 {
		t.Fatalf("%d objects, %v:\n%s", len(objs), err, data)
	}
	var fwd struct {
		Spec struct {
			Forwards []struct {
				Ports  []int
				Target struct {
					Address string
					Port    int
				}
			}
		}
	}
	b, _ := objs[3].MarshalJSON()
	if err := yaml.Unmarshal(b, &fwd); err != nil {
		t.Fatal(err)
	}
	if len(fwd.Spec.Forwards) != 3 {
		t.Fatalf("forwards %+v", fwd.Spec.Forwards)
	}
	for i, f := range fwd.Spec.Forwards {
		if p := 18000 + i; !slices.Equal(f.Ports, []int{p}) || f.Target.Address != "10.89.0.1" || f.Target.Port != p {
			t.Errorf("forward %d: %+v", i, f)
		}
	}
	// As root, exec runs as the unprivileged user, who owns the work directory.
	if os.Geteuid() != 0 {
		return
	}
	var clusterExec struct {
		Spec struct {
			Execs []struct {
				Local struct {
					WorkDir         string
					SecurityContext struct{ RunAsUser, RunAsGroup *int64 }
				}
			}
		}
	}
	b, _ = objs[0].MarshalJSON()
	if err := yaml.Unmarshal(b, &clusterExec); err != nil || len(clusterExec.Spec.Execs) != 1 {
		t.Fatalf("ClusterExec %s: %v", b, err)
	}
	if sc := clusterExec.Spec.Execs[0].Local.SecurityContext; sc.RunAsUser == nil || *sc.RunAsUser != 65534 || sc.RunAsGroup == nil || *sc.RunAsGroup != 65534 {
		t.Errorf("ClusterExec runs as %+v; want 65534:65534", sc)
	}
	info, err := os.Stat(cfg.SandboxWorkDir)
	if err != nil {
		t.Fatal(err)
	}
	if st := info.Sys().(*syscall.Stat_t); st.Uid != 65534 || info.Mode().Perm() != 0o700 {
		t.Errorf("the work directory: owner %d, mode %v; want 65534, 0700", st.Uid, info.Mode().Perm())
	}
}

// Another number of fake Nodes than three is stamped from the first of nodes.yaml.
func TestKwokNodeManifests(t *testing.T) {
	root := t.TempDir()
	nodes := "# comment\napiVersion: v1\nkind: Node\nmetadata:\n  name: kwok-node-0\n  labels: {kubernetes.io/hostname: kwok-node-0}\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: kwok-node-1\n"
	if err := writeFile(filepath.Join(root, "artifacts/local/kwok/nodes.yaml"), []byte(nodes)); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int][]string{3: {"kwok-node-0", "kwok-node-1"}, 4: {"kwok-node-0", "kwok-node-1", "kwok-node-2", "kwok-node-3"}, 0: nil} {
		cfg := Config{Root: root, KwokNodes: n}
		data, err := cfg.kwokNodeManifests()
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeManifests(data)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range objs {
			names = append(names, o.GetName())
			if h := o.GetLabels()["kubernetes.io/hostname"]; h != "" && h != o.GetName() {
				t.Errorf("%s carries hostname %s", o.GetName(), h)
			}
		}
		if !slices.Equal(names, want) {
			t.Errorf("KWOK_NODES=%d: %v, want %v", n, names, want)
		}
	}
}

func TestApplyOrder(t *testing.T) {
	got := applyOrder([]string{"/m/apiservices.yaml", "/m/rbac.yaml", "/m/local-path.yaml", "/m/namespace.yaml", "/m/service.yaml"})
	want := []string{"/m/namespace.yaml", "/m/local-path.yaml", "/m/rbac.yaml", "/m/service.yaml", "/m/apiservices.yaml"}
	if !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

func TestEmbeddedEtcd(t *testing.T) {
	if !embeddedEtcd([]string{"sandbox-apiserver", "--secure-port=8443", ""}) {
		t.Error("a server without --etcd-servers runs an embedded etcd")
	}
	if embeddedEtcd([]string{"sandbox-apiserver", "--etcd-servers=https://127.0.0.1:2381", ""}) {
		t.Error("a server with --etcd-servers does not")
	}
}

func TestPoll(t *testing.T) {
	calls := 0
	if err := poll(context.Background(), time.Millisecond, time.Minute, func() (bool, error) {
		calls++
		return calls == 3, nil
	}); err != nil || calls != 3 {
		t.Errorf("poll: %v after %d calls, want done after 3", err, calls)
	}
	if err := poll(context.Background(), time.Millisecond, 20*time.Millisecond, func() (bool, error) { return false, nil }); !errorsIsTimeout(err) {
		t.Errorf("never done: %v, want a timeout", err)
	}
	boom := errors.New("boom")
	if err := poll(context.Background(), time.Millisecond, time.Minute, func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("failing: %v, want its error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := poll(ctx, time.Millisecond, time.Minute, func() (bool, error) { return false, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted: %v, want context.Canceled", err)
	}
}

func TestOpenAPIMissing(t *testing.T) {
	all := func(group, version string) []byte {
		var b strings.Builder
		for _, k := range openAPIKinds {
			if k.Group == group {
				b.WriteString(`{"x-kubernetes-group-version-kind":[{"group":"` + k.Group + `","kind":"` + k.Kind + `","version":"` + version + `"}]}`)
			}
		}
		return []byte(b.String())
	}
	v2 := append(append(all("agents.x-k8s.io", "v1beta1"), all("extensions.agents.x-k8s.io", "v1beta1")...),
		append(all("agents.x-k8s.io", "v1alpha1"), all("extensions.agents.x-k8s.io", "v1alpha1")...)...)
	if got := openAPIMissing(v2, all); len(got) != 0 {
		t.Errorf("all there: missing %v", got)
	}
	noAlphaExtensions := func(group, version string) []byte {
		if group == "extensions.agents.x-k8s.io" && version == "v1alpha1" {
			return nil
		}
		return all(group, version)
	}
	want := []string{"v2 agents.x-k8s.io/v1beta1 Sandbox", "v2 extensions.agents.x-k8s.io/v1beta1 SandboxClaim",
		"v2 extensions.agents.x-k8s.io/v1beta1 SandboxTemplate", "v2 extensions.agents.x-k8s.io/v1beta1 SandboxWarmPool",
		"v2 agents.x-k8s.io/v1alpha1 Sandbox", "v2 extensions.agents.x-k8s.io/v1alpha1 SandboxClaim",
		"v2 extensions.agents.x-k8s.io/v1alpha1 SandboxTemplate", "v2 extensions.agents.x-k8s.io/v1alpha1 SandboxWarmPool",
		"v3 extensions.agents.x-k8s.io/v1alpha1 SandboxClaim", "v3 extensions.agents.x-k8s.io/v1alpha1 SandboxTemplate",
		"v3 extensions.agents.x-k8s.io/v1alpha1 SandboxWarmPool"}
	if got := openAPIMissing(nil, noAlphaExtensions); !slices.Equal(got, want) {
		t.Errorf("missing %v\nwant %v", got, want)
	}
}

// A component that runs is left alone (what it reads is not written again, nothing depending on
// it is redone); one that does not run has its prepare run first, and a failing prepare stops the
// start before anything is launched.
func TestStartComponentGivenWhatRuns(t *testing.T) {
	root := t.TempDir()
	cfg := Config{Root: root, Out: filepath.Join(root, "_output/local"), StartTimeout: 5 * time.Second, StopTimeout: time.Second}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	// The plane's etcd is a copy of sleep: a process of the component's binary.
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cfg.ToolsBin(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Tool("etcd"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cfg.Tool("etcd"), "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	t.Cleanup(func() { cmd.Process.Kill() })
	if err := writeFile(cfg.Pidfile("etcd"), []byte(strconv.Itoa(cmd.Process.Pid))); err != nil {
		t.Fatal(err)
	}
	p := &Plane{Config: cfg, Log: t.Logf}
	var ran []string
	record := func(what string, err error) func(context.Context) error {
		return func(context.Context) error { ran = append(ran, what); return err }
	}
	if err := p.startComponent(context.Background(), step{component: "etcd", prepare: record("prepare etcd", nil),
		after: record("after etcd", nil)}); err != nil {
		t.Fatal(err)
	}
	if len(ran) != 0 {
		t.Errorf("a running etcd: ran %v, want nothing", ran)
	}
	boom := errors.New("cannot write its configuration")
	err = p.startComponent(context.Background(), step{component: "kube-apiserver", prepare: record("prepare kube-apiserver", boom),
		after: record("after kube-apiserver", nil)})
	if !errors.Is(err, boom) || !slices.Equal(ran, []string{"prepare kube-apiserver"}) {
		t.Errorf("stopped kube-apiserver with a failing prepare: %v, ran %v", err, ran)
	}
	if _, err := os.Stat(cfg.Pidfile("kube-apiserver")); err == nil {
		t.Error("kube-apiserver launched after its prepare failed")
	}
}

// A listener holds a port for a process binding it on an address only on that address or on
// every address: socat on the node's address does not hold kube-apiserver's loopback port.
func TestCollides(t *testing.T) {
	loopback := netip.MustParseAddr("127.0.0.1")
	for _, tc := range []struct {
		addr     netip.Addr
		listener string // as /proc/net/tcp and tcp6 print it
		want     bool
	}{
		{loopback, "0100007F", true},                          // 127.0.0.1
		{loopback, "0100580A", false},                         // 10.88.0.1
		{loopback, "00000000", true},                          // 0.0.0.0
		{loopback, "00000000000000000000000000000000", true},  // ::
		{loopback, "0000000000000000FFFF00000100007F", true},  // ::ffff:127.0.0.1
		{loopback, "00000000000000000000000001000000", false}, // ::1
		{netip.Addr{}, "0100580A", true},                      // unset: any address
		{netip.MustParseAddr("10.88.0.1"), "0100580A", true},  // the node's own
	} {
		if got := collides(tc.addr, tc.listener); got != tc.want {
			t.Errorf("collides(%v, %s) = %v, want %v", tc.addr, tc.listener, got, tc.want)
		}
	}
}
