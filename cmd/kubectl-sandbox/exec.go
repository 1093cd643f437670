// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

func newExecCommand(o *options) *cobra.Command {
	var (
		stdin, tty bool
		container  string
	)
	cmd := &cobra.Command{
		Use:   "exec [-i] [-t] [-c CONTAINER] NAME -- COMMAND [ARGS...]",
		Short: "Run a command in a sandbox",
		Long: `Run a command in a sandbox, through the exec subresource of its claim (or of the
sandbox). The command's exit code is kubectl sandbox's exit code.`,
		Example: `  kubectl sandbox exec mine -- python3 -c 'print(6*7)'
  kubectl sandbox exec -it mine -- bash
  tar cf - src | kubectl sandbox exec -i mine -- tar xf - -C /work`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, command, err := parseExecArgs(args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			sb, err := o.open(ctx, name)
			if err != nil {
				return err
			}
			exec := sandbox.ExecOptions{Command: command, Container: container, Stdout: o.Out, Stderr: o.ErrOut, TTY: tty}
			if stdin {
				exec.Stdin = o.In
			}
			if tty {
				restore, sizes, err := rawTerminal(o, stdin)
				if err != nil {
					return err
				}
				defer restore()
				exec.TTY = sizes != nil || !stdin
				exec.TerminalSizes = sizes
			}
			return sb.Exec(ctx, exec)
		},
	}
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "pass stdin to the command")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "stdin is a TTY")
	cmd.Flags().StringVarP(&container, "container", "c", "", "the container (default: the sandbox's main container)")
	return cmd
}

// parseExecArgs splits NAME -- COMMAND...; dash is where -- was (cobra's ArgsLenAtDash).
func parseExecArgs(args []string, dash int) (name string, command []string, err error) {
	switch {
	case dash < 0:
		return "", nil, errors.New("give the command after --: exec NAME -- COMMAND [ARGS...]")
	case dash != 1:
		return "", nil, fmt.Errorf("exactly one NAME before --, got %d", dash)
	case len(args) == dash:
		return "", nil, errors.New("no command after --")
	}
	return args[0], args[1:], nil
}

// rawTerminal puts the plugin's terminal in raw mode when stdin is one and passed on, and
// reports its size and every change of it. It warns, as kubectl does, when a TTY is asked for
// with a stdin that is not a terminal (no size queue then).
func rawTerminal(o *options, stdin bool) (restore func(), sizes remotecommand.TerminalSizeQueue, err error) {
	in, ok := o.In.(*os.File)
	if !stdin {
		return func() {}, nil, nil
	}
	if !ok || !term.IsTerminal(int(in.Fd())) {
		fmt.Fprintln(o.ErrOut, "Unable to use a TTY - input is not a terminal or the right kind of file")
		return func() {}, nil, nil
	}
	state, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return nil, nil, err
	}
	queue := newSizeQueue(int(in.Fd()))
	return func() {
		queue.stop()
		_ = term.Restore(int(in.Fd()), state)
	}, queue, nil
}

// sizeQueue reports the terminal's size, first at once and then on every SIGWINCH.
type sizeQueue struct {
	fd      int
	sizes   chan remotecommand.TerminalSize
	signals chan os.Signal
	done    chan struct{}
}

func newSizeQueue(fd int) *sizeQueue {
	q := &sizeQueue{fd: fd, sizes: make(chan remotecommand.TerminalSize, 1), signals: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(q.signals, syscall.SIGWINCH)
	q.push()
	go func() {
		for {
			select {
			case <-q.signals:
				q.push()
			case <-q.done:
				return
			}
		}
	}()
	return q
}

func (q *sizeQueue) push() {
	width, height, err := term.GetSize(q.fd)
	if err != nil {
		return
	}
	size := remotecommand.TerminalSize{Width: uint16(width), Height: uint16(height)}
	// Only the latest size matters.
	select {
	case <-q.sizes:
	default:
	}
	q.sizes <- size
}

// Next blocks until the size changes; nil ends the queue.
func (q *sizeQueue) Next() *remotecommand.TerminalSize {
	select {
	case size := <-q.sizes:
		return &size
	case <-q.done:
		return nil
	}
}

func (q *sizeQueue) stop() {
	signal.Stop(q.signals)
	close(q.done)
}
