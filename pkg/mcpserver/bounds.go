// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package mcpserver

import (
	"encoding/base64"
	"fmt"
	"unicode/utf8"
)

// headTailBuffer keeps the first and the last bytes of what is written to it, at most limit in
// all, so a command's output cannot flood a model's context while its start (what ran) and its
// end (how it finished) both stay.
type headTailBuffer struct {
	limit   int
	head    []byte
	tail    []byte // a ring of the last limit-limit/2 bytes once head is full
	tailPos int
	written int64
}

func newHeadTailBuffer(limit int) *headTailBuffer {
	return &headTailBuffer{limit: max(limit, 2)}
}

func (b *headTailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.written += int64(n)
	headLimit := b.limit / 2
	if room := headLimit - len(b.head); room > 0 {
		take := min(room, len(p))
		b.head = append(b.head, p[:take]...)
		p = p[take:]
	}
	tailLimit := b.limit - headLimit
	for len(p) > 0 {
		if len(b.tail) < tailLimit {
			take := min(tailLimit-len(b.tail), len(p))
			b.tail = append(b.tail, p[:take]...)
			p = p[take:]
			continue
		}
		// The ring is full: overwrite its oldest bytes.
		take := min(tailLimit-b.tailPos, len(p))
		copy(b.tail[b.tailPos:], p[:take])
		b.tailPos = (b.tailPos + take) % tailLimit
		p = p[take:]
	}
	return n, nil
}

// Truncated reports whether more was written than is kept.
func (b *headTailBuffer) Truncated() bool { return b.written > int64(b.limit) }

// String is what was written when it fits, else its head and tail around a line saying how
// many bytes were left out. Bytes cut in the middle of a UTF-8 character are dropped.
func (b *headTailBuffer) String() string {
	tail := append(append([]byte{}, b.tail[b.tailPos:]...), b.tail[:b.tailPos]...)
	if !b.Truncated() {
		return string(append(append([]byte{}, b.head...), tail...))
	}
	omitted := b.written - int64(len(b.head)) - int64(len(tail))
	return trimBrokenEnd(b.head) + fmt.Sprintf("\n[... %d bytes omitted ...]\n", omitted) + trimBrokenStart(tail)
}

// trimBrokenEnd drops an incomplete UTF-8 character at the end of p.
func trimBrokenEnd(p []byte) string {
	for i := 0; i < utf8.UTFMax && len(p) > 0; i++ {
		if utf8.Valid(p) {
			break
		}
		p = p[:len(p)-1]
	}
	return string(p)
}

// trimBrokenStart drops the continuation bytes of a UTF-8 character cut at the start of p.
func trimBrokenStart(p []byte) string {
	for i := 0; i < utf8.UTFMax && len(p) > 0 && !utf8.RuneStart(p[0]); i++ {
		p = p[1:]
	}
	return string(p)
}

// Encodings of file contents and bodies in tool arguments and results.
const (
	encodingText   = "text"
	encodingBase64 = "base64"
)

// decodeContent turns a tool's content argument into bytes.
func decodeContent(content, encoding string) ([]byte, error) {
	switch encoding {
	case "", encodingText:
		return []byte(content), nil
	case encodingBase64:
		data, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return nil, fmt.Errorf("content is not valid standard base64 (RFC 4648, with padding): %w", err)
		}
		return data, nil
	}
	return nil, fmt.Errorf("encoding %q is not one of %q or %q", encoding, encodingText, encodingBase64)
}

// encodeContent turns bytes into a tool result's content: as text when asked for text or when
// "auto" finds valid UTF-8, else as base64. It returns the encoding used.
func encodeContent(data []byte, encoding string) (string, string, error) {
	switch encoding {
	case encodingText:
		if !utf8.Valid(data) {
			return "", "", fmt.Errorf("the content is not valid UTF-8 text: ask again with encoding %q", encodingBase64)
		}
		return string(data), encodingText, nil
	case encodingBase64:
		return base64.StdEncoding.EncodeToString(data), encodingBase64, nil
	case "", "auto":
		if utf8.Valid(data) {
			return string(data), encodingText, nil
		}
		return base64.StdEncoding.EncodeToString(data), encodingBase64, nil
	}
	return "", "", fmt.Errorf("encoding %q is not one of \"auto\", %q or %q", encoding, encodingText, encodingBase64)
}

// capEntries keeps at most limit entries, saying whether some were left out.
func capEntries[T any](entries []T, limit int) ([]T, bool) {
	if len(entries) > limit {
		return entries[:limit], true
	}
	return entries, false
}
