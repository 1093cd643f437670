// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Runner starts and stops the plane's components as background processes, each in its own
// session, its output appended to its log and its process ID in its PID file.
type Runner struct {
	Config Config
	// Log reports what it does, as hack/lib/common.sh's log does.
	Log func(format string, args ...any)
}

// pid reads the component's PID file (0 when there is none).
func (r Runner) pid(name string) int {
	b, err := os.ReadFile(r.Config.Pidfile(name))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// alive reports whether the process exists and is not a zombie.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true // no /proc to ask: kill -0 said it exists
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, the state follows the last ')'.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// Running returns the component's process ID when its PID file names a live process running its
// binary (so a recycled PID is not taken for it).
func (r Runner) Running(c Component) (int, bool) {
	pid := r.pid(c.Name)
	if !alive(pid) {
		return pid, false
	}
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	if err != nil {
		return pid, true // not ours to read: the PID file and a live process will do
	}
	return pid, filepath.Base(strings.TrimSuffix(exe, " (deleted)")) == filepath.Base(c.Binary)
}

// Start launches the component unless it runs, after checking its ports, and waits until it is
// ready; one that does not get ready is stopped, and the error carries the end of its log.
func (r Runner) Start(ctx context.Context, c Component) error {
	if pid, ok := r.Running(c); ok {
		r.Log("%s: already running (PID %d)", c.Name, pid)
		return nil
	}
	if err := r.CheckPorts(c); err != nil {
		return err
	}
	if _, err := os.Stat(c.Binary); err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	r.Log("%s: starting", c.Name)
	logFrom, err := r.launch(c)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	if err := r.waitReady(ctx, c, logFrom); err != nil {
		r.Log("ERROR: %s: %v", c.Name, err)
		r.printLogTail(c)
		r.Stop(c)
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	r.Log("%s: ready", c.Name)
	return nil
}

// launch starts the process in a session of its own and returns where its log stood.
func (r Runner) launch(c Component) (int64, error) {
	for _, d := range []string{r.Config.Logs(), r.Config.Pids()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 0, err
		}
	}
	for _, d := range c.Dirs {
		if err := privateDir(d); err != nil {
			return 0, err
		}
	}
	log, err := os.OpenFile(r.Config.Log(c.Name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	fmt.Fprintf(log, "\n==== %s starting %s %s\n", time.Now().UTC().Format(time.RFC3339), c.Name, strings.Join(c.Args, " "))
	logFrom, err := log.Seek(0, 2)
	if err != nil {
		return 0, err
	}
	_ = os.Remove(r.Config.Pidfile(c.Name))
	cmd := exec.Command(c.Binary, c.Args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	// Not waited for: the process outlives this command, and init reaps it.
	_ = cmd.Process.Release()
	return logFrom, os.WriteFile(r.Config.Pidfile(c.Name), []byte(strconv.Itoa(pid)+"\n"), 0o644)
}

// privateDir makes dir with mode 0700, or sets an existing one's; the directories above it are
// made open to all (0755): the real node's containers in a user namespace reach their root
// filesystems below _output/local, as a user other than root.
func privateDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// readyPoll is how often readiness is checked during a start.
const readyPoll = 500 * time.Millisecond

func (r Runner) waitReady(ctx context.Context, c Component, logFrom int64) error {
	deadline := time.Now().Add(r.Config.StartTimeout)
	for {
		if _, ok := r.Running(c); !ok {
			return errors.New("exited during start-up")
		}
		if c.Ready.check(ctx, r.Config.Log(c.Name), logFrom) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", r.Config.StartTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(readyPoll):
		}
	}
}

// printLogTail prints the last lines of the component's log to stderr.
func (r Runner) printLogTail(c Component) {
	b, err := os.ReadFile(r.Config.Log(c.Name))
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	lines = lines[max(0, len(lines)-30):]
	rel, _ := filepath.Rel(r.Config.Root, r.Config.Log(c.Name))
	fmt.Fprintf(os.Stderr, "---- last 30 lines of %s ----\n%s\n----\n", rel, strings.Join(lines, "\n"))
}

// Stop ends the component with SIGTERM, then SIGKILL after StopTimeout, and removes its PID
// file. A PID file naming no live process, or another program, is only removed.
func (r Runner) Stop(c Component) {
	pid := r.pid(c.Name)
	if pid == 0 {
		return
	}
	defer os.Remove(r.Config.Pidfile(c.Name))
	if !alive(pid) {
		r.Log("%s: not running (removing stale PID file)", c.Name)
		return
	}
	if _, ok := r.Running(c); !ok {
		r.Log("%s: PID %d is not %s any more (removing stale PID file)", c.Name, pid, c.Name)
		return
	}
	r.Log("%s: stopping (PID %d)", c.Name, pid)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	if waitGone(pid, r.Config.StopTimeout) {
		return
	}
	r.Log("%s: still running after %s, sending SIGKILL", c.Name, r.Config.StopTimeout)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if !waitGone(pid, 5*time.Second) {
		r.Log("WARNING: %s: PID %d survived SIGKILL", c.Name, pid)
	}
}

// Kill ends the component with SIGKILL at once: no graceful shutdown (the fault tests).
func (r Runner) Kill(c Component) error {
	pid, ok := r.Running(c)
	defer os.Remove(r.Config.Pidfile(c.Name))
	if !ok {
		r.Log("%s: not running", c.Name)
		return nil
	}
	r.Log("%s: sending SIGKILL (PID %d)", c.Name, pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	if !waitGone(pid, 5*time.Second) {
		return fmt.Errorf("%s: PID %d survived SIGKILL", c.Name, pid)
	}
	r.Log("%s: killed", c.Name)
	return nil
}

// waitGone waits until the process is gone (or a zombie), at most timeout.
func waitGone(pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}

// Status says whether the component runs, as status prints it.
func (r Runner) Status(c Component) (string, bool) {
	if pid, ok := r.Running(c); ok {
		return fmt.Sprintf("running (PID %d)", pid), true
	}
	if pid := r.pid(c.Name); pid != 0 {
		rel, _ := filepath.Rel(r.Config.Root, r.Config.Log(c.Name))
		return fmt.Sprintf("not running (exited; PID file left from %d, see %s)", pid, rel), false
	}
	return "stopped", false
}

// CheckPorts fails when another process listens on one of the component's ports, naming it.
func (r Runner) CheckPorts(c Component) error {
	for _, p := range c.Ports {
		if PortInUse(c.Listen, p) {
			return fmt.Errorf("%s: port %d is already in use (set the matching *_PORT variable to move it)%s",
				c.Name, p, portOwner(p))
		}
	}
	return nil
}

// PortInUse reports whether something listens on the TCP port (/proc/net/tcp and tcp6: state
// 0A is LISTEN) where a process binding it on addr would collide: on addr or on every address,
// or, with addr unset, on any address.
func PortInUse(addr netip.Addr, port int) bool {
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			continue
		}
		s := bufio.NewScanner(file)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) > 3 && fields[3] == "0A" && strings.HasSuffix(fields[1], want) &&
				collides(addr, strings.TrimSuffix(fields[1], want)) {
				file.Close()
				return true
			}
		}
		file.Close()
	}
	return false
}

// collides says whether a listener on the address /proc/net/tcp* prints as hexAddr (each 32-bit
// word in the host's little-endian order) holds a port for a process binding it on addr.
func collides(addr netip.Addr, hexAddr string) bool {
	b, err := hex.DecodeString(hexAddr)
	if !addr.IsValid() || err != nil || len(b)%4 != 0 {
		return true
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	listener, ok := netip.AddrFromSlice(b)
	if !ok {
		return true
	}
	listener = listener.Unmap()
	return listener.IsUnspecified() || listener == addr.Unmap()
}

// portOwner describes the listener on the port when ss can tell.
func portOwner(port int) string {
	out, err := exec.Command("ss", "-Hltnp", fmt.Sprintf("sport = :%d", port)).Output()
	if err != nil || len(strings.TrimSpace(string(out))) == 0 {
		return ""
	}
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		b.WriteString("\n    " + strings.Join(strings.Fields(line), " "))
	}
	return ":" + b.String()
}
