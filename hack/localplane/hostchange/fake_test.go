// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package hostchange

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// fakeHost is a machine in memory. Paths are a set (a removal takes what is below), cgroups map
// to their processes, each iptables table is its chains and rules as iptables-save prints them.
type fakeHost struct {
	sysctls    map[string]string
	paths      map[string]bool
	mounts     []string
	interfaces map[string]string // name -> address
	cgroups    map[string][]int
	// respawn: processes that appear in a cgroup once after a kill round (a fork in flight).
	respawn map[string][]int
	killed  []int
	// busy: cgroups whose removal fails with EBUSY that many more times, no process left (the
	// kernel still letting killed ones go).
	busy     map[string]int
	tables   map[string]*savedTable // "COMMAND TABLE"
	restored []string               // the iptables-restore inputs
	// ipsets: the IP sets (nil: ipset not installed).
	ipsets map[string]bool
}

func newFakeHost() *fakeHost {
	return &fakeHost{
		sysctls:    map[string]string{},
		paths:      map[string]bool{},
		interfaces: map[string]string{},
		cgroups:    map[string][]int{},
		respawn:    map[string][]int{},
		busy:       map[string]int{},
		tables:     map[string]*savedTable{},
	}
}

func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

func (h *fakeHost) Sysctl(name string) (string, error) {
	v, ok := h.sysctls[name]
	if !ok {
		return "", os.ErrNotExist
	}
	return v, nil
}

func (h *fakeHost) SetSysctl(name, value string) error {
	if _, ok := h.sysctls[name]; !ok {
		return os.ErrNotExist
	}
	h.sysctls[name] = value
	return nil
}

func (h *fakeHost) Exists(path string) (bool, error) {
	if _, ok := h.cgroups[path]; ok {
		return true, nil
	}
	return h.paths[path], nil
}

func (h *fakeHost) RemoveAll(path string) error {
	for _, m := range h.mounts {
		if under(m, path) {
			return fmt.Errorf("%s is mounted below %s: rm --one-file-system leaves it", m, path)
		}
	}
	for p := range h.paths {
		if under(p, path) {
			delete(h.paths, p)
		}
	}
	return nil
}

func (h *fakeHost) MountsUnder(dir string) ([]string, error) {
	var out []string
	for _, m := range h.mounts {
		if under(m, dir) {
			out = append(out, m)
		}
	}
	return out, nil
}

func (h *fakeHost) Unmount(target string) error {
	for _, m := range h.mounts {
		if m != target && strings.HasPrefix(m, target+"/") {
			return fmt.Errorf("unmount %s: busy (%s below it)", target, m)
		}
	}
	h.mounts = slices.DeleteFunc(h.mounts, func(m string) bool { return m == target })
	return nil
}

func (h *fakeHost) InterfaceExists(name string) (bool, error) {
	_, ok := h.interfaces[name]
	return ok, nil
}

func (h *fakeHost) AddBridge(name, addr string) error {
	h.interfaces[name] = addr
	return nil
}

func (h *fakeHost) DeleteInterface(name string) error {
	delete(h.interfaces, name)
	return nil
}

func (h *fakeHost) CgroupProcs(dir string) ([]int, error) {
	var pids []int
	for cg, p := range h.cgroups {
		if under(cg, dir) {
			pids = append(pids, p...)
		}
	}
	sort.Ints(pids)
	return pids, nil
}

func (h *fakeHost) Kill(pid int) error {
	h.killed = append(h.killed, pid)
	for cg, pids := range h.cgroups {
		h.cgroups[cg] = slices.DeleteFunc(pids, func(p int) bool { return p == pid })
		if len(h.cgroups[cg]) == 0 && len(h.respawn[cg]) > 0 {
			h.cgroups[cg], h.respawn[cg] = h.respawn[cg], nil
		}
	}
	return nil
}

func (h *fakeHost) RemoveCgroup(dir string) error {
	for cg, pids := range h.cgroups {
		if under(cg, dir) && len(pids) > 0 {
			return fmt.Errorf("rmdir %s: %w", cg, syscall.EBUSY)
		}
		if under(cg, dir) && h.busy[cg] > 0 {
			h.busy[cg]--
			return fmt.Errorf("rmdir %s: %w", cg, syscall.EBUSY)
		}
	}
	for cg := range h.cgroups {
		if under(cg, dir) {
			delete(h.cgroups, cg)
		}
	}
	return nil
}

func (h *fakeHost) IptablesSave(command, table string) (string, error) {
	t, ok := h.tables[command+" "+table]
	if !ok {
		return "", ErrNoIptables
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%s\n", table)
	for _, c := range t.chains {
		fmt.Fprintf(&b, ":%s - [0:0]\n", c)
	}
	for _, r := range t.rules {
		b.WriteString(r + "\n")
	}
	b.WriteString("COMMIT\n")
	return b.String(), nil
}

// IptablesRestore applies -D, -F and -X lines as iptables-restore --noflush does, refusing to
// delete a chain that still has rules or is still jumped to.
func (h *fakeHost) IptablesRestore(command, input string) error {
	h.restored = append(h.restored, input)
	var t *savedTable
	for line := range strings.SplitSeq(strings.TrimSpace(input), "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			var ok bool
			if t, ok = h.tables[command+" "+line[1:]]; !ok {
				return fmt.Errorf("no table %s", line[1:])
			}
		case line == "COMMIT":
		case strings.HasPrefix(line, "-D "):
			rule := "-A" + strings.TrimPrefix(line, "-D")
			i := slices.Index(t.rules, rule)
			if i < 0 {
				return fmt.Errorf("no rule %q", rule)
			}
			t.rules = slices.Delete(t.rules, i, i+1)
		case strings.HasPrefix(line, "-F "):
			chain := strings.TrimPrefix(line, "-F ")
			t.rules = slices.DeleteFunc(t.rules, func(r string) bool {
				c, _ := ruleChainAndTarget(r)
				return c == chain
			})
		case strings.HasPrefix(line, "-X "):
			chain := strings.TrimPrefix(line, "-X ")
			for _, r := range t.rules {
				if c, target := ruleChainAndTarget(r); c == chain || target == chain {
					return fmt.Errorf("chain %s in use by %q", chain, r)
				}
			}
			t.chains = slices.DeleteFunc(t.chains, func(c string) bool { return c == chain })
		default:
			return fmt.Errorf("unexpected line %q", line)
		}
	}
	return nil
}

func (h *fakeHost) Ipsets() ([]string, error) {
	if h.ipsets == nil {
		return nil, ErrNoIpset
	}
	var names []string
	for name := range h.ipsets {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// DestroyIpset refuses a set that a rule still matches, as the kernel does.
func (h *fakeHost) DestroyIpset(name string) error {
	if !h.ipsets[name] {
		return fmt.Errorf("ipset %s: no such set", name)
	}
	for _, t := range h.tables {
		for _, r := range t.rules {
			if strings.Contains(r, "--match-set "+name+" ") {
				return fmt.Errorf("ipset %s: in use by %q", name, r)
			}
		}
	}
	delete(h.ipsets, name)
	return nil
}
