// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ourServer reads the memory of the local plane's sandbox-apiserver process: its RSS from /proc,
// its Go heap from its /metrics, a heap profile from its /debug/pprof (on by default, --profiling).
type ourServer struct {
	// plane is the plane's directory (see cluster.plane).
	plane string
	// get reads a path of the server directly (see cluster.ourGet).
	get func(ctx context.Context, path string) ([]byte, error)
}

// ourServer is the local plane's sandbox-apiserver, for its memory figures.
func (c *cluster) ourServer() *ourServer {
	return &ourServer{plane: c.plane, get: c.ourGet}
}

// rssMiB is the server process's resident set, and the part of it that is mapped files (the
// binary's code and tables), from the PID file hack/local-up.sh keeps.
func (s *ourServer) rssMiB() (rss, file float64, err error) {
	pid, err := planePID(s.plane, "sandbox-apiserver")
	if err != nil {
		return 0, 0, err
	}
	status := "/proc/" + pid + "/status"
	kib := procField(status, "VmRSS")
	if kib == 0 {
		return 0, 0, fmt.Errorf("no VmRSS for sandbox-apiserver (PID %s)", pid)
	}
	return float64(kib) / 1024, float64(procField(status, "RssFile")) / 1024, nil
}

// goMemory is the Go runtime's view of the server's memory, in MiB.
type goMemory struct {
	HeapInuseMiB float64 `json:"heapInuseMiB"`
	// HeapReleasedMiB is heap returned to the OS (not in RSS); HeapIdle minus it is what RSS
	// still holds for the heap beyond what is in use.
	HeapIdleMiB     float64 `json:"heapIdleMiB"`
	HeapReleasedMiB float64 `json:"heapReleasedMiB"`
	// HeapLiveMiB is what the last garbage collection found reachable: the memory the objects
	// need, whatever the collector has not yet reclaimed.
	HeapLiveMiB float64 `json:"heapLiveMiB"`
	// LimitMiB is the Go memory limit (--memory-limit), 0 for none.
	LimitMiB   float64 `json:"limitMiB"`
	Goroutines float64 `json:"goroutines"`
	// GCCPUSeconds and UserCPUSeconds are the runtime's estimates of the CPU time spent collecting
	// garbage and running the server's code since it started.
	GCCPUSeconds   float64 `json:"gcCPUSeconds"`
	UserCPUSeconds float64 `json:"userCPUSeconds"`
}

// goMemory reads go_memstats_* from the server's /metrics.
func (s *ourServer) goMemory(ctx context.Context) (goMemory, error) {
	raw, err := s.get(ctx, "/metrics")
	if err != nil {
		return goMemory{}, err
	}
	var m goMemory
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_memstats_heap_inuse_bytes":
			m.HeapInuseMiB = v / (1 << 20)
		case "go_memstats_heap_idle_bytes":
			m.HeapIdleMiB = v / (1 << 20)
		case "go_memstats_heap_released_bytes":
			m.HeapReleasedMiB = v / (1 << 20)
		case "go_gc_heap_live_bytes":
			m.HeapLiveMiB = v / (1 << 20)
		case "go_gc_gomemlimit_bytes":
			if v < 1<<62 {
				m.LimitMiB = v / (1 << 20)
			}
		case "go_goroutines":
			m.Goroutines = v
		case "go_cpu_classes_gc_total_cpu_seconds_total":
			m.GCCPUSeconds = v
		case "go_cpu_classes_user_cpu_seconds_total":
			m.UserCPUSeconds = v
		}
	}
	return m, nil
}

// heapTop saves a heap profile of the server (after a GC) beside out and writes the top of
// `go tool pprof -top` by in-use space to out.
func (s *ourServer) heapTop(ctx context.Context, out string, lines int) error {
	profile, err := s.get(ctx, "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	pprofFile := strings.TrimSuffix(out, filepath.Ext(out)) + ".pprof"
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(pprofFile, profile, 0o644); err != nil {
		return err
	}
	top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount="+strconv.Itoa(lines), pprofFile).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool pprof: %v: %s", err, top)
	}
	return os.WriteFile(out, top, 0o644)
}

// memorySample is the server's memory at one moment of a run.
type memorySample struct {
	AtS    float64 `json:"atSeconds"`
	RSSMiB float64 `json:"rssMiB"`
	// RSSFileMiB is the part of RSSMiB that is file-backed: the pages of the binary the process
	// has touched, which the kernel may drop and read back, not memory the server allocated.
	RSSFileMiB float64 `json:"rssFileMiB"`
	goMemory
}

func (s *ourServer) sample(ctx context.Context, start time.Time) (memorySample, error) {
	rss, file, err := s.rssMiB()
	if err != nil {
		return memorySample{}, err
	}
	gm, err := s.goMemory(ctx)
	if err != nil {
		return memorySample{}, err
	}
	return memorySample{AtS: time.Since(start).Round(100 * time.Millisecond).Seconds(), RSSMiB: rss, RSSFileMiB: file, goMemory: gm}, nil
}
