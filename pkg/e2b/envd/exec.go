package envd

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// execRequest is one command run in the sandbox's container over pods/exec.
type execRequest struct {
	Command []string
	// Stdin, when set, is the command's standard input; its EOF closes the command's stdin.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// TTY runs the command on a terminal (stderr is merged into stdout), sized by Sizes.
	TTY   bool
	Sizes remotecommand.TerminalSizeQueue
}

// execFunc runs one command to its end: nil when it exited 0, an *exitError when it exited
// otherwise, another error when it could not run or its stream broke.
type execFunc func(ctx context.Context, sb *Sandbox, req execRequest) error

// exitError is a command's non-zero exit.
type exitError struct{ Code int }

func (e *exitError) Error() string { return fmt.Sprintf("command exited with code %d", e.Code) }

// podExec is the real execFunc: a pods/exec stream over WebSocket (the v5 channel protocol,
// which can close stdin alone) with SPDY as the fallback, as kubectl does.
func (s *server) podExec(ctx context.Context, sb *Sandbox, req execRequest) error {
	u := s.cfg.Client.CoreV1().RESTClient().Post().
		Namespace(sb.Namespace).Resource("pods").Name(sb.Pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: sb.Container,
			Command:   req.Command,
			Stdin:     req.Stdin != nil,
			Stdout:    req.Stdout != nil,
			Stderr:    req.Stderr != nil && !req.TTY,
			TTY:       req.TTY,
		}, scheme.ParameterCodec).URL()
	spdyExec, err := remotecommand.NewSPDYExecutor(s.cfg.RESTConfig, "POST", u)
	if err != nil {
		return err
	}
	wsExec, err := remotecommand.NewWebSocketExecutor(s.cfg.RESTConfig, "GET", u.String())
	if err != nil {
		return err
	}
	executor, err := remotecommand.NewFallbackExecutor(wsExec, spdyExec, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	opts := remotecommand.StreamOptions{Stdin: req.Stdin, Stdout: req.Stdout, Tty: req.TTY, TerminalSizeQueue: req.Sizes}
	if !req.TTY {
		opts.Stderr = req.Stderr
	}
	err = executor.StreamWithContext(ctx, opts)
	// client-go's exec.CodeExitError, from the kubelet's NonZeroExitCode status.
	var coded interface{ ExitStatus() int }
	if errors.As(err, &coded) && coded.ExitStatus() != 0 {
		return &exitError{Code: coded.ExitStatus()}
	}
	return err
}

// sizeQueue hands a terminal's sizes to remotecommand: the latest one wins.
type sizeQueue struct {
	ch   chan remotecommand.TerminalSize
	done <-chan struct{}
}

func newSizeQueue(done <-chan struct{}) *sizeQueue {
	return &sizeQueue{ch: make(chan remotecommand.TerminalSize, 1), done: done}
}

// Next blocks until a new size or the end of the process.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case size := <-q.ch:
		return &size
	case <-q.done:
		return nil
	}
}

// set replaces a size not yet taken by the newest one.
func (q *sizeQueue) set(size remotecommand.TerminalSize) {
	for {
		select {
		case q.ch <- size:
			return
		default:
			select {
			case <-q.ch:
			default:
			}
		}
	}
}
