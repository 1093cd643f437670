// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/hostchange"
)

// JournalPath is the file of the journal of the real node's host changes.
func (c Config) JournalPath() string { return filepath.Join(c.Out, "host-changes.json") }

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// nodeAddr is the node's address on the bridge, in CIDR notation.
func (c Config) nodeAddr() string {
	return netip.PrefixFrom(c.NodePodCIDR.Addr().Next(), c.NodePodCIDR.Bits()).String()
}

// The node's host changes. This list is the one place that says what the real node does to the
// machine; docs/local-plane.md has it as a table.
var (
	// nodeSysctls: what kubelet sets at every start (its kernel defaults), and the bridge
	// plugin's forwarding.
	nodeSysctls = []string{"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
		"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes", "net.ipv4.ip_forward"}
	// nodeHostPaths: paths the node's processes create whatever directories they are given:
	// kubelet's device plugins and container log links, libcni's result cache, containerd's shim
	// sockets.
	nodeHostPaths = []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/var/lib/cni", "/run/containerd"}
	// nodeCgroup is kubelet's cgroup of pods, in every cgroup v1 hierarchy (or the v2 root).
	nodeCgroup = "kubepods"
	// nodeIptables: the tables and chain prefixes of kubelet's chains (KUBE-*: a hint and a
	// canary, kube-proxy's Services, kube-router's NetworkPolicies) and the CNI plugins' (CNI-*:
	// portmap's hostPort NAT, the bridge's masquerade).
	nodeIptablesCommands = []string{"iptables", "ip6tables"}
	nodeIptablesTables   = []string{"filter", "nat", "mangle"}
	nodeIptablesPrefixes = []string{"KUBE-", "CNI-"}
	// nodeIpsetPrefixes: the prefix of the IP sets kube-router's firewall matches pods by.
	nodeIpsetPrefixes = []string{"KUBE-"}
)

// nodeChanges lists the records of the node's changes in the order they are made, so undoing
// them newest first tears down in the right order: the pods' processes (cgroups) before the
// mounts they hold, the mounts before the directories, those before the bridge, chains and
// sysctls. The bridge is the one the plane makes itself (recordNode).
func (c Config) nodeChanges(cgroupRoot string) []hostchange.Change {
	var out []hostchange.Change
	for _, s := range nodeSysctls {
		by := "kubelet"
		if s == "net.ipv4.ip_forward" {
			by = "the bridge plugin"
		}
		out = append(out, hostchange.Change{Kind: hostchange.Sysctl, Name: s, By: by})
	}
	// Before the chains: undone after them, once no rule matches the sets.
	out = append(out, hostchange.Change{Kind: hostchange.Ipsets, Name: "ipset", Prefixes: nodeIpsetPrefixes, By: "kube-router"})
	for _, cmd := range nodeIptablesCommands {
		for _, table := range nodeIptablesTables {
			out = append(out, hostchange.Change{Kind: hostchange.IptablesChains, Name: cmd + " " + table,
				Prefixes: nodeIptablesPrefixes, By: "kubelet, portmap, kube-proxy, kube-router"})
		}
	}
	// The bridge, which recordNode makes as it records it.
	out = append(out, hostchange.Change{Kind: hostchange.Interface, Name: c.NodeBridge, By: "local-plane"})
	paths := append([]string{c.NodeDir()}, nodeHostPaths...)
	for _, p := range paths {
		out = append(out, hostchange.Change{Kind: hostchange.Path, Name: p, By: "the node"})
	}
	for _, p := range paths {
		out = append(out, hostchange.Change{Kind: hostchange.Mounts, Name: p, By: "containerd, kubelet"})
	}
	for _, d := range cgroupDirs(cgroupRoot) {
		out = append(out, hostchange.Change{Kind: hostchange.Cgroup, Name: d, By: "kubelet"})
	}
	return out
}

// cgroupDirs is where kubelet's pods cgroup is made: in every cgroup v1 hierarchy, or at the
// cgroup v2 root.
func cgroupDirs(root string) []string {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		if _, err := os.Stat(filepath.Join(root, "memory")); err != nil {
			return []string{filepath.Join(root, nodeCgroup)}
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		// cpu,cpuacct and its links cpu and cpuacct are one hierarchy: the links are skipped.
		if e.IsDir() && e.Type()&os.ModeSymlink == 0 && !strings.HasPrefix(e.Name(), ".") {
			dirs = append(dirs, filepath.Join(root, e.Name(), nodeCgroup))
		}
	}
	return dirs
}
