// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
)

// memoryLimitAuto derives the limit from the container's memory limit.
const memoryLimitAuto = "auto"

// autoLimitShare is the part of the container's memory limit the Go heap is held to: the rest
// covers what the runtime does not count (stacks of cgo, the binary's mapped pages, fragmentation).
const autoLimitShare = 0.9

// MemoryOptions set the Go runtime's soft memory limit (runtime/debug.SetMemoryLimit). Under it
// the collector runs more often as the heap nears the limit and returns freed memory to the
// system sooner, instead of letting the heap grow to twice what is live (GOGC=100) after a burst.
type MemoryOptions struct {
	// Limit is "auto", 0 (none) or a quantity such as 512Mi.
	Limit string
}

// NewMemoryOptions returns the default: auto.
func NewMemoryOptions() *MemoryOptions {
	return &MemoryOptions{Limit: memoryLimitAuto}
}

// AddFlags adds --memory-limit to fs.
func (o *MemoryOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Limit, "memory-limit", o.Limit,
		"Soft limit of the Go runtime's memory, as a quantity (512Mi), 0 for none, or auto: 90% of the container's "+
			"memory limit (cgroup memory.max) when it has one, else none. GOMEMLIMIT in the environment wins over auto.")
}

// Validate reports a limit that is not auto, 0 or a quantity of at least 64Mi.
func (o *MemoryOptions) Validate() []error {
	if _, err := o.bytes(); err != nil {
		return []error{err}
	}
	return nil
}

// bytes is the limit to set, or -1 to leave the runtime's own (GOMEMLIMIT, or none).
func (o *MemoryOptions) bytes() (int64, error) {
	switch o.Limit {
	case memoryLimitAuto:
		if os.Getenv("GOMEMLIMIT") != "" {
			return -1, nil
		}
		limit, ok := cgroupMemoryLimit()
		if !ok {
			return -1, nil
		}
		return int64(float64(limit) * autoLimitShare), nil
	case "0":
		return math.MaxInt64, nil
	}
	q, err := resource.ParseQuantity(o.Limit)
	if err != nil || q.Sign() < 0 {
		return 0, fmt.Errorf("--memory-limit: %q is not auto, 0 or a quantity such as 512Mi", o.Limit)
	}
	if q.Value() < 64<<20 {
		return 0, errors.New("--memory-limit: below 64Mi the server would spend its time collecting garbage")
	}
	return q.Value(), nil
}

// Apply sets the limit.
func (o *MemoryOptions) Apply(logger klog.Logger) error {
	limit, err := o.bytes()
	if err != nil {
		return err
	}
	if limit >= 0 {
		debug.SetMemoryLimit(limit)
	}
	if current := debug.SetMemoryLimit(-1); current != math.MaxInt64 {
		logger.Info("Go memory limit", "bytes", current, "MiB", current>>20)
	}
	return nil
}

// cgroupMemoryLimit reads this process's cgroup v2 memory.max (or v1's memory.limit_in_bytes).
func cgroupMemoryLimit() (int64, bool) {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		// "max", or v1's "no limit" (a page-rounded MaxInt64).
		if err != nil || v <= 0 || v >= math.MaxInt64/2 {
			return 0, false
		}
		return v, true
	}
	return 0, false
}
