// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package hostchange

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Host is the machine as the journal sees it: the real one (Linux) or a fake one in tests.
type Host interface {
	// Sysctl returns a kernel parameter's value (dotted name).
	Sysctl(name string) (string, error)
	SetSysctl(name, value string) error
	// Exists reports whether a path exists (a dangling symlink counts).
	Exists(path string) (bool, error)
	// RemoveAll removes a path and what is below it, never crossing into another filesystem.
	RemoveAll(path string) error
	// MountsUnder lists the mount points at or below dir.
	MountsUnder(dir string) ([]string, error)
	Unmount(target string) error
	InterfaceExists(name string) (bool, error)
	// AddBridge creates the bridge name (unless it exists), gives it addr (CIDR notation) and
	// sets it up.
	AddBridge(name, addr string) error
	DeleteInterface(name string) error
	// CgroupProcs lists the processes in the cgroup dir and every cgroup below it.
	CgroupProcs(dir string) ([]int, error)
	Kill(pid int) error
	// RemoveCgroup removes the cgroup dir and every cgroup below it, deepest first.
	RemoveCgroup(dir string) error
	// IptablesSave returns `COMMAND-save -t TABLE`; ErrNoIptables when COMMAND is not installed.
	IptablesSave(command, table string) (string, error)
	// IptablesRestore feeds input to `COMMAND-restore --noflush`.
	IptablesRestore(command, input string) error
	// Ipsets lists the names of the IP sets (`ipset list -n`); ErrNoIpset when ipset is not
	// installed.
	Ipsets() ([]string, error)
	// DestroyIpset destroys the IP set name.
	DestroyIpset(name string) error
}

// ErrNoIptables is IptablesSave's error when the command is not installed: nothing of it to
// record or undo.
var ErrNoIptables = errors.New("iptables command not installed")

// ErrNoIpset is Ipsets' error when ipset is not installed: no set to record or undo.
var ErrNoIpset = errors.New("ipset command not installed")

// Journal is the record of the host changes of one plane, kept in a file.
type Journal struct {
	path    string
	host    Host
	changes []Change
	// pause waits between two rounds of removing a cgroup (time.Sleep; tests do not wait).
	pause func(time.Duration)
}

// Open reads the journal at path (none yet is an empty journal).
func Open(path string, host Host) (*Journal, error) {
	j := &Journal{path: path, host: host, pause: time.Sleep}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &j.changes); err != nil {
		return nil, fmt.Errorf("host change journal %s: %w", path, err)
	}
	return j, nil
}

// Changes returns the records, oldest first.
func (j *Journal) Changes() []Change { return slices.Clone(j.changes) }

// Empty reports whether nothing is left to undo.
func (j *Journal) Empty() bool { return len(j.changes) == 0 }

// save writes the journal (removes the file once it is empty), atomically.
func (j *Journal) save() error {
	if len(j.changes) == 0 {
		if err := os.Remove(j.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.MarshalIndent(j.changes, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(j.path), 0o755); err != nil {
		return err
	}
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, j.path)
}

// Record notes c before it is made, with what the host holds now (whether it exists, a
// sysctl's value, the mounts or chains already there), and saves the journal. A change already
// recorded keeps its first record: after a crash, or on a second start, what was there before
// the plane is still known. It returns the record as kept.
func (j *Journal) Record(c Change) (Change, error) {
	if i := slices.IndexFunc(j.changes, func(o Change) bool { return o.key() == c.key() }); i >= 0 {
		return j.changes[i], nil
	}
	if err := j.observe(&c); err != nil {
		return c, fmt.Errorf("recording %s: %w", c, err)
	}
	j.changes = append(j.changes, c)
	return c, j.save()
}

// observe fills c with the state of the host before the change.
func (j *Journal) observe(c *Change) error {
	var err error
	switch c.Kind {
	case Sysctl:
		c.Before, err = j.host.Sysctl(c.Name)
		if errors.Is(err, os.ErrNotExist) {
			// The kernel has no such parameter: nothing will set it.
			c.Existed, err = false, nil
		} else {
			c.Existed = err == nil
		}
	case Path, Cgroup:
		c.Existed, err = j.host.Exists(c.Name)
	case Interface:
		c.Existed, err = j.host.InterfaceExists(c.Name)
	case Mounts:
		c.Present, err = j.host.MountsUnder(c.Name)
	case IptablesChains:
		var command, table, saved string
		if command, table, err = splitIptablesName(c.Name); err != nil {
			return err
		}
		saved, err = j.host.IptablesSave(command, table)
		if errors.Is(err, ErrNoIptables) {
			return nil
		}
		c.Present = slices.DeleteFunc(parseIptablesSave(saved).chains, func(name string) bool {
			return !hasPrefix(name, c.Prefixes)
		})
	case Ipsets:
		var sets []string
		sets, err = j.host.Ipsets()
		if errors.Is(err, ErrNoIpset) {
			return nil
		}
		c.Present = slices.DeleteFunc(sets, func(name string) bool { return !hasPrefix(name, c.Prefixes) })
	default:
		return fmt.Errorf("unknown kind %q", c.Kind)
	}
	return err
}

// MakeBridge records the bridge name and creates it with addr: the one change the plane makes
// itself rather than a process it starts.
func (j *Journal) MakeBridge(name, addr, by string) error {
	if _, err := j.Record(Change{Kind: Interface, Name: name, By: by}); err != nil {
		return err
	}
	return j.host.AddBridge(name, addr)
}

// Undo reverts the records newest first, each dropped from the journal once reverted. It goes
// on past a record it cannot revert (that one stays in the journal, for the next stop) and
// returns the errors together. report is told what each step did.
func (j *Journal) Undo(report func(string)) error {
	var errs []error
	for i := len(j.changes) - 1; i >= 0; i-- {
		c := j.changes[i]
		done, err := j.undo(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("undoing %s: %w", c, err))
			continue
		}
		if done != "" {
			report(done)
		}
		j.changes = slices.Delete(j.changes, i, i+1)
		if err := j.save(); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	return errors.Join(errs...)
}

// undo reverts one record; done says what it did ("" when there was nothing to do).
func (j *Journal) undo(c Change) (done string, err error) {
	switch c.Kind {
	case Sysctl:
		if !c.Existed {
			return "", nil
		}
		now, err := j.host.Sysctl(c.Name)
		if err != nil || now == c.Before {
			return "", err
		}
		return fmt.Sprintf("sysctl %s=%s (was %s)", c.Name, c.Before, now), j.host.SetSysctl(c.Name, c.Before)
	case Path:
		return j.removeIfNew(c, j.host.Exists, j.host.RemoveAll, "removed")
	case Interface:
		return j.removeIfNew(c, j.host.InterfaceExists, j.host.DeleteInterface, "deleted the interface")
	case Cgroup:
		return j.removeIfNew(c, j.host.Exists, j.removeCgroup, "removed the cgroup")
	case Mounts:
		return j.unmountNew(c)
	case IptablesChains:
		return j.deleteNewChains(c)
	case Ipsets:
		return j.destroyNewIpsets(c)
	}
	return "", fmt.Errorf("unknown kind %q", c.Kind)
}

func (j *Journal) removeIfNew(c Change, exists func(string) (bool, error), remove func(string) error, verb string) (string, error) {
	if c.Existed {
		return "", nil
	}
	there, err := exists(c.Name)
	if err != nil || !there {
		return "", err
	}
	return verb + " " + c.Name, remove(c.Name)
}

// cgroupRounds bounds the rounds of removing a cgroup, cgroupPause is the wait between two: a
// fork in flight may add a process after a kill, and a cgroup whose last processes were just
// killed stays busy until the kernel has let them go.
const (
	cgroupRounds = 100
	cgroupPause  = 100 * time.Millisecond
)

// removeCgroup kills every process in the cgroup dir (and below) until none is left, then
// removes its directories.
func (j *Journal) removeCgroup(dir string) error {
	var err error
	for range cgroupRounds {
		var pids []int
		if pids, err = j.host.CgroupProcs(dir); err != nil {
			return err
		}
		if len(pids) == 0 {
			if err = j.host.RemoveCgroup(dir); err == nil || !errors.Is(err, syscall.EBUSY) {
				return err
			}
		}
		for _, pid := range pids {
			// A process may exit on its own between the listing and the kill.
			_ = j.host.Kill(pid)
		}
		j.pause(cgroupPause)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("processes keep appearing in %s", dir)
}

func (j *Journal) unmountNew(c Change) (string, error) {
	mounts, err := j.host.MountsUnder(c.Name)
	if err != nil {
		return "", err
	}
	mounts = slices.DeleteFunc(mounts, func(m string) bool { return slices.Contains(c.Present, m) })
	if len(mounts) == 0 {
		return "", nil
	}
	// Deepest first: a mount below another goes before it.
	slices.SortStableFunc(mounts, func(a, b string) int {
		return strings.Count(b, "/") - strings.Count(a, "/")
	})
	var errs []error
	for _, m := range mounts {
		errs = append(errs, j.host.Unmount(m))
	}
	return fmt.Sprintf("unmounted %d mounts under %s", len(mounts), c.Name), errors.Join(errs...)
}

func (j *Journal) deleteNewChains(c Change) (string, error) {
	command, table, err := splitIptablesName(c.Name)
	if err != nil {
		return "", err
	}
	saved, err := j.host.IptablesSave(command, table)
	if errors.Is(err, ErrNoIptables) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	input, chains := deleteChainsInput(parseIptablesSave(saved), table, func(name string) bool {
		return hasPrefix(name, c.Prefixes) && !slices.Contains(c.Present, name)
	})
	if len(chains) == 0 {
		return "", nil
	}
	if err := j.host.IptablesRestore(command, input); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: deleted the %s chains %s", command, table, strings.Join(chains, " ")), nil
}

func (j *Journal) destroyNewIpsets(c Change) (string, error) {
	sets, err := j.host.Ipsets()
	if errors.Is(err, ErrNoIpset) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	sets = slices.DeleteFunc(sets, func(name string) bool {
		return !hasPrefix(name, c.Prefixes) || slices.Contains(c.Present, name)
	})
	if len(sets) == 0 {
		return "", nil
	}
	var errs []error
	for _, s := range sets {
		errs = append(errs, j.host.DestroyIpset(s))
	}
	return fmt.Sprintf("destroyed the IP sets %s", strings.Join(sets, " ")), errors.Join(errs...)
}
