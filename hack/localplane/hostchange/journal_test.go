// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package hostchange

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func openJournal(t *testing.T, h Host) (*Journal, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "host-changes.json")
	j, err := Open(path, h)
	if err != nil {
		t.Fatal(err)
	}
	j.pause = func(time.Duration) {}
	return j, path
}

func record(t *testing.T, j *Journal, c Change) {
	t.Helper()
	if _, err := j.Record(c); err != nil {
		t.Fatal(err)
	}
}

func undo(t *testing.T, j *Journal) []string {
	t.Helper()
	var done []string
	if err := j.Undo(func(s string) { done = append(done, s) }); err != nil {
		t.Fatal(err)
	}
	if !j.Empty() {
		t.Fatalf("journal not empty after undo: %v", j.Changes())
	}
	return done
}

// Each kind of change, made after its record, is undone; the same change of something that was
// there before is left alone.
func TestUndoEachKind(t *testing.T) {
	const nat = "iptables nat"
	natBefore := func() *savedTable {
		return &savedTable{
			chains: []string{"PREROUTING", "OUTPUT", "POSTROUTING", "DOCKER"},
			rules:  []string{"-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER"},
		}
	}
	cases := []struct {
		name   string
		before func(h *fakeHost)
		change Change
		make   func(h *fakeHost) // what the node does after the record
		after  func(t *testing.T, h *fakeHost)
	}{{
		name:   "sysctl set by kubelet",
		before: func(h *fakeHost) { h.sysctls["vm.overcommit_memory"] = "0" },
		change: Change{Kind: Sysctl, Name: "vm.overcommit_memory", By: "kubelet"},
		make:   func(h *fakeHost) { h.sysctls["vm.overcommit_memory"] = "1" },
		after: func(t *testing.T, h *fakeHost) {
			if got := h.sysctls["vm.overcommit_memory"]; got != "0" {
				t.Errorf("vm.overcommit_memory = %s, want 0", got)
			}
		},
	}, {
		name:   "sysctl the kernel lacks",
		change: Change{Kind: Sysctl, Name: "kernel.keys.root_maxkeys"},
		after:  func(t *testing.T, h *fakeHost) {},
	}, {
		name:   "new path",
		change: Change{Kind: Path, Name: "/var/lib/kubelet", By: "kubelet"},
		make: func(h *fakeHost) {
			h.paths["/var/lib/kubelet"] = true
			h.paths["/var/lib/kubelet/device-plugins"] = true
		},
		after: func(t *testing.T, h *fakeHost) {
			if len(h.paths) != 0 {
				t.Errorf("paths left: %v", h.paths)
			}
		},
	}, {
		name: "path that existed",
		before: func(h *fakeHost) {
			h.paths["/var/log/pods"] = true
			h.paths["/var/log/pods/someone-elses"] = true
		},
		change: Change{Kind: Path, Name: "/var/log/pods"},
		make:   func(h *fakeHost) { h.paths["/var/log/pods/ours"] = true },
		after: func(t *testing.T, h *fakeHost) {
			if !h.paths["/var/log/pods"] || !h.paths["/var/log/pods/someone-elses"] {
				t.Errorf("a path that existed was removed: %v", h.paths)
			}
		},
	}, {
		name:   "mounts below a directory, deepest first",
		before: func(h *fakeHost) { h.mounts = []string{"/node/keep"} },
		change: Change{Kind: Mounts, Name: "/node"},
		make: func(h *fakeHost) {
			h.mounts = append(h.mounts, "/node/a", "/node/a/b/c", "/node/a/b", "/elsewhere")
		},
		after: func(t *testing.T, h *fakeHost) {
			if want := []string{"/node/keep", "/elsewhere"}; !reflect.DeepEqual(h.mounts, want) {
				t.Errorf("mounts = %v, want %v", h.mounts, want)
			}
		},
	}, {
		name:   "new bridge",
		change: Change{Kind: Interface, Name: "sandbox0"},
		make:   func(h *fakeHost) { h.interfaces["sandbox0"] = "10.88.0.1/24" },
		after: func(t *testing.T, h *fakeHost) {
			if len(h.interfaces) != 0 {
				t.Errorf("interfaces left: %v", h.interfaces)
			}
		},
	}, {
		name:   "bridge that existed",
		before: func(h *fakeHost) { h.interfaces["sandbox0"] = "10.88.0.1/24" },
		change: Change{Kind: Interface, Name: "sandbox0"},
		after: func(t *testing.T, h *fakeHost) {
			if _, ok := h.interfaces["sandbox0"]; !ok {
				t.Error("a bridge that existed was deleted")
			}
		},
	}, {
		name:   "new cgroup with processes, one forked during the kill, busy a while after",
		change: Change{Kind: Cgroup, Name: "/sys/fs/cgroup/memory/kubepods", By: "kubelet"},
		make: func(h *fakeHost) {
			h.cgroups["/sys/fs/cgroup/memory/kubepods"] = nil
			h.cgroups["/sys/fs/cgroup/memory/kubepods/pod1"] = []int{101, 102}
			h.respawn["/sys/fs/cgroup/memory/kubepods/pod1"] = []int{103}
			h.busy["/sys/fs/cgroup/memory/kubepods/pod1"] = 3
		},
		after: func(t *testing.T, h *fakeHost) {
			if len(h.cgroups) != 0 {
				t.Errorf("cgroups left: %v", h.cgroups)
			}
			slices.Sort(h.killed)
			if want := []int{101, 102, 103}; !reflect.DeepEqual(h.killed, want) {
				t.Errorf("killed %v, want %v", h.killed, want)
			}
		},
	}, {
		name:   "cgroup that existed, with someone's processes",
		before: func(h *fakeHost) { h.cgroups["/sys/fs/cgroup/memory/kubepods"] = []int{7} },
		change: Change{Kind: Cgroup, Name: "/sys/fs/cgroup/memory/kubepods"},
		after: func(t *testing.T, h *fakeHost) {
			if len(h.killed) != 0 || !reflect.DeepEqual(h.cgroups["/sys/fs/cgroup/memory/kubepods"], []int{7}) {
				t.Errorf("killed %v, cgroups %v: a cgroup that existed was touched", h.killed, h.cgroups)
			}
		},
	}, {
		name:   "portmap's and kubelet's chains, with a quoted comment",
		before: func(h *fakeHost) { h.tables[nat] = natBefore() },
		change: Change{Kind: IptablesChains, Name: nat, Prefixes: []string{"CNI-", "KUBE-"}},
		make: func(h *fakeHost) {
			n := h.tables[nat]
			n.chains = append(n.chains, "CNI-HOSTPORT-DNAT", "CNI-HOSTPORT-MASQ", "CNI-DN-1234", "KUBE-KUBELET-CANARY")
			n.rules = append(n.rules,
				"-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
				"-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
				`-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade -j x" -j CNI-HOSTPORT-MASQ`,
				`-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \"sandbox-local\" id: \"abc\"" -j CNI-DN-1234`,
				"-A CNI-DN-1234 -p tcp --dport 8080 -j DNAT --to-destination 10.88.0.5:80")
		},
		after: func(t *testing.T, h *fakeHost) {
			if got, want := h.tables[nat], natBefore(); !reflect.DeepEqual(got, want) {
				t.Errorf("nat = %+v, want %+v", got, want)
			}
		},
	}, {
		name:   "iptables not installed",
		change: Change{Kind: IptablesChains, Name: nat, Prefixes: []string{"CNI-"}},
		after:  func(t *testing.T, h *fakeHost) {},
	}, {
		name:   "the policy engine's IP sets, beside someone else's",
		before: func(h *fakeHost) { h.ipsets = map[string]bool{"KUBE-SRC-OLD": true, "f2b-sshd": true} },
		change: Change{Kind: Ipsets, Name: "ipset", Prefixes: []string{"KUBE-"}},
		make: func(h *fakeHost) {
			h.ipsets["KUBE-SRC-ABC"], h.ipsets["KUBE-DST-DEF"], h.ipsets["mine"] = true, true, true
		},
		after: func(t *testing.T, h *fakeHost) {
			want := map[string]bool{"KUBE-SRC-OLD": true, "f2b-sshd": true, "mine": true}
			if !reflect.DeepEqual(h.ipsets, want) {
				t.Errorf("ipsets = %v, want %v", h.ipsets, want)
			}
		},
	}, {
		name:   "ipset not installed",
		change: Change{Kind: Ipsets, Name: "ipset", Prefixes: []string{"KUBE-"}},
		after:  func(t *testing.T, h *fakeHost) {},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newFakeHost()
			if tc.before != nil {
				tc.before(h)
			}
			j, _ := openJournal(t, h)
			record(t, j, tc.change)
			if tc.make != nil {
				tc.make(h)
			}
			undo(t, j)
			tc.after(t, h)
			// A second undo (make down twice) finds nothing to do.
			if done := undo(t, j); len(done) != 0 {
				t.Errorf("second undo did %v", done)
			}
		})
	}
}

// The plane's bridge is recorded before it is made, so a stop after a crash between the two
// still deletes it.
func TestMakeBridge(t *testing.T) {
	h := newFakeHost()
	j, _ := openJournal(t, h)
	if err := j.MakeBridge("sandbox0", "10.88.0.1/24", "local-plane"); err != nil {
		t.Fatal(err)
	}
	if h.interfaces["sandbox0"] != "10.88.0.1/24" {
		t.Fatalf("bridge not made: %v", h.interfaces)
	}
	undo(t, j)
	if len(h.interfaces) != 0 {
		t.Errorf("bridge left: %v", h.interfaces)
	}
}

// Records survive the process (they are read back from the file), a second start keeps the first
// record's view of the host, and the undo runs newest first.
func TestJournalAcrossRestartsNewestFirst(t *testing.T) {
	h := newFakeHost()
	h.sysctls["net.ipv4.ip_forward"] = "0"
	j, path := openJournal(t, h)
	record(t, j, Change{Kind: Sysctl, Name: "net.ipv4.ip_forward"})
	record(t, j, Change{Kind: Path, Name: "/node"})
	record(t, j, Change{Kind: Mounts, Name: "/node"})
	h.sysctls["net.ipv4.ip_forward"] = "1"
	h.paths["/node"] = true
	h.mounts = []string{"/node/rootfs"}

	// The plane crashed; the next start records the same changes again.
	j2, err := Open(path, h)
	if err != nil {
		t.Fatal(err)
	}
	c, err := j2.Record(Change{Kind: Path, Name: "/node"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Existed {
		t.Error("the second record of /node says it existed: the first record's view must win")
	}
	if got := j2.Changes(); len(got) != 3 {
		t.Fatalf("journal has %d records, want 3: %v", len(got), got)
	}
	// Newest first: the mounts go before their directory (the fake refuses otherwise).
	done := undo(t, j2)
	want := []string{"unmounted 1 mounts under /node", "removed /node", "sysctl net.ipv4.ip_forward=0 (was 1)"}
	if !reflect.DeepEqual(done, want) {
		t.Errorf("undo did %q, want %q", done, want)
	}
	if _, err := Open(path, h); err != nil {
		t.Fatal(err)
	}
}

// A record that cannot be undone stays in the journal for the next stop, and the others are
// still undone.
func TestUndoKeepsWhatFailed(t *testing.T) {
	h := newFakeHost()
	j, path := openJournal(t, h)
	record(t, j, Change{Kind: Interface, Name: "sandbox0"})
	record(t, j, Change{Kind: Path, Name: "/node"})
	h.interfaces["sandbox0"] = "x"
	h.paths["/node"] = true
	h.mounts = []string{"/node/stuck"} // not recorded: rm --one-file-system fails on it

	err := j.Undo(func(string) {})
	if err == nil || !strings.Contains(err.Error(), "/node") {
		t.Fatalf("undo error = %v, want one naming /node", err)
	}
	if _, ok := h.interfaces["sandbox0"]; ok {
		t.Error("the bridge was not deleted past the failure")
	}
	j2, err := Open(path, h)
	if err != nil {
		t.Fatal(err)
	}
	if got := j2.Changes(); len(got) != 1 || got[0].Name != "/node" {
		t.Fatalf("journal after a failed undo = %v, want the /node record alone", got)
	}
	h.mounts = nil
	undo(t, j2)
	if h.paths["/node"] {
		t.Error("/node left after the second stop")
	}
}

func TestSplitQuoted(t *testing.T) {
	got := splitQuoted(`-A X -m comment --comment "a \"b\" -j c" -j Y`)
	want := []string{"-A", "X", "-m", "comment", "--comment", `a "b" -j c`, "-j", "Y"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("splitQuoted = %q, want %q", got, want)
	}
}

// The IP sets are recorded before the chains whose rules match them: undone newest first, the
// rules go before the sets, which the kernel would not destroy while a rule uses them.
func TestIpsetsAfterTheirRules(t *testing.T) {
	h := newFakeHost()
	h.ipsets = map[string]bool{}
	h.tables["iptables filter"] = &savedTable{chains: []string{"INPUT", "FORWARD", "OUTPUT"}}
	j, _ := openJournal(t, h)
	record(t, j, Change{Kind: Ipsets, Name: "ipset", Prefixes: []string{"KUBE-"}})
	record(t, j, Change{Kind: IptablesChains, Name: "iptables filter", Prefixes: []string{"KUBE-"}})
	filter := h.tables["iptables filter"]
	h.ipsets["KUBE-DST-X"] = true
	filter.chains = append(filter.chains, "KUBE-ROUTER-FORWARD", "KUBE-NWPLCY-X")
	filter.rules = append(filter.rules,
		"-A FORWARD -m comment --comment \"kube-router netpol\" -j KUBE-ROUTER-FORWARD",
		"-A KUBE-ROUTER-FORWARD -j KUBE-NWPLCY-X",
		"-A KUBE-NWPLCY-X -m set --match-set KUBE-DST-X dst -j MARK --set-xmark 0x10000/0x10000")
	undo(t, j)
	if len(h.ipsets) != 0 || len(filter.rules) != 0 || len(filter.chains) != 3 {
		t.Errorf("left: ipsets %v, chains %v, rules %v", h.ipsets, filter.chains, filter.rules)
	}
}
