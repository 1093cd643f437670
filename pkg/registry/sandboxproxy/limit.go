// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxproxy

import (
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

// ConnectionLimit bounds what one server replica holds open at once, per sandbox and in all:
// proxied requests and connections, or streams (exec, attach, portforward, followed logs).
// Long-running requests are not counted by API priority and fairness, so this is what keeps
// one caller from taking a replica's connections and goroutines. Past a bound, Admit answers
// a 429 with Retry-After at once.
type ConnectionLimit struct {
	// What names what is counted in the 429's message ("requests and connections", "streams").
	What string
	// PerSandbox bounds what is open to one sandbox; PerServer what is open in all. 0: unbounded.
	PerSandbox, PerServer int

	mu        sync.Mutex
	total     int
	bySandbox map[types.UID]int
}

// Admit counts one more to sb within the bounds; done uncounts it and must be called once.
func (l *ConnectionLimit) Admit(sb *agents.Sandbox) (done func(), err error) {
	if l == nil || (l.PerSandbox <= 0 && l.PerServer <= 0) {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bySandbox == nil {
		l.bySandbox = map[types.UID]int{}
	}
	if n := l.bySandbox[sb.UID]; l.PerSandbox > 0 && n >= l.PerSandbox {
		return nil, apierrors.NewTooManyRequests(fmt.Sprintf("%d %s to sandbox %s/%s are in progress on this server", n, l.What, sb.Namespace, sb.Name), 1)
	}
	if l.PerServer > 0 && l.total >= l.PerServer {
		return nil, apierrors.NewTooManyRequests(fmt.Sprintf("%d %s to sandboxes are in progress on this server", l.total, l.What), 1)
	}
	l.bySandbox[sb.UID]++
	l.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.bySandbox[sb.UID]--; l.bySandbox[sb.UID] <= 0 {
				delete(l.bySandbox, sb.UID)
			}
		})
	}, nil
}
