// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxproxy

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
)

// TestConnectionLimit: past either bound a 429 with Retry-After; a slot given back (once, however
// often done is called) lets the next one in.
func TestConnectionLimit(t *testing.T) {
	sandboxOf := func(uid string) *agents.Sandbox {
		return &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID(uid)}}
	}
	a, b, c := sandboxOf("a"), sandboxOf("b"), sandboxOf("c")
	l := &ConnectionLimit{What: "streams", PerSandbox: 2, PerServer: 3}
	admit := func(sb *agents.Sandbox) func() {
		t.Helper()
		done, err := l.Admit(sb)
		if err != nil {
			t.Fatalf("admit %s: %v", sb.Name, err)
		}
		return done
	}
	refused := func(sb *agents.Sandbox) {
		t.Helper()
		_, err := l.Admit(sb)
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("admit %s: %v; want a 429", sb.Name, err)
		}
		if s, ok := err.(apierrors.APIStatus); !ok || s.Status().Details.RetryAfterSeconds == 0 {
			t.Fatalf("admit %s: %v; want Retry-After", sb.Name, err)
		}
	}
	doneA := admit(a)
	admit(a)
	refused(a) // per sandbox
	admit(b)
	refused(c) // per server
	doneA()
	doneA()
	admit(c)
	refused(b) // the second done gave nothing back
	var unbounded *ConnectionLimit
	if _, err := unbounded.Admit(a); err != nil {
		t.Errorf("nil limit: %v", err)
	}
}
