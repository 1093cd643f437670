// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// planeProcesses are the local plane's processes, by the names of hack/local-up.sh's PID files.
var planeProcesses = []string{"sandbox-apiserver", "sandbox-etcd", "kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"}

// loadGenerator names the benchmark's own process in a planeCPU.
const loadGenerator = "load-generator"

// userHZ is the unit of the CPU times in /proc/PID/stat: the kernel's USER_HZ, 100 on Linux.
const userHZ = 100

// planeCPU is the CPU time, in seconds, each process of the local plane (and the benchmark
// itself) has used since it started. Two of them, subtracted, say where a phase's CPU went: the
// machine's cores are shared by all, so a figure per operation over all processes is what caps
// the rate.
type planeCPU map[string]float64

// readPlaneCPU reads the CPU times of the plane's processes through the PID files of
// hack/local-up.sh. A process without a PID file or /proc entry is left out.
func (c *cluster) readPlaneCPU() planeCPU {
	cpu := planeCPU{}
	if s, ok := processCPUSeconds("self"); ok {
		cpu[loadGenerator] = s
	}
	for _, name := range planeProcesses {
		pid, err := planePID(c.plane, name)
		if err != nil {
			continue
		}
		if s, ok := processCPUSeconds(pid); ok {
			cpu[name] = s
		}
	}
	return cpu
}

// planePID is the PID of a plane process, from the PID file hack/local-up.sh keeps in the plane's
// directory.
func planePID(plane, name string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(plane, "pids", name+".pid"))
	return strings.TrimSpace(string(raw)), err
}

// processCPUSeconds is utime+stime of /proc/PID/stat, in seconds.
func processCPUSeconds(pid string) (float64, bool) {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces; the fields after it start past its ')'.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(raw)[i+1:])
	// After the name: state is field 3, utime field 14 and stime field 15 of the whole line.
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (utime + stime) / userHZ, true
}

// cpuPerOp is the CPU milliseconds per operation each process spent between before and after,
// with their sum as "total". Processes missing from either reading are left out.
func cpuPerOp(before, after planeCPU, ops int) map[string]float64 {
	out := map[string]float64{}
	if ops <= 0 {
		return out
	}
	total := 0.0
	for name, a := range after {
		b, ok := before[name]
		if !ok {
			continue
		}
		ms := (a - b) * 1000 / float64(ops)
		out[name] = round2(ms)
		total += ms
	}
	out["total"] = round2(total)
	return out
}

// formatCPUPerOp prints a cpuPerOp map, largest first.
func formatCPUPerOp(perOp map[string]float64) string {
	names := slices.SortedFunc(maps.Keys(perOp), func(a, b string) int {
		switch {
		case a == "total":
			return -1
		case b == "total":
			return 1
		}
		if perOp[a] != perOp[b] {
			if perOp[a] > perOp[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %.2f", n, perOp[n]))
	}
	return strings.Join(parts, ", ") + " ms"
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
