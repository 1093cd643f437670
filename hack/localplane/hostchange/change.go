// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package hostchange records what the local plane's real node changes on the machine and undoes
// exactly that. Every change is a typed record written to a journal before the change is made,
// with what was there before; Undo walks the journal newest first and reverts each record,
// dropping it from the journal as soon as it is reverted, so a stop that is interrupted (or run
// after a crash, or run twice) finishes the rest and nothing else. A record of something that
// existed before the plane started is kept only to say so: Undo never removes or kills what the
// plane did not make.
//
// Some changes are the plane's own (the bridge); most are made by the processes it starts
// (kubelet sets sysctls and makes cgroups, containerd mounts, the CNI plugins add iptables
// chains): those are recorded before the process starts, as "absent before", so that what
// appears afterwards is known to be the node's.
package hostchange

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is the kind of a host change.
type Kind string

const (
	// Sysctl: a kernel parameter; Before holds its value.
	Sysctl Kind = "sysctl"
	// Path: a file or directory; undone by removing it (on its own filesystem only) unless it
	// existed.
	Path Kind = "path"
	// Mounts: the mounts at or below a directory; Present lists those that existed. Undone by
	// unmounting the others, deepest first.
	Mounts Kind = "mounts"
	// Interface: a network interface; undone by deleting it unless it existed.
	Interface Kind = "interface"
	// Cgroup: a cgroup directory; undone by killing every process in it and below, then removing
	// its directories, unless it existed.
	Cgroup Kind = "cgroup"
	// IptablesChains: the chains of one iptables table whose names start with one of Prefixes;
	// Present lists those that existed. Undone by deleting every other such chain and the rules
	// that jump to it.
	IptablesChains Kind = "iptables-chains"
	// Ipsets: the IP sets whose names start with one of Prefixes; Present lists those that
	// existed. Undone by destroying every other such set; a set is destroyed only once no rule
	// uses it, so the iptables records must come after it in the journal (undone first).
	Ipsets Kind = "ipsets"
)

// Change is one record of the journal.
type Change struct {
	Kind Kind `json:"kind"`
	// Name says what changed: the sysctl's name, the path, the directory under which mounts are
	// the node's, the interface, the cgroup directory, or "COMMAND TABLE" for iptables.
	Name string `json:"name"`
	// By names who makes the change, for the messages.
	By string `json:"by,omitempty"`
	// Existed: the thing was there before the plane; undo leaves it (a sysctl gets its value
	// back).
	Existed bool `json:"existed,omitempty"`
	// Before is a sysctl's value before the change.
	Before string `json:"before,omitempty"`
	// Prefixes are an iptables record's chain name prefixes, or an ipsets record's set name
	// prefixes.
	Prefixes []string `json:"prefixes,omitempty"`
	// Present lists what existed before within a record of many things: the mounts below a
	// directory, the chains of a table or the IP sets with the record's prefixes.
	Present []string `json:"present,omitempty"`
}

// key identifies what a change is about: a journal holds one record per key, the first.
func (c Change) key() string { return string(c.Kind) + " " + c.Name }

func (c Change) String() string {
	s := fmt.Sprintf("%s %s", c.Kind, c.Name)
	if c.By != "" {
		s += " (by " + c.By + ")"
	}
	return s
}

// iptablesName is the Name of an IptablesChains record: the command and the table.
func iptablesName(command, table string) string { return command + " " + table }

func splitIptablesName(name string) (command, table string, err error) {
	command, table, ok := strings.Cut(name, " ")
	if !ok || command == "" || table == "" {
		return "", "", fmt.Errorf("iptables record %q: want COMMAND TABLE", name)
	}
	return command, table, nil
}

// hasPrefix reports whether name starts with one of prefixes.
func hasPrefix(name string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}
