// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrOutputTooLarge is the error (wrapped) of Run, ListFiles and the file helpers when what a
// command in the sandbox wrote is over the SDK's bound: the sandbox's code decides how much it
// writes, and a client serving many callers (sandbox-mcp) must not hold all of it.
var ErrOutputTooLarge = errors.New("sandbox: output over the SDK's bound")

const (
	// MaxRunOutputBytes bounds each of stdout and stderr that Run collects (and with it what
	// ListFiles and the size checks of the file helpers read). Exec with writers of one's own
	// streams output of any size.
	MaxRunOutputBytes = 16 << 20
	// maxHelperStderrBytes bounds the stderr of tar, which is only ever a message.
	maxHelperStderrBytes = 64 << 10
)

// boundedBuffer collects at most limit bytes. The first write past it stops collecting and
// cancels the command's context with an ErrOutputTooLarge cause, so the stream is torn down
// rather than drained; later writes are accepted and dropped.
type boundedBuffer struct {
	buf    bytes.Buffer
	limit  int
	what   string
	cancel context.CancelCauseFunc
	over   bool
}

func newBoundedBuffer(limit int, what string, cancel context.CancelCauseFunc) *boundedBuffer {
	return &boundedBuffer{limit: limit, what: what, cancel: cancel}
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.over {
		return len(p), nil
	}
	if b.buf.Len()+len(p) > b.limit {
		b.over = true
		b.cancel(fmt.Errorf("%w: %s wrote more than %d bytes", ErrOutputTooLarge, b.what, b.limit))
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *boundedBuffer) String() string { return b.buf.String() }

// overflow is the cause ctx was cancelled with when a bounded buffer overflowed, else nil.
func overflow(ctx context.Context) error {
	if cause := context.Cause(ctx); errors.Is(cause, ErrOutputTooLarge) {
		return cause
	}
	return nil
}

// notOption makes a path that a command would read as an option (it starts with '-') a path
// again: "-delete" becomes "./-delete", the same file. Every path the SDK passes to a command
// goes through it, besides the "--" the commands get where they take it.
func notOption(p string) string {
	if strings.HasPrefix(p, "-") {
		return "./" + p
	}
	return p
}
