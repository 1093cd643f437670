// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Command local-plane is the Go side of the local plane (hack/local-up.sh, which builds it into
// _output/bin and calls it):
//
//	local-plane component names        the components, in start order (package plane's table)
//	local-plane component start NAME   starts one unless it runs (its ports checked first) and
//	                                   waits until it is ready
//	local-plane component stop NAME    SIGTERM, then SIGKILL after STOP_TIMEOUT
//	local-plane component kill NAME    SIGKILL at once
//	local-plane component status NAME  says whether it runs (exit status 1 when not)
//	local-plane component ports NAME   its ports
//	local-plane component show NAME    its binary, flags, ports and log
//	local-plane component check-ports NAME
//	                                   fails when it does not run and another process holds one of
//	                                   its ports
//	local-plane volumes-dir            makes _output/local/volumes, the user's own with mode 0700,
//	                                   or refuses one that is not
//	local-plane shell                  the configuration as shell assignments, for the scripts
//	local-plane credentials [node]     makes the plane's certificates (kept while good) and writes
//	                                   its kubeconfigs; with node, the real node's kubelet's too
//	local-plane node-config            writes containerd's, the CNI plugins' and kubelet's
//	                                   configuration for the real node
//	local-plane node-record            records the real node's host changes before containerd
//	                                   starts (package hostchange), and makes its bridge
//	local-plane node-restore           kills the node's containerd shims and undoes the journal,
//	                                   newest first
//	local-plane node-journal           prints the journal (what node-restore would undo)
//	local-plane cert ca DIR NAME CN DAYS
//	local-plane cert leaf DIR NAME CA CN ORG|- server|client|peer DAYS [SAN...]
//	local-plane cert keypair DIR NAME  makes the CA, the leaf or the key pair in DIR unless a good
//	                                   one is there (package certs); -renew makes leaves anew
//
// It reads the knobs of hack/local-up.sh from the environment (the *_PORT variables,
// SANDBOX_APISERVER_BIN and _ARGS, NODE_NAME, NODE_POD_CIDR, NODE_BRIDGE, START_TIMEOUT, ...) and
// works in the checkout given by -root (default: the current directory).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/hostchange"
	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/plane"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if err != errNotRunning {
			logf("ERROR: %v", err)
		}
		os.Exit(1)
	}
}

// errNotRunning is component status's answer for a component that does not run.
var errNotRunning = fmt.Errorf("not running")

// logf prints as hack/lib/common.sh's log does: a time stamp, to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

const usage = "usage: local-plane [-root DIR] [-renew] shell|volumes-dir|component|credentials|node-config|node-record|node-restore|node-journal|cert ..."

func run(args []string) error {
	fs := flag.NewFlagSet("local-plane", flag.ContinueOnError)
	root := fs.String("root", ".", "the checkout whose _output/ holds the plane")
	renew := fs.Bool("renew", false, "cert: make leaves anew even when they are good")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf(usage)
	}
	if fs.Arg(0) == "cert" {
		return cert(fs.Args()[1:], *renew)
	}
	absRoot, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	cfg, err := plane.ConfigFromEnv(absRoot)
	if err != nil {
		return err
	}
	switch {
	case fs.Arg(0) == "shell" && fs.NArg() == 1:
		fmt.Print(cfg.Shell())
		return nil
	case fs.Arg(0) == "node-config" && fs.NArg() == 1:
		return cfg.WriteNodeConfig()
	case fs.Arg(0) == "volumes-dir" && fs.NArg() == 1:
		return plane.EnsureOwnDir(cfg.Volumes())
	case fs.Arg(0) == "component":
		return component(cfg, fs.Args()[1:])
	case fs.Arg(0) == "credentials" && fs.NArg() <= 2:
		node := fs.NArg() == 2 && fs.Arg(1) == "node"
		if fs.NArg() == 2 && !node {
			return fmt.Errorf("usage: local-plane credentials [node]")
		}
		return cfg.WriteCredentials(node, func(s string) { logf("certs: %s", s) })
	}
	if fs.NArg() != 1 {
		return fmt.Errorf(usage)
	}
	node := nodeConfig{Config: cfg, cgroupRoot: "/sys/fs/cgroup"}
	journal, err := hostchange.Open(node.journalPath(), hostchange.Linux{})
	if err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "node-record":
		return recordNode(node, journal)
	case "node-restore":
		return restoreNode(node, journal)
	case "node-journal":
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(journal.Changes())
	}
	return fmt.Errorf("unknown command %q (%s)", fs.Arg(0), usage)
}

// component runs one of the component subcommands.
func component(cfg plane.Config, args []string) error {
	r := plane.Runner{Config: cfg, Log: logf}
	if len(args) == 1 && args[0] == "names" {
		for _, c := range cfg.Components() {
			fmt.Println(c.Name)
		}
		return nil
	}
	if len(args) != 2 {
		return fmt.Errorf("usage: local-plane component names | start|stop|kill|status|ports|show|check-ports NAME")
	}
	c, err := cfg.Component(args[1])
	if err != nil {
		return err
	}
	switch args[0] {
	case "start":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return r.Start(ctx, c)
	case "stop":
		r.Stop(c)
		return nil
	case "kill":
		return r.Kill(c)
	case "status":
		state, ok := r.Status(c)
		fmt.Println(state)
		if !ok {
			return errNotRunning
		}
		return nil
	case "show":
		fmt.Printf("%s\n", c.Binary)
		for _, a := range c.Args {
			fmt.Printf("  %s\n", a)
		}
		fmt.Printf("ports: %v\nlog: %s\n", c.Ports, cfg.Log(c.Name))
		return nil
	case "check-ports":
		if _, ok := r.Running(c); ok {
			return nil
		}
		return r.CheckPorts(c)
	case "ports":
		ports := make([]string, len(c.Ports))
		for i, p := range c.Ports {
			ports[i] = strconv.Itoa(p)
		}
		fmt.Println(strings.Join(ports, " "))
		return nil
	}
	return fmt.Errorf("unknown component command %q", args[0])
}

// recordNode records every change the node is about to make, and makes the bridge as it records
// it (with the node's address, before kubelet, which serves there; the bridge plugin finds it and
// adds the pods' ends).
func recordNode(cfg nodeConfig, journal *hostchange.Journal) error {
	for _, c := range cfg.nodeChanges() {
		var err error
		if c.Kind == hostchange.Interface {
			err = journal.MakeBridge(c.Name, cfg.nodeAddr(), c.By)
		} else {
			_, err = journal.Record(c)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// restoreNode kills the runc shims of this plane's containerd (they outlive it by design), then
// undoes the journal: the pods' processes killed and their cgroups removed, mounts unmounted, the
// paths, bridge and chains the node made removed, sysctls set back.
func restoreNode(cfg nodeConfig, journal *hostchange.Journal) error {
	if journal.Empty() {
		return nil
	}
	if err := killByExecutable(cfg.Tool("containerd-shim-runc-v2")); err != nil {
		logf("WARNING: node: %v", err)
	}
	err := journal.Undo(func(s string) { logf("node: %s", s) })
	if err != nil {
		return fmt.Errorf("node: host not fully restored (left in %s for the next stop): %w", cfg.journalPath(), err)
	}
	logf("node: host restored (containers, mounts, bridge, cgroups, paths, iptables chains, sysctls)")
	return nil
}
