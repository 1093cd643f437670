// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/hostchange"
)

// nodeConfig is what the real node's host changes depend on: the knobs of hack/local-up.sh
// (docs/local-plane.md), read from the environment with the same defaults.
type nodeConfig struct {
	// out is the plane's directory (_output/local); the node's own is out/node.
	out string
	// bridge is the pods' bridge (NODE_BRIDGE), podCIDR their addresses (NODE_POD_CIDR): the
	// first address is the node's, on the bridge.
	bridge  string
	podCIDR netip.Prefix
	// toolsBin holds the node's binaries (containerd's runc shim among them).
	toolsBin string
	// cgroupRoot is where the cgroup hierarchies are mounted.
	cgroupRoot string
}

func nodeConfigFromEnv(root string) (nodeConfig, error) {
	c := nodeConfig{
		out:        filepath.Join(root, "_output/local"),
		bridge:     envOr("NODE_BRIDGE", "sandbox0"),
		toolsBin:   filepath.Join(root, "_output/tools/bin"),
		cgroupRoot: "/sys/fs/cgroup",
	}
	cidr := envOr("NODE_POD_CIDR", "10.88.0.0/24")
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() || p.Bits() > 30 {
		return c, fmt.Errorf("NODE_POD_CIDR: %q is not an IPv4 CIDR of at least four addresses", cidr)
	}
	c.podCIDR = p.Masked()
	return c, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (c nodeConfig) nodeDir() string     { return filepath.Join(c.out, "node") }
func (c nodeConfig) journalPath() string { return filepath.Join(c.out, "host-changes.json") }

// nodeAddr is the node's address on the bridge, in CIDR notation: the pod CIDR's first.
func (c nodeConfig) nodeAddr() string {
	return netip.PrefixFrom(c.podCIDR.Addr().Next(), c.podCIDR.Bits()).String()
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
	// canary) and the CNI plugins' (CNI-*: portmap's hostPort NAT, the bridge's masquerade).
	nodeIptablesCommands = []string{"iptables", "ip6tables"}
	nodeIptablesTables   = []string{"filter", "nat", "mangle"}
	nodeIptablesPrefixes = []string{"KUBE-", "CNI-"}
)

// nodeChanges lists the records of the node's changes in the order they are made, so undoing
// them newest first tears down in the right order: the pods' processes (cgroups) before the
// mounts they hold, the mounts before the directories, those before the bridge, chains and
// sysctls.
func (c nodeConfig) nodeChanges() []hostchange.Change {
	var out []hostchange.Change
	for _, s := range nodeSysctls {
		by := "kubelet"
		if s == "net.ipv4.ip_forward" {
			by = "the bridge plugin"
		}
		out = append(out, hostchange.Change{Kind: hostchange.Sysctl, Name: s, By: by})
	}
	for _, cmd := range nodeIptablesCommands {
		for _, table := range nodeIptablesTables {
			out = append(out, hostchange.Change{Kind: hostchange.IptablesChains, Name: cmd + " " + table,
				Prefixes: nodeIptablesPrefixes, By: "kubelet, portmap"})
		}
	}
	paths := append([]string{c.nodeDir()}, nodeHostPaths...)
	for _, p := range paths {
		out = append(out, hostchange.Change{Kind: hostchange.Path, Name: p, By: "the node"})
	}
	for _, p := range paths {
		out = append(out, hostchange.Change{Kind: hostchange.Mounts, Name: p, By: "containerd, kubelet"})
	}
	for _, d := range c.cgroupDirs() {
		out = append(out, hostchange.Change{Kind: hostchange.Cgroup, Name: d, By: "kubelet"})
	}
	return out
}

// cgroupDirs is where kubelet's pods cgroup is made: in every cgroup v1 hierarchy, or at the
// cgroup v2 root.
func (c nodeConfig) cgroupDirs() []string {
	if _, err := os.Stat(filepath.Join(c.cgroupRoot, "cgroup.controllers")); err == nil {
		if _, err := os.Stat(filepath.Join(c.cgroupRoot, "memory")); err != nil {
			return []string{filepath.Join(c.cgroupRoot, nodeCgroup)}
		}
	}
	entries, err := os.ReadDir(c.cgroupRoot)
	if err != nil {
		return nil
	}
	var dirs []string
	for _, e := range entries {
		// cpu,cpuacct and its links cpu and cpuacct are one hierarchy: the links are skipped.
		if e.IsDir() && e.Type()&os.ModeSymlink == 0 && !strings.HasPrefix(e.Name(), ".") {
			dirs = append(dirs, filepath.Join(c.cgroupRoot, e.Name(), nodeCgroup))
		}
	}
	return dirs
}
