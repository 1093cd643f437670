package envd

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"k8s.io/client-go/tools/remotecommand"
)

// The process service's calls.

const (
	// defaultKeepalive is the keepalive interval when the client names none; the SDK asks for 50s.
	defaultKeepalive = 50 * time.Second
	minKeepalive     = time.Second
)

// keepaliveInterval is the Keepalive-Ping-Interval the client asked for (seconds).
func keepaliveInterval(r *http.Request) time.Duration {
	secs, err := strconv.Atoi(r.Header.Get("Keepalive-Ping-Interval"))
	if err != nil || secs <= 0 {
		return defaultKeepalive
	}
	return max(time.Duration(secs)*time.Second, minKeepalive)
}

func (s *server) startRPC(ctx context.Context, c *call, req *startRequest, r *http.Request, out *streamWriter) error {
	p, sub, err := s.startProcess(c.sb, c.user, req)
	if err != nil {
		return err
	}
	defer p.unsubscribe(sub)
	// The first event says whether the command started.
	select {
	case ev, ok := <-sub.events:
		if !ok {
			return errorf(codeUnavailable, "the process ended before it started")
		}
		if ev.End != nil {
			msg := "the command could not be started"
			if ev.End.Error != nil && *ev.End.Error != "" {
				msg += ": " + *ev.End.Error
			}
			if !ev.End.Exited {
				// The exec stream itself failed: the sandbox is not reachable.
				return errorf(codeUnavailable, "%s", msg)
			}
			return errorf(codeInvalidArgument, "%s", msg)
		}
		if err := out.send(eventResponse{Event: ev}); err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	return streamEvents(ctx, r, sub, out)
}

func (s *server) connectRPC(ctx context.Context, c *call, req *connectRequest, r *http.Request, out *streamWriter) error {
	p, err := s.table.find(sandboxKey(c.sb), req.Process)
	if err != nil {
		return err
	}
	sub := p.subscribe()
	if sub == nil {
		return errorf(codeNotFound, "process with pid %d ended", p.pid)
	}
	defer p.unsubscribe(sub)
	if err := out.send(eventResponse{Event: processEvent{Start: &startEvent{Pid: p.pid}}}); err != nil {
		return err
	}
	return streamEvents(ctx, r, sub, out)
}

// streamEvents sends a subscriber's events until the process's end, with keepalives between.
func streamEvents(ctx context.Context, r *http.Request, sub *subscriber, out *streamWriter) error {
	keepalive := time.NewTicker(keepaliveInterval(r))
	defer keepalive.Stop()
	for {
		select {
		case ev, ok := <-sub.events:
			if !ok {
				return nil
			}
			if err := out.send(eventResponse{Event: ev}); err != nil {
				return err
			}
			if ev.End != nil {
				return nil
			}
		case <-keepalive.C:
			if err := out.send(eventResponse{Event: processEvent{Keepalive: &struct{}{}}}); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *server) listRPC(_ context.Context, c *call, _ *empty) (*listResponse, error) {
	resp := &listResponse{Processes: []processInfo{}}
	for _, p := range s.table.list(sandboxKey(c.sb)) {
		config := p.config
		// Empty rather than null, as protobuf's JSON would write them.
		if config.Args == nil {
			config.Args = []string{}
		}
		if config.Envs == nil {
			config.Envs = map[string]string{}
		}
		resp.Processes = append(resp.Processes, processInfo{Config: &config, Pid: p.pid, Tag: p.tag})
	}
	return resp, nil
}

func (s *server) sendInputRPC(ctx context.Context, c *call, req *sendInputRequest) (*empty, error) {
	p, err := s.table.find(sandboxKey(c.sb), req.Process)
	if err != nil {
		return nil, err
	}
	if req.Input == nil || (req.Input.Stdin == nil && req.Input.Pty == nil) {
		return nil, errorf(codeInvalidArgument, "field input: stdin or pty bytes are required")
	}
	data := req.Input.Stdin
	if req.Input.Pty != nil {
		if !p.tty {
			return nil, errorf(codeFailedPrecondition, "process %d has no terminal; send its input as stdin", p.pid)
		}
		data = req.Input.Pty
	}
	return &empty{}, p.writeStdin(ctx, data)
}

func (s *server) closeStdinRPC(_ context.Context, c *call, req *closeStdinRequest) (*empty, error) {
	p, err := s.table.find(sandboxKey(c.sb), req.Process)
	if err != nil {
		return nil, err
	}
	return &empty{}, p.closeStdin()
}

func (s *server) updateRPC(_ context.Context, c *call, req *updateRequest) (*empty, error) {
	p, err := s.table.find(sandboxKey(c.sb), req.Process)
	if err != nil {
		return nil, err
	}
	if req.Pty == nil || req.Pty.Size == nil {
		return &empty{}, nil
	}
	if !p.tty {
		return nil, errorf(codeFailedPrecondition, "process %d has no terminal to resize", p.pid)
	}
	size := req.Pty.Size
	if size.Cols == 0 || size.Rows == 0 || size.Cols > maxPTYSide || size.Rows > maxPTYSide {
		return nil, errorf(codeInvalidArgument, "field pty.size: cols and rows must be within 1..%d", maxPTYSide)
	}
	p.sizes.set(remotecommand.TerminalSize{Width: uint16(size.Cols), Height: uint16(size.Rows)})
	return &empty{}, nil
}

// sendSignalRPC signals the process and its descendants in the container. After a SIGKILL the
// process's exec stream ends; if something outside the tree keeps it open, the server closes it.
func (s *server) sendSignalRPC(ctx context.Context, c *call, req *sendSignalRequest) (*empty, error) {
	p, err := s.table.find(sandboxKey(c.sb), req.Process)
	if err != nil {
		return nil, err
	}
	var name string
	switch req.Signal {
	case sigKill:
		name = "KILL"
	case sigTerm:
		name = "TERM"
	default:
		return nil, errorf(codeInvalidArgument, "field signal: %d is not SIGNAL_SIGTERM (15) or SIGNAL_SIGKILL (9)", req.Signal)
	}
	if _, err := s.run(ctx, c.sb, "", killScript, nil, name, strconv.FormatUint(uint64(p.pid), 10)); err != nil {
		return nil, err
	}
	if req.Signal == sigKill {
		select {
		case <-p.done:
		case <-time.After(killGrace):
			p.cancel()
		case <-ctx.Done():
		}
	}
	return &empty{}, nil
}
