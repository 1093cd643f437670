// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package hostchange

import (
	"fmt"
	"strings"
)

// savedTable is one table of iptables-save's output: its chains and its rules, each rule as
// iptables-save prints it ("-A CHAIN ...", quoting included).
type savedTable struct {
	chains []string
	rules  []string
}

// parseIptablesSave reads the output of `iptables-save -t TABLE`.
func parseIptablesSave(out string) savedTable {
	var t savedTable
	for line := range strings.SplitSeq(out, "\n") {
		switch {
		case strings.HasPrefix(line, ":"):
			if name, _, ok := strings.Cut(line[1:], " "); ok {
				t.chains = append(t.chains, name)
			}
		case strings.HasPrefix(line, "-A "):
			t.rules = append(t.rules, line)
		}
	}
	return t
}

// ruleChainAndTarget returns the chain a rule is in and the chain it jumps or goes to ("" when
// none). The words are split as iptables-save quotes them: a comment in double quotes may hold
// spaces and "-j".
func ruleChainAndTarget(rule string) (chain, target string) {
	words := splitQuoted(rule)
	if len(words) >= 2 {
		chain = words[1]
	}
	for i := 2; i+1 < len(words); i++ {
		if words[i] == "-j" || words[i] == "-g" {
			target = words[i+1]
		}
	}
	return chain, target
}

// splitQuoted splits s at spaces outside double quotes; a backslash escapes the next character.
func splitQuoted(s string) []string {
	var words []string
	var b strings.Builder
	inWord, quoted, escaped := false, false, false
	for _, r := range s {
		switch {
		case escaped:
			b.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped, inWord = true, true
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, b.String())
	}
	return words
}

// deleteChainsInput is the iptables-restore --noflush input that deletes the chains of t that
// doomed selects: first the rules of other chains that jump to them, then their own rules, then
// the chains. The rules are given back to iptables-restore as iptables-save printed them, so no
// shell ever reads them. chains lists what it deletes.
func deleteChainsInput(t savedTable, table string, doomed func(string) bool) (input string, chains []string) {
	for _, c := range t.chains {
		if doomed(c) {
			chains = append(chains, c)
		}
	}
	if len(chains) == 0 {
		return "", nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%s\n", table)
	for _, rule := range t.rules {
		chain, target := ruleChainAndTarget(rule)
		if target != "" && doomed(target) && !doomed(chain) {
			b.WriteString("-D" + strings.TrimPrefix(rule, "-A") + "\n")
		}
	}
	for _, c := range chains {
		fmt.Fprintf(&b, "-F %s\n", c)
	}
	for _, c := range chains {
		fmt.Fprintf(&b, "-X %s\n", c)
	}
	b.WriteString("COMMIT\n")
	return b.String(), chains
}
