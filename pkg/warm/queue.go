// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package warm

import (
	"container/list"
	"sync"
)

// Bucket groups the sandboxes one claim may choose from: the Ready ones, or those still starting.
type Bucket struct {
	Namespace       string
	TemplateRefHash string
	// Starting holds the members whose pod is not Ready yet; a member moves to the Ready bucket
	// when it becomes Ready.
	Starting bool
}

// StartingBucket is the bucket of b's members still starting.
func (b Bucket) StartingBucket() Bucket {
	b.Starting = true
	return b
}

// Queue is a set of sandbox keys per bucket, kept in the order they were added: first ready,
// first out. Popping takes a key out, so two adoptions in this process never try the same
// sandbox at once; the adoption write itself is what makes a sandbox go to one claim only,
// whatever races across processes.
type Queue struct {
	mu      sync.Mutex
	buckets map[Bucket]*list.List
	index   map[string]entry
}

type entry struct {
	bucket Bucket
	elem   *list.Element
}

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	return &Queue{buckets: map[Bucket]*list.List{}, index: map[string]entry{}}
}

// Add puts key at the back of bucket, or moves it there if it was queued under another bucket.
// Adding a key already in bucket keeps its place.
func (q *Queue) Add(b Bucket, key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.index[key]; ok {
		if e.bucket == b {
			return
		}
		q.removeLocked(key)
	}
	l := q.buckets[b]
	if l == nil {
		l = list.New()
		q.buckets[b] = l
	}
	q.index[key] = entry{bucket: b, elem: l.PushBack(key)}
}

// Remove takes key out of the queue, wherever it is.
func (q *Queue) Remove(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.removeLocked(key)
}

func (q *Queue) removeLocked(key string) {
	e, ok := q.index[key]
	if !ok {
		return
	}
	l := q.buckets[e.bucket]
	l.Remove(e.elem)
	if l.Len() == 0 {
		delete(q.buckets, e.bucket)
	}
	delete(q.index, key)
}

// Pop takes out and returns the oldest key of bucket that accept agrees to; keys it refuses keep
// their place. It reports false when there is none.
func (q *Queue) Pop(b Bucket, accept func(key string) bool) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.buckets[b]
	if l == nil {
		return "", false
	}
	for el := l.Front(); el != nil; el = el.Next() {
		key := el.Value.(string)
		if accept == nil || accept(key) {
			q.removeLocked(key)
			return key, true
		}
	}
	return "", false
}

// Len is the number of keys in bucket.
func (q *Queue) Len(b Bucket) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if l := q.buckets[b]; l != nil {
		return l.Len()
	}
	return 0
}
