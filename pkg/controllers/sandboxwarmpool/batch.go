// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandboxwarmpool

import (
	"errors"
	"sync"
)

// DefaultMaxBatchSize caps the member creates, and separately the deletes, of one pass over a pool
// when Config.MaxBatchSize is not set (--sandbox-warm-pool-max-batch-size).
const DefaultMaxBatchSize = 300

// batchSizes splits count calls into slow-start batches: 1, 2, 4, ... each twice the last, the
// last one trimmed to what remains.
func batchSizes(count int) []int {
	var sizes []int
	for size := 1; count > 0; size *= 2 {
		b := min(size, count)
		sizes = append(sizes, b)
		count -= b
	}
	return sizes
}

// slowStart calls fn(i) for every i in [0, count), batch after batch as batchSizes says, the calls
// of a batch in parallel. It stops after the first batch with an error, so a failing call (quota,
// a webhook, a server in trouble) costs a few calls, not count of them. It returns how many calls
// succeeded and the errors of the failed batch; indexes past that batch were not called.
func slowStart(count int, fn func(i int) error) (int, error) {
	successes, next := 0, 0
	for _, size := range batchSizes(count) {
		errs := make([]error, size)
		var wg sync.WaitGroup
		for j := range size {
			wg.Go(func() { errs[j] = fn(next + j) })
		}
		wg.Wait()
		next += size
		failed := 0
		for _, err := range errs {
			if err != nil {
				failed++
			}
		}
		successes += size - failed
		if failed > 0 {
			return successes, errors.Join(errs...)
		}
	}
	return successes, nil
}
