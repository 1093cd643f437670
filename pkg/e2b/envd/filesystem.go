package envd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

const (
	// maxScriptOutput bounds what one filesystem call may answer (a deep listing: some 50,000
	// entries), so that the streams a key may open cannot hold much of the server's memory.
	maxScriptOutput = 8 << 20
	maxScriptStderr = 64 << 10
)

// run runs one of our scripts in the sandbox as user and answers its stdout; a failure is an
// *rpcError with the code the script's exit code says and its stderr as the message.
func (s *server) run(ctx context.Context, sb *Sandbox, user, script string, stdin io.Reader, args ...string) ([]byte, error) {
	release, err := s.streams.admit(sb)
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdout := &boundedBuffer{max: maxScriptOutput, overflow: cancel}
	stderr := &boundedBuffer{max: maxScriptStderr}
	err = s.exec(ctx, sb, execRequest{Command: shellCommand(user, script, args...), Stdin: stdin, Stdout: stdout, Stderr: stderr})
	if cause := context.Cause(ctx); errors.Is(cause, errOutputTooLarge) {
		return nil, errorf(codeResourceExhausted, "the answer is larger than %d bytes; ask for less (a smaller depth)", maxScriptOutput)
	}
	if err != nil {
		return nil, scriptError(err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// scriptError maps a script's failure to its Connect code.
func scriptError(err error, stderr string) error {
	msg := strings.TrimSpace(stderr)
	var exit *exitError
	if !errors.As(err, &exit) {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return errorf(codeUnavailable, "the sandbox could not be reached over exec: %v", err)
	}
	if msg == "" {
		msg = fmt.Sprintf("the operation failed with exit code %d", exit.Code)
	}
	switch {
	case exit.Code == exitNotFound:
		return errorf(codeNotFound, "%s", msg)
	case exit.Code == exitInvalidArgument:
		return errorf(codeInvalidArgument, "%s", msg)
	case exit.Code == exitAlreadyExists:
		return errorf(codeAlreadyExists, "%s", msg)
	case exit.Code == exitPermission, strings.Contains(msg, "Permission denied"), strings.Contains(msg, "Operation not permitted"):
		return errorf(codePermissionDenied, "%s", msg)
	case strings.Contains(msg, "No space left on device"):
		return &rpcError{Code: codeResourceExhausted, Message: msg, fileStatus: http.StatusInsufficientStorage}
	case exit.Code == 127 || exit.Code == 126:
		return errorf(codeFailedPrecondition, "the sandbox's image lacks a tool this call needs (a POSIX shell with stat, find, cat, mkdir, mv, rm): %s", msg)
	}
	return errorf(codeInternal, "%s", msg)
}

var errOutputTooLarge = errors.New("output too large")

// boundedBuffer keeps at most max bytes; past them it calls overflow (when set) and drops the
// rest.
type boundedBuffer struct {
	bytes.Buffer
	max      int
	overflow context.CancelCauseFunc
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.Buffer.Write(p[:max(room, 0)])
		if b.overflow != nil {
			b.overflow(errOutputTooLarge)
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// parseEntries reads the records fsLib's entry prints:
// "<mode hex> <size> <mtime> <owner> <group> <len>:<path><len>:<symlink target>\n".
func parseEntries(out []byte) ([]entryInfo, error) {
	var entries []entryInfo
	for len(out) > 0 {
		var fields [5]string
		for i := range fields {
			sp := bytes.IndexByte(out, ' ')
			if sp < 0 {
				return nil, fmt.Errorf("entry record cut short")
			}
			fields[i], out = string(out[:sp]), out[sp+1:]
		}
		var name, target []byte
		var err error
		if name, out, err = lengthPrefixed(out); err != nil {
			return nil, err
		}
		if target, out, err = lengthPrefixed(out); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[0] != '\n' {
			return nil, fmt.Errorf("entry record does not end with a newline")
		}
		out = out[1:]
		e, err := newEntry(fields, string(name), string(target))
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func lengthPrefixed(in []byte) (value, rest []byte, err error) {
	colon := bytes.IndexByte(in, ':')
	if colon < 0 {
		return nil, nil, fmt.Errorf("entry record lacks a length")
	}
	n, err := strconv.Atoi(string(in[:colon]))
	if err != nil || n < 0 || n > len(in)-colon-1 {
		return nil, nil, fmt.Errorf("entry record has a bad length %q", in[:colon])
	}
	in = in[colon+1:]
	return in[:n], in[n:], nil
}

const (
	modeTypeMask = 0o170000
	modeDir      = 0o040000
	modeRegular  = 0o100000
	modeSymlink  = 0o120000
)

func newEntry(fields [5]string, p, target string) (entryInfo, error) {
	mode, err := strconv.ParseUint(fields[0], 16, 32)
	if err != nil {
		return entryInfo{}, fmt.Errorf("entry record has a bad mode %q", fields[0])
	}
	mtime, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		return entryInfo{}, fmt.Errorf("entry record has a bad time %q", fields[2])
	}
	e := entryInfo{
		Name:         path.Base(p),
		Path:         p,
		Size:         fields[1],
		Mode:         uint32(mode) & 0o777,
		Permissions:  permissions(uint32(mode)),
		Owner:        fields[3],
		Group:        fields[4],
		ModifiedTime: time.Unix(mtime, 0).UTC().Format(time.RFC3339),
		Type:         "FILE_TYPE_UNSPECIFIED",
	}
	switch uint32(mode) & modeTypeMask {
	case modeDir:
		e.Type = fileTypeDirectory
	case modeRegular:
		e.Type = fileTypeFile
	case modeSymlink:
		e.Type = fileTypeSymlink
		e.SymlinkTarget = &target
	}
	return e, nil
}

// permissions spells a mode as ls -l does ("drwxr-xr-x").
func permissions(mode uint32) string {
	kind := map[uint32]byte{0o040000: 'd', 0o120000: 'l', 0o010000: 'p', 0o140000: 's', 0o020000: 'c', 0o060000: 'b'}[mode&modeTypeMask]
	if kind == 0 {
		kind = '-'
	}
	out := []byte{kind}
	for shift := 6; shift >= 0; shift -= 3 {
		bits := mode >> shift
		for i, c := range "rwx" {
			if bits&(4>>i) != 0 {
				out = append(out, byte(c))
			} else {
				out = append(out, '-')
			}
		}
	}
	return string(out)
}

// oneEntry runs a script that prints a single entry.
func (s *server) oneEntry(ctx context.Context, c *call, script string, args ...string) (*entryResponse, error) {
	out, err := s.run(ctx, c.sb, c.user, script, nil, args...)
	if err != nil {
		return nil, err
	}
	entries, err := parseEntries(out)
	if err != nil || len(entries) != 1 {
		return nil, errorf(codeInternal, "the sandbox answered an unreadable entry (%v)", err)
	}
	return &entryResponse{Entry: &entries[0]}, nil
}

func requirePath(field, p string) error {
	if p == "" {
		return errorf(codeInvalidArgument, "field %s: a path is required", field)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return errorf(codeInvalidArgument, "field %s: a path cannot contain NUL bytes", field)
	}
	return nil
}

func (s *server) statRPC(ctx context.Context, c *call, req *pathRequest) (*entryResponse, error) {
	if err := requirePath("path", req.Path); err != nil {
		return nil, err
	}
	return s.oneEntry(ctx, c, statScript, req.Path)
}

func (s *server) makeDirRPC(ctx context.Context, c *call, req *pathRequest) (*entryResponse, error) {
	if err := requirePath("path", req.Path); err != nil {
		return nil, err
	}
	return s.oneEntry(ctx, c, makeDirScript, req.Path)
}

func (s *server) moveRPC(ctx context.Context, c *call, req *moveRequest) (*entryResponse, error) {
	if err := requirePath("source", req.Source); err != nil {
		return nil, err
	}
	if err := requirePath("destination", req.Destination); err != nil {
		return nil, err
	}
	return s.oneEntry(ctx, c, moveScript, req.Source, req.Destination)
}

func (s *server) removeRPC(ctx context.Context, c *call, req *pathRequest) (*empty, error) {
	if err := requirePath("path", req.Path); err != nil {
		return nil, err
	}
	_, err := s.run(ctx, c.sb, c.user, removeScript, nil, req.Path)
	return &empty{}, err
}

func (s *server) listDirRPC(ctx context.Context, c *call, req *listDirRequest) (*listDirResponse, error) {
	if err := requirePath("path", req.Path); err != nil {
		return nil, err
	}
	depth := max(uint32(req.Depth), 1)
	out, err := s.run(ctx, c.sb, c.user, listDirScript, nil, req.Path, strconv.FormatUint(uint64(depth), 10), fsLib)
	if err != nil {
		return nil, err
	}
	entries, err := parseEntries(out)
	if err != nil {
		return nil, errorf(codeInternal, "the sandbox answered an unreadable listing (%v)", err)
	}
	if entries == nil {
		entries = []entryInfo{}
	}
	return &listDirResponse{Entries: entries}, nil
}
