// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package mcpserver

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestHeadTailBuffer(t *testing.T) {
	b := newHeadTailBuffer(10)
	b.Write([]byte("hello"))
	if b.Truncated() || b.String() != "hello" {
		t.Errorf("under the limit: %q, truncated %v", b.String(), b.Truncated())
	}

	b = newHeadTailBuffer(10)
	// Written in pieces of every size, so the ring wraps at odd places.
	for _, piece := range []string{"0123", "4567890abc", "d", "efghijklmnopqrstu", "vwxyz"} {
		b.Write([]byte(piece))
	}
	got := b.String()
	if !b.Truncated() || !strings.HasPrefix(got, "01234\n") || !strings.HasSuffix(got, "\nvwxyz") || !strings.Contains(got, "[... 27 bytes omitted ...]") {
		t.Errorf("over the limit: %q, truncated %v", got, b.Truncated())
	}

	b = newHeadTailBuffer(10)
	b.Write([]byte("0123456789"))
	if b.Truncated() || b.String() != "0123456789" {
		t.Errorf("at the limit: %q, truncated %v", b.String(), b.Truncated())
	}

	// 64 KiB of output and more: the head and tail are kept, the size stays bounded.
	b = newHeadTailBuffer(64 << 10)
	line := []byte(strings.Repeat("x", 99) + "\n")
	for range 10000 {
		b.Write(line)
	}
	if !b.Truncated() || len(b.String()) > 64<<10+100 {
		t.Errorf("1 MB written: %d bytes kept, truncated %v", len(b.String()), b.Truncated())
	}

	// A multi-byte character cut at the edges is dropped, not broken.
	b = newHeadTailBuffer(6)
	b.Write([]byte("aaéé" + strings.Repeat("b", 20) + "éé"))
	if got := b.String(); !strings.HasPrefix(got, "aa\n") || !strings.HasSuffix(got, "\né") {
		t.Errorf("cut characters: %q", got)
	}
}

func TestContentEncoding(t *testing.T) {
	binary := []byte{0, 1, 2, 0xff, 0xfe, '\n'}
	data, err := decodeContent(base64.StdEncoding.EncodeToString(binary), "base64")
	if err != nil || !bytes.Equal(data, binary) {
		t.Errorf("decode base64: %v, %v", data, err)
	}
	if _, err := decodeContent("not base64!", "base64"); err == nil {
		t.Error("decode of invalid base64 succeeded")
	}
	if _, err := decodeContent("x", "hex"); err == nil || !strings.Contains(err.Error(), "base64") {
		t.Errorf("unknown encoding: %v", err)
	}
	if data, _ := decodeContent("héllo", ""); string(data) != "héllo" {
		t.Errorf("decode text: %q", data)
	}

	if content, enc, _ := encodeContent([]byte("héllo\n"), ""); content != "héllo\n" || enc != "text" {
		t.Errorf("auto of text: %q %s", content, enc)
	}
	if content, enc, _ := encodeContent(binary, "auto"); enc != "base64" || content != base64.StdEncoding.EncodeToString(binary) {
		t.Errorf("auto of binary: %q %s", content, enc)
	}
	if _, _, err := encodeContent(binary, "text"); err == nil || !strings.Contains(err.Error(), "base64") {
		t.Errorf("text of binary: %v", err)
	}
}

func TestBounds(t *testing.T) {
	entries, truncated := capEntries([]int{1, 2, 3}, 2)
	if len(entries) != 2 || !truncated {
		t.Errorf("capEntries over the cap: %v, %v", entries, truncated)
	}
	if entries, truncated := capEntries([]int{1, 2}, 2); len(entries) != 2 || truncated {
		t.Errorf("capEntries at the cap: %v, %v", entries, truncated)
	}

	s := &Server{opts: DefaultOptions()}
	if d, err := s.timeout(0); err != nil || d != 60*time.Second {
		t.Errorf("default timeout: %v, %v", d, err)
	}
	if d, err := s.timeout(2.5); err != nil || d != 2500*time.Millisecond {
		t.Errorf("timeout 2.5: %v, %v", d, err)
	}
	if _, err := s.timeout(-1); err == nil {
		t.Error("a negative timeout was taken")
	}
	if _, err := s.timeout(24 * 3600); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("a day's timeout: %v", err)
	}
}
