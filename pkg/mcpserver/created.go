// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package mcpserver

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// maxClaimsPerSession bounds what the server remembers of one session; past it the oldest claim
// is forgotten (it stays in the cluster, listed without this_session_only).
const maxClaimsPerSession = 1000

// createdClaims is what the server remembers making: the UIDs of the claims each MCP session
// created. this_session_only lists those, never what a label says (anyone who may create a
// claim in the namespace can write any label).
type createdClaims struct {
	mu        sync.Mutex
	bySession map[string][]types.UID
}

func (c *createdClaims) add(session string, uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bySession == nil {
		c.bySession = map[string][]types.UID{}
	}
	uids := append(c.bySession[session], uid)
	if len(uids) > maxClaimsPerSession {
		uids = uids[len(uids)-maxClaimsPerSession:]
	}
	c.bySession[session] = uids
}

func (c *createdClaims) has(session string, uid types.UID) bool {
	if uid == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.bySession[session] {
		if u == uid {
			return true
		}
	}
	return false
}

// forget drops what the server remembers of the sessions keep says are gone.
func (c *createdClaims) forget(live func(session string) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for session := range c.bySession {
		if !live(session) {
			delete(c.bySession, session)
		}
	}
}
