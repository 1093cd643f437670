// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sandbox-apiserver/sandbox-apiserver/hack/localplane/certs"
)

// cert makes one CA, leaf or key pair (see the package comment for the arguments).
func cert(args []string, renew bool) error {
	usage := fmt.Errorf("usage: local-plane cert ca DIR NAME CN DAYS | leaf DIR NAME CA CN ORG|- USAGE DAYS [SAN...] | keypair DIR NAME")
	if len(args) < 3 {
		return usage
	}
	d := certs.Dir{Path: args[1], Renew: renew, Report: func(s string) { logf("certs: %s", s) }}
	days := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("DAYS: %q is not a positive number", s)
		}
		return n, nil
	}
	switch args[0] {
	case "ca":
		if len(args) != 5 {
			return usage
		}
		n, err := days(args[4])
		if err != nil {
			return err
		}
		return d.EnsureCA(args[2], args[3], n)
	case "leaf":
		if len(args) < 8 {
			return usage
		}
		n, err := days(args[7])
		if err != nil {
			return err
		}
		l := certs.Leaf{Name: args[2], CA: args[3], CN: args[4], Usage: certs.Usage(args[6]), Days: n, SANs: args[8:]}
		if args[5] != "-" {
			l.Orgs = strings.Split(args[5], ",")
		}
		return d.EnsureLeaf(l)
	case "keypair":
		if len(args) != 3 {
			return usage
		}
		return d.EnsureKeyPair(args[2])
	}
	return usage
}
