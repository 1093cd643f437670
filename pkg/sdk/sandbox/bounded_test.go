// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestBoundedBuffer: what fits is kept; the first write past the bound cancels the command with
// ErrOutputTooLarge naming the stream, and nothing more is kept.
func TestBoundedBuffer(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	b := newBoundedBuffer(8, "ls's stdout", cancel)
	for _, p := range []string{"abc", "defgh"} {
		if n, err := b.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if overflow(ctx) != nil || b.String() != "abcdefgh" {
		t.Fatalf("at the bound: %q, overflow %v", b.String(), overflow(ctx))
	}
	if n, err := b.Write([]byte("i")); n != 1 || err != nil {
		t.Fatalf("Write past the bound = %d, %v; want it accepted (and dropped)", n, err)
	}
	_, _ = b.Write([]byte("more"))
	err := overflow(ctx)
	if !errors.Is(err, ErrOutputTooLarge) || !strings.Contains(err.Error(), "ls's stdout wrote more than 8 bytes") {
		t.Errorf("overflow = %v; want ErrOutputTooLarge naming the stream and the bound", err)
	}
	if b.String() != "abcdefgh" {
		t.Errorf("kept %q past the bound", b.String())
	}
}

// TestNotOption: a path that a command would read as an option is the same path, never an option.
func TestNotOption(t *testing.T) {
	for in, want := range map[string]string{
		"-delete": "./-delete", "--help": "./--help", "-": "./-", "/tmp/-x": "/tmp/-x", "work": "work", ".": ".", "": "",
	} {
		if got := notOption(in); got != want {
			t.Errorf("notOption(%q) = %q; want %q", in, got, want)
		}
	}
}
