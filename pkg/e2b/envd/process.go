package envd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/remotecommand"
)

// A process outlives the request that started it: the server holds its exec stream, and Start,
// Connect, List, SendInput, CloseStdin, Update and SendSignal find it by its pid (the pid in
// the container) within its sandbox. It ends when its command exits, when it is killed, or
// when its exec stream breaks (the pod went away). A server restart drops the streams: the
// commands go on in the container but are no longer listed.

// killGrace is how long a killed process's exec stream may stay open (a descendant that left
// the process tree may hold its stdout) before the server closes it itself.
const killGrace = 2 * time.Second

// maxPendingBytes bounds the output held while waiting for a process's pid.
const maxPendingBytes = 1 << 20

// maxPTYSide bounds a terminal's columns and rows.
const maxPTYSide = 10000

type process struct {
	sandbox string
	pid     uint32
	tag     *string
	config  processConfig
	tty     bool
	sizes   *sizeQueue

	writeMu     sync.Mutex
	stdinMu     sync.Mutex
	stdin       *io.PipeWriter // nil when started without stdin
	stdinClosed bool

	// events carries what the exec stream produced, in order, to pump.
	events chan processEvent
	// cancel ends the exec stream; done is closed when it has ended.
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	subs  map[*subscriber]struct{}
	ended bool
}

// subscriber is one request streaming a process's events (Start or Connect).
type subscriber struct {
	events chan processEvent
	gone   chan struct{}
}

// processTable holds the running processes by sandbox and pid.
type processTable struct {
	mu        sync.Mutex
	bySandbox map[string]map[uint32]*process
}

func (t *processTable) add(p *process) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bySandbox == nil {
		t.bySandbox = map[string]map[uint32]*process{}
	}
	if t.bySandbox[p.sandbox] == nil {
		t.bySandbox[p.sandbox] = map[uint32]*process{}
	}
	t.bySandbox[p.sandbox][p.pid] = p
}

func (t *processTable) remove(p *process) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bySandbox[p.sandbox][p.pid] == p {
		delete(t.bySandbox[p.sandbox], p.pid)
		if len(t.bySandbox[p.sandbox]) == 0 {
			delete(t.bySandbox, p.sandbox)
		}
	}
}

func (t *processTable) list(sandbox string) []*process {
	t.mu.Lock()
	defer t.mu.Unlock()
	procs := slices.Collect(maps.Values(t.bySandbox[sandbox]))
	slices.SortFunc(procs, func(a, b *process) int { return int(a.pid) - int(b.pid) })
	return procs
}

// find answers the process the selector names, or a not_found error.
func (t *processTable) find(sandbox string, sel *processSelector) (*process, error) {
	if sel == nil || (sel.Pid == nil && sel.Tag == nil) {
		return nil, errorf(codeInvalidArgument, "field process: a pid or a tag selects the process")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if sel.Pid != nil {
		if p := t.bySandbox[sandbox][uint32(*sel.Pid)]; p != nil {
			return p, nil
		}
		return nil, errorf(codeNotFound, "process with pid %d not found", *sel.Pid)
	}
	for _, p := range t.bySandbox[sandbox] {
		if p.tag != nil && *p.tag == *sel.Tag {
			return p, nil
		}
	}
	return nil, errorf(codeNotFound, "process with tag %q not found", *sel.Tag)
}

func sandboxKey(sb *Sandbox) string { return sb.Namespace + "/" + sb.ID }

// processCommand validates a start request and answers the exec command running it.
func processCommand(sb *Sandbox, req *startRequest) ([]string, error) {
	if req.Process == nil || req.Process.Cmd == "" {
		return nil, errorf(codeInvalidArgument, "field process.cmd: the command to run is required")
	}
	env := maps.Clone(sb.Env)
	if env == nil {
		env = map[string]string{}
	}
	for name, value := range req.Process.Envs {
		if !envName.MatchString(name) {
			return nil, errorf(codeInvalidArgument, "field process.envs: %q is not a valid environment variable name", name)
		}
		env[name] = value
	}
	for _, s := range append([]string{req.Process.Cmd}, req.Process.Args...) {
		if bytes.IndexByte([]byte(s), 0) >= 0 {
			return nil, errorf(codeInvalidArgument, "field process.args: arguments cannot contain NUL bytes")
		}
	}
	if req.Pty != nil && req.Pty.Size != nil {
		if sz := req.Pty.Size; sz.Cols == 0 || sz.Rows == 0 || sz.Cols > maxPTYSide || sz.Rows > maxPTYSide {
			return nil, errorf(codeInvalidArgument, "field pty.size: cols and rows must be within 1..%d", maxPTYSide)
		}
	}
	args := []string{strconv.Itoa(len(env))}
	for _, name := range slices.Sorted(maps.Keys(env)) {
		args = append(args, name+"="+env[name])
	}
	cwd := ""
	if req.Process.Cwd != nil {
		cwd = *req.Process.Cwd
	}
	args = append(args, cwd, req.Process.Cmd)
	args = append(args, req.Process.Args...)
	return args, nil
}

// startProcess runs req in the sandbox and answers the process with sub subscribed to it from
// its first event.
func (s *server) startProcess(sb *Sandbox, user string, req *startRequest) (*process, *subscriber, error) {
	args, err := processCommand(sb, req)
	if err != nil {
		return nil, nil, err
	}
	release, err := s.processes.admit(sb)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &process{
		sandbox: sandboxKey(sb),
		tag:     req.Tag,
		config:  *req.Process,
		tty:     req.Pty != nil,
		events:  make(chan processEvent, 16),
		cancel:  cancel,
		done:    make(chan struct{}),
		subs:    map[*subscriber]struct{}{},
	}
	exec := execRequest{Command: shellCommand(user, processScript, args...), TTY: p.tty}
	if p.tty || (req.Stdin != nil && *req.Stdin) {
		r, w := io.Pipe()
		exec.Stdin, p.stdin = r, w
	}
	marker := &markerWriter{p: p}
	if p.tty {
		p.sizes = newSizeQueue(p.done)
		if req.Pty.Size != nil {
			p.sizes.set(remotecommand.TerminalSize{Width: uint16(req.Pty.Size.Cols), Height: uint16(req.Pty.Size.Rows)})
		}
		exec.Sizes = p.sizes
		marker.output = func(b []byte) dataEvent { return dataEvent{Pty: b} }
		exec.Stdout = marker
	} else {
		marker.output = func(b []byte) dataEvent { return dataEvent{Stderr: b} }
		exec.Stdout = &eventWriter{p: p, output: func(b []byte) dataEvent { return dataEvent{Stdout: b} }}
		exec.Stderr = marker
	}
	sub := p.subscribe()
	go p.pump(s.table)
	go func() {
		defer release()
		err := s.exec(ctx, sb, exec)
		p.releaseStdin()
		p.events <- marker.endEvent(err)
		close(p.events)
	}()
	return p, sub, nil
}

// pump hands the exec stream's events to the subscribers: data waits for the start event (the
// pid comes on stderr, which may lag stdout), and the process is findable from its start to
// its end.
func (p *process) pump(table *processTable) {
	var pending []processEvent
	pendingBytes := 0
	started, gaveUp := false, false
	for ev := range p.events {
		switch {
		case ev.Start != nil:
			started = true
			p.pid = ev.Start.Pid
			table.add(p)
			p.fanout(ev)
			for _, held := range pending {
				p.fanout(held)
			}
			pending = nil
		case ev.End != nil && !started:
			// It never ran: what it wrote (a shell's or su's complaint) says why.
			if gaveUp {
				msg := fmt.Sprintf("the sandbox's /bin/sh wrote %d bytes without reporting the process's pid; is it a POSIX shell?", pendingBytes)
				ev.End.Error = &msg
			} else if ev.End.Error == nil {
				var why []byte
				for _, held := range pending {
					why = append(append(why, held.Data.Stderr...), held.Data.Pty...)
				}
				msg := strings.TrimSpace(string(why[:min(len(why), 1024)]))
				ev.End.Error = &msg
			}
			p.fanout(ev)
		case ev.End != nil:
			table.remove(p)
			p.fanout(ev)
		case !started:
			pending = append(pending, ev)
			// A wrapper that never reports its pid (an image whose /bin/sh is not a shell) is
			// ended rather than held in memory.
			if pendingBytes += len(ev.Data.Stdout) + len(ev.Data.Stderr) + len(ev.Data.Pty); pendingBytes > maxPendingBytes && !gaveUp {
				gaveUp = true
				p.cancel()
			}
		default:
			p.fanout(ev)
		}
	}
	p.mu.Lock()
	p.ended = true
	for sub := range p.subs {
		close(sub.events)
	}
	p.subs = nil
	p.mu.Unlock()
	p.cancel()
	close(p.done)
}

// fanout sends ev to every subscriber still there; a slow one slows the process's output (its
// exec stream) rather than losing any.
func (p *process) fanout(ev processEvent) {
	p.mu.Lock()
	subs := slices.Collect(maps.Keys(p.subs))
	p.mu.Unlock()
	for _, sub := range subs {
		select {
		case sub.events <- ev:
		case <-sub.gone:
		}
	}
}

// subscribe answers a subscriber of the events to come, or nil when the process has ended.
func (p *process) subscribe() *subscriber {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil
	}
	sub := &subscriber{events: make(chan processEvent, 16), gone: make(chan struct{})}
	p.subs[sub] = struct{}{}
	return sub
}

func (p *process) unsubscribe(sub *subscriber) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.subs[sub]; ok {
		delete(p.subs, sub)
	}
	close(sub.gone)
}

// writeStdin feeds data to the process's stdin, waiting at most for ctx.
func (p *process) writeStdin(ctx context.Context, data []byte) error {
	// One write at a time, so that inputs do not interleave; stdinMu is not held while
	// waiting, so that closing stdin ends a blocked write.
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	p.stdinMu.Lock()
	stdin, closed := p.stdin, p.stdinClosed
	p.stdinMu.Unlock()
	if stdin == nil {
		return errorf(codeFailedPrecondition, "process %d was started without stdin", p.pid)
	}
	if closed {
		return errorf(codeFailedPrecondition, "the stdin of process %d is closed", p.pid)
	}
	written := make(chan error, 1)
	go func() {
		_, err := stdin.Write(data)
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			return errorf(codeFailedPrecondition, "the stdin of process %d is closed", p.pid)
		}
		return nil
	case <-p.done:
		return errorf(codeNotFound, "process with pid %d ended", p.pid)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *process) closeStdin() error {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin == nil {
		return errorf(codeFailedPrecondition, "process %d was started without stdin", p.pid)
	}
	p.stdinClosed = true
	return p.stdin.Close()
}

// releaseStdin closes the stdin pipe of an ended process, so that what still waits on it (the
// exec stream's copy, a SendInput) returns.
func (p *process) releaseStdin() {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin != nil {
		p.stdinClosed = true
		_ = p.stdin.Close()
	}
}

// markerWriter takes the stream the wrapper reports on (stderr, or the terminal): it turns the
// pid marker into the start event and passes everything else on as output.
type markerWriter struct {
	p        *process
	output   func([]byte) dataEvent
	buf      []byte
	found    bool
	startErr string
}

// maxMarkerLine bounds what is held while looking for the pid marker.
const maxMarkerLine = 64 << 10

func (m *markerWriter) Write(b []byte) (int, error) {
	if m.found {
		m.p.emit(m.output(b))
		return len(b), nil
	}
	m.buf = append(m.buf, b...)
	for !m.found {
		i := bytes.IndexByte(m.buf, '\n')
		if i < 0 {
			if len(m.buf) > maxMarkerLine {
				m.found = true
				m.p.emit(m.output(m.buf))
				m.buf = nil
			}
			break
		}
		line := bytes.TrimRight(m.buf[:i], "\r")
		rest := m.buf[i+1:]
		switch {
		case bytes.HasPrefix(line, []byte(pidMarker)):
			pid, err := strconv.ParseUint(string(line[len(pidMarker):]), 10, 32)
			if err != nil {
				m.p.emit(m.output(m.buf[:i+1]))
				break
			}
			m.found = true
			m.p.events <- processEvent{Start: &startEvent{Pid: uint32(pid)}}
			if len(rest) > 0 {
				m.p.emit(m.output(rest))
			}
			rest = nil
		case bytes.HasPrefix(line, []byte(errorMarker)):
			m.startErr = string(line[len(errorMarker):])
		default:
			// Something written before the command ran (a warning of su, say).
			m.p.emit(m.output(slices.Clone(m.buf[:i+1])))
		}
		m.buf = rest
	}
	return len(b), nil
}

// endEvent is the process's end from its exec stream's error.
func (m *markerWriter) endEvent(err error) processEvent {
	end := &endEvent{Exited: true, Status: "exit status 0"}
	var exit *exitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		end.ExitCode = int32(exit.Code)
		end.Status = fmt.Sprintf("exit status %d", exit.Code)
	default:
		end.ExitCode, end.Exited, end.Status = -1, false, "error"
		msg := err.Error()
		if errors.Is(err, context.Canceled) {
			msg, end.Status = "killed", "signal: killed"
		}
		end.Error = &msg
	}
	if !m.found && m.startErr != "" {
		end.Error = &m.startErr
	}
	return processEvent{End: end}
}

// eventWriter passes a stream's bytes on as output events.
type eventWriter struct {
	p      *process
	output func([]byte) dataEvent
}

func (w *eventWriter) Write(b []byte) (int, error) {
	w.p.emit(w.output(b))
	return len(b), nil
}

// emit queues one output event; remotecommand reuses its buffer, so the bytes are copied.
func (p *process) emit(data dataEvent) {
	data.Stdout, data.Stderr, data.Pty = slices.Clone(data.Stdout), slices.Clone(data.Stderr), slices.Clone(data.Pty)
	p.events <- processEvent{Data: &data}
}
