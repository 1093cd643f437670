// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/hostchange"
)

// The node's records come in the order its changes are made, so that undoing them newest first
// kills the pods' processes before unmounting what they hold, unmounts before removing the
// directories, and sets the sysctls back last.
func TestNodeChangesOrder(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"memory", "cpu,cpuacct", "pids"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// cpu and cpuacct are links to cpu,cpuacct: one hierarchy.
	os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu"))
	cfg := Config{Out: "/repo/_output/local", NodeBridge: "sandbox0", NodePodCIDR: netip.MustParsePrefix("10.88.0.0/24")}

	changes := cfg.nodeChanges(root)
	last := map[hostchange.Kind]int{}
	first := map[hostchange.Kind]int{}
	var cgroups []string
	for i, c := range changes {
		if _, ok := first[c.Kind]; !ok {
			first[c.Kind] = i
		}
		last[c.Kind] = i
		if c.Kind == hostchange.Cgroup {
			cgroups = append(cgroups, c.Name)
		}
	}
	order := []hostchange.Kind{hostchange.Sysctl, hostchange.Ipsets, hostchange.IptablesChains, hostchange.Interface, hostchange.Path, hostchange.Mounts, hostchange.Cgroup}
	for i := 1; i < len(order); i++ {
		if last[order[i-1]] > first[order[i]] {
			t.Errorf("a %s record comes after a %s record: %v", order[i-1], order[i], changes)
		}
	}
	want := []string{filepath.Join(root, "cpu,cpuacct/kubepods"), filepath.Join(root, "memory/kubepods"), filepath.Join(root, "pids/kubepods")}
	if !slices.Equal(cgroups, want) {
		t.Errorf("cgroups %v, want %v", cgroups, want)
	}
	if got := cfg.nodeAddr(); got != "10.88.0.1/24" {
		t.Errorf("node address %s, want 10.88.0.1/24", got)
	}
	if !slices.ContainsFunc(changes, func(c hostchange.Change) bool {
		return c.Kind == hostchange.Path && c.Name == "/repo/_output/local/node"
	}) {
		t.Error("the node's own directory is not recorded")
	}
}

// On cgroup v2 (no per-controller hierarchies) kubelet's cgroup is at the root.
func TestNodeCgroupV2(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
	os.Mkdir(filepath.Join(root, "system.slice"), 0o755)
	if got := cgroupDirs(root); !slices.Equal(got, []string{filepath.Join(root, "kubepods")}) {
		t.Errorf("cgroup v2 dirs %v", got)
	}
}
