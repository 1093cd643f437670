// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Command local-plane holds the parts of the local plane (hack/local-up.sh) that are Go: the
// record of what the real node changes on the host and its undo (package hostchange), and the
// plane's certificates (package certs). hack/local-up.sh builds it into _output/bin and calls it.
//
//	local-plane node-record    records the node's host changes before containerd starts, and
//	                           makes its bridge
//	local-plane node-restore   kills the node's containerd shims and undoes what the journal
//	                           holds, newest first
//	local-plane node-journal   prints the journal (what node-restore would undo)
//	local-plane cert ca DIR NAME CN DAYS
//	local-plane cert leaf DIR NAME CA CN ORG|- server|client|peer DAYS [SAN...]
//	local-plane cert keypair DIR NAME
//	                           makes the CA, the leaf or the key pair in DIR unless a good one
//	                           is there (package certs); -renew makes leaves anew
//
// It reads the knobs of hack/local-up.sh from the environment (NODE_BRIDGE, NODE_POD_CIDR) and
// works in the checkout given by -root (default: the current directory).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/hostchange"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		logf("ERROR: %v", err)
		os.Exit(1)
	}
}

// logf prints as hack/lib/common.sh's log does: a time stamp, to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(args []string) error {
	fs := flag.NewFlagSet("local-plane", flag.ContinueOnError)
	root := fs.String("root", ".", "the checkout whose _output/ holds the plane")
	renew := fs.Bool("renew", false, "cert: make leaves anew even when they are good")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 && fs.Arg(0) == "cert" {
		return cert(fs.Args()[1:], *renew)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: local-plane [-root DIR] node-record|node-restore|node-journal, or cert ...")
	}
	absRoot, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	cfg, err := nodeConfigFromEnv(absRoot)
	if err != nil {
		return err
	}
	journal, err := hostchange.Open(cfg.journalPath(), hostchange.Linux{})
	if err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "node-record":
		return recordNode(cfg, journal)
	case "node-restore":
		return restoreNode(cfg, journal)
	case "node-journal":
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(journal.Changes())
	}
	return fmt.Errorf("unknown command %q", fs.Arg(0))
}

// recordNode records every change the node is about to make, then makes the bridge (with the
// node's address, before kubelet, which serves there; the bridge plugin finds it and adds the
// pods' ends).
func recordNode(cfg nodeConfig, journal *hostchange.Journal) error {
	for _, c := range cfg.nodeChanges() {
		if _, err := journal.Record(c); err != nil {
			return err
		}
	}
	return journal.MakeBridge(cfg.bridge, cfg.nodeAddr(), "local-plane")
}

// restoreNode kills the runc shims of this plane's containerd (they outlive it by design), then
// undoes the journal: the pods' processes killed and their cgroups removed, mounts unmounted, the
// paths, bridge and chains the node made removed, sysctls set back.
func restoreNode(cfg nodeConfig, journal *hostchange.Journal) error {
	if journal.Empty() {
		return nil
	}
	if err := killByExecutable(filepath.Join(cfg.toolsBin, "containerd-shim-runc-v2")); err != nil {
		logf("WARNING: node: %v", err)
	}
	err := journal.Undo(func(s string) { logf("node: %s", s) })
	if err != nil {
		return fmt.Errorf("node: host not fully restored (left in %s for the next stop): %w", cfg.journalPath(), err)
	}
	logf("node: host restored (containers, mounts, bridge, cgroups, paths, iptables chains, sysctls)")
	return nil
}
