// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Command pause is the local plane's pod sandbox ("pause") process and the idle process of its
// sandbox images: it sleeps until SIGTERM or SIGINT and, as PID 1 of a PID namespace, reaps the
// zombies orphaned processes leave. Built static, it needs nothing else in its image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		// Reap every child that has exited; SIGCHLDs coalesce, so one may stand for several.
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
