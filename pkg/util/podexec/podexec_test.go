// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package podexec

import (
	"strings"
	"sync"
	"testing"
)

// TestBoundedBuffer: what stdout and stderr write at once is all kept up to the bound, and no
// more.
func TestBoundedBuffer(t *testing.T) {
	b := &boundedBuffer{max: 64}
	var wg sync.WaitGroup
	for _, line := range []string{"to-stdout\n", "to-stderr\n"} {
		wg.Go(func() {
			for range 3 {
				_, _ = b.Write([]byte(line))
			}
		})
	}
	wg.Wait()
	if got := b.String(); strings.Count(got, "to-stdout\n") != 3 || strings.Count(got, "to-stderr\n") != 3 {
		t.Errorf("kept %q, want three lines of each", got)
	}
	n, err := b.Write([]byte(strings.Repeat("x", 100)))
	if n != 100 || err != nil || len(b.String()) != 64 {
		t.Errorf("Write past the bound: %d, %v, kept %d bytes; want 100 taken, 64 kept", n, err, len(b.String()))
	}
}
