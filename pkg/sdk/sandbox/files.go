// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package sandbox

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// copyAttempts bounds how often a copy into the sandbox is sent again when the sandbox did not
// receive all of it (the stream ended early) and the source can be read again.
const copyAttempts = 3

// ErrIncompleteCopy is the error of a copy into the sandbox after which the sandbox's files do
// not have the sizes that were sent.
var ErrIncompleteCopy = errors.New("the sandbox did not receive the whole copy")

// WriteFile writes size bytes of r to the file path in the sandbox, with the permissions mode,
// creating or replacing it (the directory must exist). The data is streamed, as a tar archive
// over exec (the sandbox needs tar and stat). The file's size is checked afterwards; when it is
// short and r is an io.Seeker, the write is sent again.
func (s *Sandbox) WriteFile(ctx context.Context, filePath string, r io.Reader, size int64, mode fs.FileMode) (err error) {
	ctx, span := s.startSpan(ctx, "sandbox.WriteFile", attribute.String("file.path", filePath), attribute.Int64("file.size", size))
	defer func() { endSpan(span, err) }()
	dir, name := path.Split(path.Clean(filePath))
	if name == "" || name == "/" || name == "." {
		return fmt.Errorf("sandbox: WriteFile needs a file path, not %q", filePath)
	}
	start, seekable := currentOffset(r)
	write := func(tw *tar.Writer, sizes tarSizes) error {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: int64(mode.Perm()), ModTime: time.Now()}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.CopyN(tw, r, size); err != nil {
			return fmt.Errorf("reading what to write to %s: %w", filePath, err)
		}
		sizes[name] = size
		return nil
	}
	rewind := func() bool {
		if !seekable {
			return false
		}
		_, err := r.(io.Seeker).Seek(start, io.SeekStart)
		return err == nil
	}
	return s.sendTar(ctx, dirOrRoot(dir), write, rewind)
}

// CopyTo copies the local file or directory tree src to dst in the sandbox, as
// `kubectl cp SRC NAME:DST` does: dst names the copy (its parent directory must exist). Symbolic
// links are copied as links; the sizes of the files are checked afterwards and the copy sent
// again when the sandbox did not receive all of it.
func (s *Sandbox) CopyTo(ctx context.Context, src, dst string) (err error) {
	ctx, span := s.startSpan(ctx, "sandbox.CopyTo", attribute.String("file.path", dst))
	defer func() { endSpan(span, err) }()
	dir, name := path.Split(path.Clean(dst))
	if name == "" || name == "/" || name == "." || name == ".." {
		return fmt.Errorf("sandbox: CopyTo needs a destination path that names the copy, not %q", dst)
	}
	if _, err := os.Lstat(src); err != nil {
		return err
	}
	write := func(tw *tar.Writer, sizes tarSizes) error { return writeTarTree(tw, src, name, sizes) }
	return s.sendTar(ctx, dirOrRoot(dir), write, func() bool { return true })
}

func dirOrRoot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// sendTar streams the tar archive write makes into `tar -x` in the sandbox's directory dir and
// checks the sizes of the files it wrote, sending it again (at most copyAttempts times) while
// they are short and rewind says the archive can be made again.
func (s *Sandbox) sendTar(ctx context.Context, dir string, write func(*tar.Writer, tarSizes) error, rewind func() bool) error {
	var err error
	for attempt := 1; attempt <= copyAttempts; attempt++ {
		sizes := tarSizes{}
		if err = s.sendTarOnce(ctx, dir, write, sizes); err != nil {
			return err
		}
		if err = s.checkSizes(ctx, dir, sizes); !errors.Is(err, ErrIncompleteCopy) || !rewind() {
			return err
		}
	}
	return err
}

// errTarDone ends the writing of an archive once tar in the sandbox has exited.
var errTarDone = errors.New("tar in the sandbox has exited")

func (s *Sandbox) sendTarOnce(ctx context.Context, dir string, write func(*tar.Writer, tarSizes) error, sizes tarSizes) error {
	pr, pw := io.Pipe()
	produced := make(chan error, 1)
	go func() {
		padder := &recordPadder{w: pw}
		tw := tar.NewWriter(padder)
		err := write(tw, sizes)
		if err == nil {
			err = tw.Close()
		}
		if err == nil {
			err = padder.pad()
		}
		produced <- err
		pw.CloseWithError(err)
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stderr := newBoundedBuffer(maxHelperStderrBytes, "tar -x's stderr", cancel)
	// -m: the files get the time they are written, as kubectl cp does; -o: owned by the user tar
	// runs as, whatever the archive says.
	err := s.Exec(ctx, ExecOptions{Command: []string{"tar", "-xmof", "-", "-C", notOption(dir)}, Stdin: pr, Stderr: stderr})
	// tar may finish at the end-of-archive blocks, before the padding was read.
	pr.CloseWithError(errTarDone)
	prodErr := <-produced
	if tooLarge := overflow(ctx); tooLarge != nil {
		return tooLarge
	}
	if prodErr != nil && !errors.Is(prodErr, errTarDone) {
		// The archive could not be made (a local file went away): nothing complete was sent.
		return errors.Join(prodErr, commandError("tar -x", err, stderr))
	}
	return commandError("tar -x", err, stderr)
}

// checkSizes compares the sizes of the files below dir with what was sent, in batches of paths
// small enough for one command line.
func (s *Sandbox) checkSizes(ctx context.Context, dir string, sizes tarSizes) error {
	names := make([]string, 0, len(sizes))
	for name := range sizes {
		names = append(names, name)
	}
	const batch = 200
	for len(names) > 0 {
		n := min(batch, len(names))
		chunk := names[:n]
		names = names[n:]
		args := []string{"stat", "-c", "%s", "--"}
		for _, name := range chunk {
			args = append(args, notOption(path.Join(dir, name)))
		}
		res, err := s.Run(ctx, args...)
		if err != nil {
			return err
		}
		got := strings.Fields(res.Stdout)
		if res.ExitCode != 0 || len(got) != len(chunk) {
			return fmt.Errorf("%w: stat: %s", ErrIncompleteCopy, strings.TrimSpace(res.Stderr))
		}
		for i, name := range chunk {
			if got[i] != strconv.FormatInt(sizes[name], 10) {
				return fmt.Errorf("%w: %s has %s of %d bytes", ErrIncompleteCopy, path.Join(dir, name), got[i], sizes[name])
			}
		}
	}
	return nil
}

// currentOffset is the offset r reads from next, when r can seek back to it.
func currentOffset(r io.Reader) (int64, bool) {
	seeker, ok := r.(io.Seeker)
	if !ok {
		return 0, false
	}
	off, err := seeker.Seek(0, io.SeekCurrent)
	return off, err == nil
}

// ReadFile streams the contents of the file path in the sandbox; the caller reads it to the end
// and closes it. Reading fails with io.ErrUnexpectedEOF when the stream ends before the whole
// file came.
func (s *Sandbox) ReadFile(ctx context.Context, filePath string) (io.ReadCloser, error) {
	ctx, span := s.startSpan(ctx, "sandbox.ReadFile", attribute.String("file.path", filePath))
	dir, name := path.Split(path.Clean(filePath))
	ctx, cancel := context.WithCancel(ctx)
	stream := s.receiveTar(ctx, dirOrRoot(dir), name, true)
	tr := tar.NewReader(stream)
	hdr, err := tr.Next()
	switch {
	case err != nil:
	case hdr.Typeflag != tar.TypeReg:
		err = fmt.Errorf("%s is not a regular file", filePath)
	case sparse(hdr):
		err = fmt.Errorf("%s: %w", filePath, ErrSparseEntry)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = stream.result(fmt.Errorf("%s: no such file", filePath))
		}
		cancel()
		endSpan(span, err)
		return nil, err
	}
	return &fileReader{Reader: tr, size: hdr.Size, stream: stream, cancel: cancel, end: func(err error) { endSpan(span, err) }}, nil
}

// fileReader is ReadFile's stream of one file out of a tar archive.
type fileReader struct {
	io.Reader
	size   int64
	read   int64
	stream *tarStream
	cancel context.CancelFunc
	end    func(error)
	closed bool
}

func (f *fileReader) Read(p []byte) (int, error) {
	n, err := f.Reader.Read(p)
	f.read += int64(n)
	return n, err
}

func (f *fileReader) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.cancel()
	var err error
	if f.read < f.size {
		err = fmt.Errorf("closed after %d of %d bytes", f.read, f.size)
	}
	f.end(err)
	return nil
}

// maxTarTrailerBytes bounds what CopyFrom reads after the end of the archive: tar's padding to a
// record, which is smaller.
const maxTarTrailerBytes = 1 << 20

// DefaultMaxCopyBytes bounds the bytes of the files CopyFrom writes unless MaxBytes says
// otherwise: what a sandbox sends decides the size of the copy, not the caller.
const DefaultMaxCopyBytes = 8 << 30

// CopyOption adjusts CopyFrom.
type CopyOption func(*copyOptions)

type copyOptions struct {
	maxBytes int64
}

// MaxBytes bounds the bytes of the files CopyFrom writes, in all (DefaultMaxCopyBytes when not
// given). A file that would take the copy past it fails with ErrCopyTooLarge before any of it
// is written; the files before it stay.
func MaxBytes(n int64) CopyOption {
	return func(o *copyOptions) { o.maxBytes = n }
}

// CopyFrom copies the file or directory tree src of the sandbox to the local path dst, as
// `kubectl cp NAME:SRC DST` does: dst names the copy. Whatever the archive coming out of the
// sandbox holds, nothing is written outside dst (see the package documentation); symbolic links
// pointing outside the copy, devices and FIFOs are left out, and their count returned. The files
// hold at most MaxBytes in all, and sparse entries, whose holes would be written as zeros the
// sandbox never sent, fail with ErrSparseEntry.
func (s *Sandbox) CopyFrom(ctx context.Context, src, dst string, opts ...CopyOption) (skipped int, err error) {
	o := copyOptions{maxBytes: DefaultMaxCopyBytes}
	for _, opt := range opts {
		opt(&o)
	}
	ctx, span := s.startSpan(ctx, "sandbox.CopyFrom", attribute.String("file.path", src))
	defer func() { endSpan(span, err) }()
	dir, name := path.Split(path.Clean(src))
	if name == "" || name == "/" || name == "." || name == ".." {
		return 0, fmt.Errorf("sandbox: CopyFrom needs a source path that names a file or directory, not %q", src)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream := s.receiveTar(ctx, dirOrRoot(dir), name, false)
	skipped, err = extractTar(stream, name, dst, o.maxBytes)
	if errors.Is(err, ErrCopyTooLarge) || errors.Is(err, ErrSparseEntry) {
		// Stop tar rather than read the rest of a stream whose length the sandbox decides.
		cancel()
		stream.PipeReader.Close()
		<-stream.done
		return skipped, err
	}
	// Drain what is left, so tar's exit status (and message) is known: tar pads its archive to a
	// record, and a sandbox that sends more past the end is cut off.
	_, _ = io.Copy(io.Discard, io.LimitReader(stream, maxTarTrailerBytes))
	return skipped, stream.result(err)
}

// tarStream is the output of `tar -c` in the sandbox.
type tarStream struct {
	*io.PipeReader
	ctx    context.Context
	stderr *boundedBuffer
	done   chan error
}

// result is tar's failure when it had one, else err.
func (t *tarStream) result(err error) error {
	t.PipeReader.Close()
	execErr := <-t.done
	if tooLarge := overflow(t.ctx); tooLarge != nil {
		return tooLarge
	}
	if execErr := commandError("tar -c", execErr, t.stderr); execErr != nil {
		return execErr
	}
	return err
}

// receiveTar runs `tar -c` of name in the sandbox's directory dir; follow makes it archive what
// a symbolic link points to rather than the link.
func (s *Sandbox) receiveTar(ctx context.Context, dir, name string, follow bool) *tarStream {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancelCause(ctx)
	t := &tarStream{PipeReader: pr, ctx: ctx, stderr: newBoundedBuffer(maxHelperStderrBytes, "tar -c's stderr", cancel), done: make(chan error, 1)}
	flags := "-cf"
	if follow {
		flags = "-chf"
	}
	go func() {
		defer cancel(nil)
		err := s.Exec(ctx, ExecOptions{Command: []string{"tar", flags, "-", "-C", notOption(dir), "--", name}, Stdout: pw, Stderr: t.stderr})
		pw.CloseWithError(err)
		t.done <- err
	}()
	return t
}

// commandError adds what a helper command (tar) wrote on stderr to its error. Its exit is not
// passed on as an *ExitError: that is for the caller's own commands.
func commandError(what string, err error, stderr fmt.Stringer) error {
	if err == nil {
		return nil
	}
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		return fmt.Errorf("%s: %v: %s", what, err, msg)
	}
	return fmt.Errorf("%s: %v", what, err)
}

// FileInfo describes a file in the sandbox.
type FileInfo struct {
	Name    string
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time
}

// IsDir reports whether the file is a directory.
func (f FileInfo) IsDir() bool { return f.Mode.IsDir() }

// ListFiles lists the directory dir of the sandbox (not recursively), sorted by name as find
// gives them. The sandbox needs find and stat; names holding a newline are not supported.
func (s *Sandbox) ListFiles(ctx context.Context, dir string) (files []FileInfo, err error) {
	ctx, span := s.startSpan(ctx, "sandbox.ListFiles", attribute.String("file.path", dir))
	defer func() { endSpan(span, err) }()
	// A dir of "-delete" would be an expression of find: it is passed as "./-delete".
	res, err := s.Run(ctx, "find", notOption(dir), "-mindepth", "1", "-maxdepth", "1", "-exec", "stat", "-c", "%s %Y %f %n", "{}", "+")
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("listing %s: %s", dir, strings.TrimSpace(res.Stderr))
	}
	return parseListing(res.Stdout)
}

// parseListing parses lines of `stat -c '%s %Y %f %n'`: size, modification time (Unix seconds),
// raw mode (hex) and path.
func parseListing(out string) ([]FileInfo, error) {
	var files []FileInfo
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) != 4 {
			return nil, fmt.Errorf("unexpected listing line %q", sc.Text())
		}
		size, err1 := strconv.ParseInt(f[0], 10, 64)
		mtime, err2 := strconv.ParseInt(f[1], 10, 64)
		raw, err3 := strconv.ParseUint(f[2], 16, 32)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("unexpected listing line %q: %w", sc.Text(), err)
		}
		files = append(files, FileInfo{Name: path.Base(f[3]), Size: size, Mode: unixMode(uint32(raw)), ModTime: time.Unix(mtime, 0)})
	}
	return files, sc.Err()
}

// unixMode converts a raw st_mode to an fs.FileMode.
func unixMode(raw uint32) fs.FileMode {
	mode := fs.FileMode(raw & 0o777)
	switch raw & 0o170000 {
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	case 0o010000:
		mode |= fs.ModeNamedPipe
	case 0o140000:
		mode |= fs.ModeSocket
	case 0o060000:
		mode |= fs.ModeDevice
	case 0o020000:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	}
	if raw&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if raw&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if raw&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
