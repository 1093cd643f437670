// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package hostchange

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Linux is the real machine: /proc, /sys, the ip and iptables commands.
type Linux struct{}

var _ Host = Linux{}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

func (Linux) Sysctl(name string) (string, error) {
	b, err := os.ReadFile(sysctlPath(name))
	return strings.TrimSpace(string(b)), err
}

func (Linux) SetSysctl(name, value string) error {
	return os.WriteFile(sysctlPath(name), []byte(value), 0o644)
}

func (Linux) Exists(path string) (bool, error) {
	_, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// RemoveAll uses rm's --one-file-system: Go's os.RemoveAll would descend into a mount left
// below the path and empty what it shows.
func (Linux) RemoveAll(path string) error {
	return run("rm", "-rf", "--one-file-system", "--", path)
}

func (Linux) MountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var mounts []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		target := unescapeMountinfo(fields[4])
		if (target == dir || strings.HasPrefix(target, dir+"/")) && !slices.Contains(mounts, target) {
			mounts = append(mounts, target)
		}
	}
	return mounts, s.Err()
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Unmount detaches the mount when a plain unmount finds it busy.
func (Linux) Unmount(target string) error {
	err := syscall.Unmount(target, 0)
	if err == nil || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOENT) {
		return nil // gone already, with its parent
	}
	if err := syscall.Unmount(target, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount %s: %w", target, err)
	}
	return nil
}

func (Linux) InterfaceExists(name string) (bool, error) {
	_, err := net.InterfaceByName(name)
	if err == nil {
		return true, nil
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) || strings.Contains(err.Error(), "no such network interface") {
		return false, nil
	}
	return false, err
}

func (l Linux) AddBridge(name, addr string) error {
	exists, err := l.InterfaceExists(name)
	if err != nil {
		return err
	}
	if !exists {
		if err := run("ip", "link", "add", name, "type", "bridge"); err != nil {
			return err
		}
	}
	if err := run("ip", "addr", "replace", addr, "dev", name); err != nil {
		return err
	}
	return run("ip", "link", "set", name, "up")
}

func (Linux) DeleteInterface(name string) error { return run("ip", "link", "del", name) }

func (Linux) CgroupProcs(dir string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil // the cgroup went away
		}
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return pids, err
}

func (Linux) Kill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// RemoveCgroup removes the directories (a cgroup's files go with it) deepest first.
func (Linux) RemoveCgroup(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range slices.Backward(dirs) {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

func (Linux) IptablesSave(command, table string) (string, error) {
	save, err := exec.LookPath(command + "-save")
	if err != nil {
		return "", ErrNoIptables
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(save, "-t", table)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s-save -t %s: %w: %s", command, table, err, strings.TrimSpace(stderr.String()))
	}
	return out.String(), nil
}

func (Linux) IptablesRestore(command, input string) error {
	var stderr bytes.Buffer
	cmd := exec.Command(command+"-restore", "--noflush", "--wait")
	cmd.Stdin, cmd.Stderr = strings.NewReader(input), &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s-restore: %w: %s", command, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func (Linux) Ipsets() ([]string, error) {
	ipset, err := exec.LookPath("ipset")
	if err != nil {
		return nil, ErrNoIpset
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(ipset, "list", "-n")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ipset list -n: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.Fields(out.String()), nil
}

func (Linux) DestroyIpset(name string) error { return run("ipset", "destroy", name) }

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
