// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostSnapshot is what a user would compare on the machine before the plane starts and after
// make down: the sysctls the node sets, the host paths it uses, every mount point, network
// interface and top-level cgroup, the iptables rules, the IP sets, and the plane's directories.
type hostSnapshot map[string][]string

// The sysctls and host paths the real node changes (docs/local-plane.md).
var (
	nodeSysctls = []string{"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
		"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes", "net.ipv4.ip_forward"}
	nodeHostPaths = []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/var/lib/cni",
		"/run/containerd", "/tmp/hostpath_pv"}
)

// iptablesCounters are the packet and byte counters of iptables-save, which move on their own.
var iptablesCounters = regexp.MustCompile(`\[[0-9]+:[0-9]+\]`)

func takeHostSnapshot(t *testing.T) hostSnapshot {
	t.Helper()
	s := hostSnapshot{}
	for _, name := range nodeSysctls {
		b, err := os.ReadFile(filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/")))
		s["sysctl"] = append(s["sysctl"], fmt.Sprintf("%s=%s (%v)", name, strings.TrimSpace(string(b)), err != nil))
	}
	for _, p := range append(slices.Clone(nodeHostPaths), filepath.Join(repoRoot, "_output/local/node"),
		filepath.Join(repoRoot, "_output/local/volumes"), filepath.Join(repoRoot, "_output/local/host-changes.json")) {
		if _, err := os.Lstat(p); err == nil {
			s["path"] = append(s["path"], p)
		}
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(mountinfo)), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			s["mount"] = append(s["mount"], f[4])
		}
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifaces {
		s["interface"] = append(s["interface"], i.Name)
	}
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range append(hierarchies, "/sys/fs/cgroup") {
		entries, _ := os.ReadDir(h)
		for _, e := range entries {
			if e.IsDir() {
				s["cgroup"] = append(s["cgroup"], filepath.Join(h, e.Name()))
			}
		}
	}
	for _, cmd := range []string{"iptables-save", "ip6tables-save"} {
		if _, err := exec.LookPath(cmd); err != nil {
			continue
		}
		out, err := exec.Command(cmd).Output()
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		for line := range strings.SplitSeq(string(out), "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				s[cmd] = append(s[cmd], iptablesCounters.ReplaceAllString(line, ""))
			}
		}
	}
	// kube-router's firewall matches pods by IP sets.
	if _, err := exec.LookPath("ipset"); err == nil {
		out, err := exec.Command("ipset", "list", "-n").Output()
		if err != nil {
			t.Fatalf("ipset list -n: %v", err)
		}
		s["ipset"] = strings.Fields(string(out))
	}
	for k := range s {
		slices.Sort(s[k])
		s[k] = slices.Compact(s[k])
	}
	return s
}

// diff lists what differs between two snapshots, as "+ added" and "- removed" lines by kind.
func (s hostSnapshot) diff(after hostSnapshot) []string {
	var out []string
	kinds := map[string]bool{}
	for k := range s {
		kinds[k] = true
	}
	for k := range after {
		kinds[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		for _, v := range s[k] {
			if !slices.Contains(after[k], v) {
				out = append(out, fmt.Sprintf("- %s %s", k, v))
			}
		}
		for _, v := range after[k] {
			if !slices.Contains(s[k], v) {
				out = append(out, fmt.Sprintf("+ %s %s", k, v))
			}
		}
	}
	return out
}

// expectNoPlaneLeft fails t for each mark of the plane in s: its bridge, kubelet's cgroups, a
// mount or directory of its own, a chain of kubelet, kube-proxy, kube-router or the CNI plugins,
// an IP set of kube-router.
func expectNoPlaneLeft(t *testing.T, s hostSnapshot) {
	t.Helper()
	marks := map[string][]string{
		"interface":      {"sandbox0"},
		"cgroup":         {"/kubepods"},
		"mount":          {filepath.Join(repoRoot, "_output")},
		"path":           {filepath.Join(repoRoot, "_output"), "/var/lib/kubelet", "/var/log/pods"},
		"iptables-save":  {"CNI-", "KUBE-"},
		"ip6tables-save": {"CNI-", "KUBE-"},
		"ipset":          {"KUBE-"},
	}
	for kind, subs := range marks {
		for _, v := range s[kind] {
			for _, sub := range subs {
				if strings.Contains(v, sub) {
					t.Errorf("the plane left %s %s", kind, v)
				}
			}
		}
	}
}

// hostPortPod is a pod on the real node with a hostPort: the portmap CNI plugin makes its NAT
// chains for it.
const hostPortPod = `apiVersion: v1
kind: Pod
metadata: {name: hostport}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - {name: web, image: localhost/sandbox:local, command: [python3, -m, http.server, "8080"],
     ports: [{containerPort: 8080, hostPort: 18931}], readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}}
`

// TestPlaneStopRestoresHost: make down leaves the host as it was before the plane started (the
// sysctls, paths, mounts, interfaces, cgroups, iptables rules and IP sets: portmap's NAT chains,
// kube-proxy's Services and kube-router's NetworkPolicy chains and sets included),
// and the plane's volumes live in its own owner-only directory: a volume's data outlives a
// suspend and resume, and is gone after make down. It stops and starts the plane, so it does not
// run in parallel with the others, and it leaves the plane running as it found it.
func TestPlaneStopRestoresHost(t *testing.T) {
	requireRealNode(t)
	node := strings.TrimSpace(kubectl(t, "get", "nodes", "-l", "type=real", "-o", "jsonpath={.items[0].metadata.name}"))
	volumes := filepath.Join(repoRoot, "_output/local/volumes")

	localUpT(t, 3*time.Minute, "stop")
	before := takeHostSnapshot(t)
	// The plane ran before this test (TestMain started it): nothing of it may be left after a stop.
	expectNoPlaneLeft(t, before)
	localUpT(t, 10*time.Minute, "start")
	stopped := false
	defer func() {
		if stopped {
			localUpT(t, 10*time.Minute, "start")
		}
	}()

	// The volumes' directory: the plane owner's alone.
	info, err := os.Stat(volumes)
	if err != nil {
		t.Fatal(err)
	}
	if st := info.Sys().(*syscall.Stat_t); int(st.Uid) != os.Getuid() || info.Mode().Perm() != 0o700 || !info.IsDir() {
		t.Errorf("%s: owner %d, mode %v; want a directory of uid %d, mode 0700", volumes, st.Uid, info.Mode(), os.Getuid())
	}

	ns, _, client := realNodeTenant(t)
	sb := claimReal(t, client, ns, "volume", "data")
	runOK(t, sb, "sh", "-c", "echo kept > /work/file")
	pluginOK(t, "", "-n", ns, "suspend", "data")
	kubectl(t, "wait", "-n", ns, "--for=delete", "pod/"+sb.SandboxName(), "--timeout=60s")
	pluginOK(t, "", "-n", ns, "resume", "data")
	if got := runOK(t, sb, "cat", "/work/file"); got != "kept\n" {
		t.Errorf("/work/file after suspend and resume: %q; want kept", got)
	}
	pv := jsonpath(t, ns, "{.spec.volumeName}", "pvc", "work-"+sb.SandboxName())
	dir := jsonpath(t, "", "{.spec.hostPath.path}", "pv", pv)
	if !strings.HasPrefix(dir, volumes+"/") {
		t.Errorf("volume %s lives at %s; want under %s", pv, dir, volumes)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "file")); err != nil || string(b) != "kept\n" {
		t.Errorf("the volume's file on the host: %q, %v; want kept", b, err)
	}

	// Pod Security's baseline refuses a hostPort; an administrator allows it here.
	kubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=privileged")
	applyYAML(t, ns, fmt.Sprintf(hostPortPod, node))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "pod/hostport", "--timeout=60s")
	during := takeHostSnapshot(t)
	if _, err := exec.LookPath("iptables-save"); err == nil {
		// portmap's, kube-proxy's and kube-router's chains, and kube-router's sets for the
		// sandbox's NetworkPolicy.
		for _, chain := range []string{"CNI-HOSTPORT-DNAT", "KUBE-SERVICES", "KUBE-ROUTER-FORWARD"} {
			if !slices.ContainsFunc(during["iptables-save"], func(l string) bool { return strings.Contains(l, ":"+chain+" ") }) {
				t.Errorf("no %s chain while the plane runs: the test does not exercise what makes it", chain)
			}
		}
		if !slices.ContainsFunc(during["ipset"], func(s string) bool { return strings.HasPrefix(s, "KUBE-") }) {
			t.Errorf("no IP set of kube-router while a sandbox's NetworkPolicy is enforced: %v", during["ipset"])
		}
	} else {
		t.Log("iptables is not installed: portmap makes no chains, and none are compared")
	}
	if len(before.diff(during)) == 0 {
		t.Error("the host is unchanged while the plane runs: the comparison proves nothing")
	}

	out := localUpT(t, 3*time.Minute, "stop")
	stopped = true
	if !strings.Contains(out, "volumes: removed") {
		t.Errorf("make down does not say it removed the volumes")
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the volume's directory %s is left after make down", dir)
	}
	after := takeHostSnapshot(t)
	expectNoPlaneLeft(t, after)
	if d := before.diff(after); len(d) > 0 {
		t.Errorf("the host after make down differs from before the start:\n%s", indent(strings.Join(d, "\n")))
	}
	// A second stop finds nothing to undo and changes nothing.
	localUpT(t, 3*time.Minute, "stop")
	if d := before.diff(takeHostSnapshot(t)); len(d) > 0 {
		t.Errorf("the host after a second make down differs:\n%s", indent(strings.Join(d, "\n")))
	}
}
