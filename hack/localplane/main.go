// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Command local-plane runs the local plane (hack/local-up.sh builds it into _output/bin and
// execs it with its command; see its header for what each does):
//
//	local-plane start|stop|status|restart
//	local-plane start-sandbox-apiserver|stop-sandbox-apiserver|restart-sandbox-apiserver
//	local-plane kill-sandbox-apiserver|start-sandbox-etcd|stop-sandbox-etcd
//	local-plane restart-kube-apiserver|restart-kubelet|restart-containerd
//
// and the pieces the plane is made of, for debugging and the other scripts:
//
//	local-plane component names        the components, in the order of their table
//	local-plane component status|ports|show NAME
//	                                   whether it runs (exit status 1 when not), its ports, or
//	                                   its binary, flags, ports and log
//	local-plane node-journal           prints the journal of the real node's host changes (what
//	                                   stop undoes)
//	local-plane cert ca DIR NAME CN DAYS
//	local-plane cert leaf DIR NAME CA CN ORG|- server|client|peer DAYS [SAN...]
//	local-plane cert keypair DIR NAME  makes the CA, the leaf or the key pair in DIR unless a good
//	                                   one is there (package certs); -renew makes leaves anew
//
// It reads the knobs of hack/local-up.sh from the environment (package plane's Config) and works
// in the checkout given by -root (default: the current directory).
package main

import (
	"context"
	"encoding/json"
	"errors"
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
		if !errors.Is(err, errNotRunning) && !errors.Is(err, plane.ErrReported) {
			logf("ERROR: %v", err)
		}
		os.Exit(1)
	}
}

// errNotRunning is component status's answer for a component that does not run.
var errNotRunning = errors.New("not running")

// logf prints as hack/lib/common.sh's log does: a time stamp, to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

const usage = "usage: local-plane [-root DIR] [-renew] start|stop|status|restart|...|component|node-journal|cert ..."

func run(args []string) error {
	fs := flag.NewFlagSet("local-plane", flag.ContinueOnError)
	root := fs.String("root", ".", "the checkout whose _output/ holds the plane")
	renew := fs.Bool("renew", false, "cert: make leaves anew even when they are good")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New(usage)
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
	if fs.Arg(0) == "component" {
		return component(cfg, fs.Args()[1:])
	}
	if fs.NArg() != 1 {
		return errors.New(usage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := &plane.Plane{Config: cfg, Log: logf}
	switch verb := fs.Arg(0); verb {
	case "start":
		return p.Start(ctx)
	case "stop":
		p.Stop()
		return nil
	case "restart":
		p.Stop()
		return p.Start(ctx)
	case "status":
		if !p.Status(ctx) {
			return errNotRunning
		}
		return nil
	case "start-sandbox-apiserver":
		return p.StartServer(ctx)
	case "stop-sandbox-apiserver", "stop-sandbox-etcd":
		return p.StopComponent(strings.TrimPrefix(verb, "stop-"))
	case "restart-sandbox-apiserver":
		if err := p.StopComponent("sandbox-apiserver"); err != nil {
			return err
		}
		return p.StartServer(ctx)
	case "kill-sandbox-apiserver":
		return p.KillComponent("sandbox-apiserver")
	case "start-sandbox-etcd":
		return p.StartComponent(ctx, "sandbox-etcd")
	case "restart-kube-apiserver":
		return p.RestartComponent(ctx, "kube-apiserver", "etcd", "run: hack/local-up.sh start")
	case "restart-kubelet", "restart-containerd":
		name := strings.TrimPrefix(verb, "restart-")
		return p.RestartComponent(ctx, name, name, "no real node here: hack/local-up.sh status")
	case "kwok-guard":
		return cfg.ServeKwokGuard(ctx)
	case "node-journal":
		journal, err := hostchange.Open(cfg.JournalPath(), hostchange.Linux{})
		if err != nil {
			return err
		}
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
		return fmt.Errorf("usage: local-plane component names | status|ports|show NAME")
	}
	c, err := cfg.Component(args[1])
	if err != nil {
		return err
	}
	switch args[0] {
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
