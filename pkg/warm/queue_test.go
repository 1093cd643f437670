// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package warm

import (
	"fmt"
	"sync"
	"testing"
)

func TestQueue(t *testing.T) {
	a := Bucket{Namespace: "ns", TemplateRefHash: "aaaa"}
	b := Bucket{Namespace: "ns", TemplateRefHash: "bbbb"}
	other := Bucket{Namespace: "other", TemplateRefHash: "aaaa"}

	q := NewQueue()
	q.Add(a, "ns/1")
	q.Add(a, "ns/2")
	q.Add(a, "ns/1") // already queued: keeps its place
	q.Add(b, "ns/3")
	q.Add(a, "ns/4")
	if got := q.Len(a); got != 3 {
		t.Fatalf("Len(a) = %d, want 3", got)
	}
	if _, ok := q.Pop(other, nil); ok {
		t.Fatal("a bucket of another namespace must be empty")
	}
	// The oldest accepted key comes out; refused keys stay in order.
	key, ok := q.Pop(a, func(k string) bool { return k != "ns/1" })
	if !ok || key != "ns/2" {
		t.Fatalf("Pop with a filter = %q, %v; want ns/2", key, ok)
	}
	if key, _ := q.Pop(a, nil); key != "ns/1" {
		t.Fatalf("Pop = %q, want ns/1 (first in)", key)
	}
	// Moving a key to another bucket takes it out of the first one.
	q.Add(b, "ns/4")
	if got := q.Len(a); got != 0 {
		t.Fatalf("Len(a) = %d after moving ns/4, want 0", got)
	}
	q.Remove("ns/3")
	if key, _ := q.Pop(b, nil); key != "ns/4" {
		t.Fatalf("Pop(b) = %q, want ns/4", key)
	}
	if _, ok := q.Pop(b, nil); ok {
		t.Fatal("queue must be empty")
	}
	q.Remove("ns/unknown") // no-op
}

// Concurrent pops hand out every key exactly once.
func TestQueueConcurrentPopsAreExclusive(t *testing.T) {
	bkt := Bucket{Namespace: "ns", TemplateRefHash: "h"}
	q := NewQueue()
	const n = 1000
	for i := range n {
		q.Add(bkt, fmt.Sprintf("ns/%d", i))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				k, ok := q.Pop(bkt, nil)
				if !ok {
					return
				}
				mu.Lock()
				seen[k]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("popped %d distinct keys, want %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("key %s popped %d times", k, c)
		}
	}
}
