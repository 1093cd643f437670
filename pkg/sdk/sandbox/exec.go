// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	corev1 "k8s.io/api/core/v1"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/util/podexec"
)

// ExecOptions says what Exec runs and where its streams go.
type ExecOptions struct {
	// Command is the program and its arguments, run without a shell.
	Command []string
	// Container names the container; empty means the handle's (see InContainer), by default the
	// pod's first, its main container.
	Container string
	// Stdin, when set, is copied to the command's standard input.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output as it comes; nil discards it.
	Stdout, Stderr io.Writer
	// TTY runs the command in a terminal; its output then all comes on Stdout.
	TTY bool
	// TerminalSizes, with TTY, tells the terminal's size, and each change of it.
	TerminalSizes remotecommand.TerminalSizeQueue
}

// ExitError is the error of a command that ran and exited non-zero.
type ExitError struct {
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("command exited with code %d", e.Code) }

// ExitCode is the exit code err carries: 0 for nil, the code of an *ExitError, and -1 for any
// other error (the command did not run or its stream broke).
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var exitErr *ExitError
	if errors.As(err, &exitErr) {
		return exitErr.Code
	}
	return -1
}

// Exec runs a command in the sandbox through the exec subresource, streaming its input and
// output, and returns when it exits: nil for exit code 0, an *ExitError for another code, any
// other error when it could not run or its stream broke. Cancelling ctx ends the stream. The
// command is run once, never retried.
func (s *Sandbox) Exec(ctx context.Context, o ExecOptions) (err error) {
	ctx, span := s.startSpan(ctx, "sandbox.Exec", attribute.String("sandbox.command", commandName(o.Command)))
	defer func() { endSpan(span, err) }()
	if len(o.Command) == 0 {
		return errors.New("sandbox: Exec needs a command")
	}
	container := o.Container
	if container == "" {
		container = s.container
	}
	req := s.subresource("POST", "exec").SpecificallyVersionedParams(&corev1.PodExecOptions{
		Container: container,
		Command:   o.Command,
		Stdin:     o.Stdin != nil,
		Stdout:    o.Stdout != nil,
		Stderr:    o.Stderr != nil && !o.TTY,
		TTY:       o.TTY,
	}, kscheme.ParameterCodec, corev1.SchemeGroupVersion)
	// The query is in pods/exec's terms (core/v1), not the claim's group version.
	if err := req.Error(); err != nil {
		return err
	}
	executor, err := s.client.executor(req.URL())
	if err != nil {
		return err
	}
	streamOpts := remotecommand.StreamOptions{Stdin: o.Stdin, Stdout: o.Stdout, Tty: o.TTY, TerminalSizeQueue: o.TerminalSizes}
	if !o.TTY {
		streamOpts.Stderr = o.Stderr
	}
	err = exitError(executor.StreamWithContext(ctx, streamOpts))
	if code := ExitCode(err); code > 0 {
		span.SetAttributes(attribute.Int("process.exit.code", code))
	}
	return err
}

// executor streams over WebSocket, falling back to SPDY.
func (c *Client) executor(u *url.URL) (remotecommand.Executor, error) {
	return podexec.Executor(c.config, u)
}

// exitCodeInText finds the code in the message of an exit reported as text only (kwok's
// kubelet does not fill in the ExitCode cause the kubelet sends).
var exitCodeInText = regexp.MustCompile(`(?:exit code|exit status)[: ]+(\d+)`)

// exitError turns the error of a finished stream into an *ExitError when it says the command
// exited non-zero.
func exitError(err error) error {
	if err == nil {
		return nil
	}
	// client-go's exec.CodeExitError, from the kubelet's NonZeroExitCode status.
	var coded interface{ ExitStatus() int }
	if errors.As(err, &coded) && coded.ExitStatus() != 0 {
		return &ExitError{Code: coded.ExitStatus()}
	}
	if m := exitCodeInText.FindStringSubmatch(err.Error()); m != nil {
		if code, convErr := strconv.Atoi(m[1]); convErr == nil && code != 0 {
			return &ExitError{Code: code}
		}
	}
	return err
}

// Result is what Run collected.
type Result struct {
	Stdout, Stderr string
	ExitCode       int
}

// Run runs command (no shell) and collects its output. A command that ran reports its exit
// code in Result.ExitCode with a nil error; the error is for a command that could not run or
// whose stream broke, or that wrote more than MaxRunOutputBytes on stdout or stderr (then an
// ErrOutputTooLarge, and the command is stopped).
func (s *Sandbox) Run(ctx context.Context, command ...string) (*Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	name := commandName(command)
	stdout := newBoundedBuffer(MaxRunOutputBytes, name+"'s stdout", cancel)
	stderr := newBoundedBuffer(MaxRunOutputBytes, name+"'s stderr", cancel)
	err := s.Exec(ctx, ExecOptions{Command: command, Stdout: stdout, Stderr: stderr})
	if tooLarge := overflow(ctx); tooLarge != nil {
		return nil, tooLarge
	}
	code := ExitCode(err)
	if code < 0 {
		return nil, err
	}
	return &Result{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: code}, nil
}

func commandName(command []string) string {
	if len(command) == 0 {
		return ""
	}
	return command[0]
}
