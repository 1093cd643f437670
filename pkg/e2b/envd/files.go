package envd

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"sync"
)

// /files: download streams the file's bytes as they come from cat; an upload is streamed into
// a temporary file next to its target and moved into place only once complete.

// fileStatusOfCode is the HTTP status /files answers for a code.
var fileStatusOfCode = map[string]int{
	codeInvalidArgument:    http.StatusBadRequest,
	codeFailedPrecondition: http.StatusBadRequest,
	codeNotFound:           http.StatusNotFound,
	codeAlreadyExists:      http.StatusConflict,
	codePermissionDenied:   http.StatusForbidden,
	codeUnauthenticated:    http.StatusUnauthorized,
	codeResourceExhausted:  http.StatusTooManyRequests,
	codeUnavailable:        http.StatusBadGateway,
	codeDeadlineExceeded:   http.StatusGatewayTimeout,
	codeCanceled:           499,
}

// writeFileError answers an error of /files or /health in envd's shape: {"code", "message"}.
func writeFileError(w http.ResponseWriter, err error) {
	var se *StatusError
	status, msg := http.StatusInternalServerError, err.Error()
	if errors.As(err, &se) {
		status, msg = se.Code, se.Message
	} else {
		re := asRPCError(err)
		msg = re.Message
		if s, ok := fileStatusOfCode[re.Code]; ok {
			status = s
		}
		if re.fileStatus != 0 {
			status = re.fileStatus
		}
	}
	writeJSON(w, status, map[string]any{"code": status, "message": msg})
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// fileCall resolves a /files request: its sandbox, user and path.
func (s *server) fileCall(r *http.Request) (*call, string, error) {
	sb, err := s.cfg.Resolver.Resolve(r)
	if err != nil {
		return nil, "", err
	}
	q := r.URL.Query()
	return &call{sb: sb, user: q.Get("username")}, q.Get("path"), nil
}

func (s *server) download(w http.ResponseWriter, r *http.Request) {
	c, p, err := s.fileCall(r)
	if err == nil {
		err = requirePath("path", p)
	}
	if err != nil {
		writeFileError(w, err)
		return
	}
	release, err := s.streams.admit(c.sb)
	if err != nil {
		writeFileError(w, err)
		return
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	content, stdout := io.Pipe()
	stderr := &boundedBuffer{max: maxScriptStderr}
	ended := make(chan error, 1)
	go func() {
		err := s.exec(ctx, c.sb, execRequest{Command: shellCommand(c.user, readScript, p), Stdout: stdout, Stderr: stderr})
		ended <- err
		stdout.CloseWithError(io.ErrUnexpectedEOF)
	}()
	// The script says "ok" once it found a readable file, before any of its bytes.
	var ok [3]byte
	if _, err := io.ReadFull(content, ok[:]); err != nil || string(ok[:]) != "ok\n" {
		cancel()
		execErr := <-ended
		if execErr == nil {
			execErr = errors.New("the sandbox answered no file")
		}
		writeFileError(w, scriptError(execErr, stderr.String()))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, content)
	// A stream that broke midway shows as a short body: the status is already sent.
}

// writtenFile is what an upload answers per file.
type writtenFile struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

func (s *server) upload(w http.ResponseWriter, r *http.Request) {
	c, p, err := s.fileCall(r)
	if err != nil {
		writeFileError(w, err)
		return
	}
	limit := s.cfg.MaxUploadBytes
	if r.ContentLength > limit {
		writeFileError(w, errUploadTooLarge(limit))
		return
	}
	// The bound counts what is written, after gzip's decompression too.
	body := &limitedReader{r: http.MaxBytesReader(w, r.Body, limit), limit: limit}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		mediaType = ""
	}
	var written []writtenFile
	switch mediaType {
	case "multipart/form-data":
		written, err = s.uploadMultipart(r, c, p, body)
	case "application/octet-stream":
		written, err = s.uploadOctetStream(r, c, p, body)
	default:
		err = errorf(codeInvalidArgument, "header Content-Type %q: an upload is multipart/form-data or application/octet-stream", r.Header.Get("Content-Type"))
	}
	if err != nil {
		writeFileError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, written)
}

func (s *server) uploadOctetStream(r *http.Request, c *call, p string, body *limitedReader) ([]writtenFile, error) {
	if err := requirePath("path", p); err != nil {
		return nil, err
	}
	var content io.Reader = body
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		gz, err := gzip.NewReader(body)
		if err != nil {
			return nil, errorf(codeInvalidArgument, "the body is not gzip as its Content-Encoding says: %v", err)
		}
		content = &limitedReader{r: gz, limit: s.cfg.MaxUploadBytes}
	default:
		return nil, errorf(codeInvalidArgument, "header Content-Encoding %q: only gzip is supported", enc)
	}
	f, err := s.writeFile(r.Context(), c, p, content)
	if err != nil {
		return nil, err
	}
	return []writtenFile{f}, nil
}

func (s *server) uploadMultipart(r *http.Request, c *call, p string, body *limitedReader) ([]writtenFile, error) {
	r.Body = io.NopCloser(body)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, errorf(codeInvalidArgument, "the multipart body cannot be read: %v", err)
	}
	var written []writtenFile
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, uploadReadError(err, "the multipart body is malformed")
		}
		if part.FormName() != "file" {
			continue
		}
		target := p
		if target == "" {
			// The part's own file name, in full: Part.FileName keeps only its base.
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			target = params["filename"]
		}
		if err := requirePath("path", target); err != nil {
			return nil, err
		}
		f, err := s.writeFile(r.Context(), c, target, part)
		if err != nil {
			return nil, err
		}
		written = append(written, f)
	}
	if len(written) == 0 {
		return nil, errorf(codeInvalidArgument, "the multipart body has no part named \"file\"")
	}
	return written, nil
}

// writeFile streams content into a temporary file next to p, then moves it into place; if
// content fails (too large, cut short), the temporary file is removed and nothing changes.
func (s *server) writeFile(ctx context.Context, c *call, p string, content io.Reader) (writtenFile, error) {
	var idBytes [8]byte
	_, _ = rand.Read(idBytes[:])
	id := hex.EncodeToString(idBytes[:])
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdin := &failingReader{r: content, fail: cancel}
	_, err := s.run(ctx, c.sb, c.user, writeScript, stdin, p, id)
	if readErr := stdin.failure(); readErr != nil {
		err = readErr
	}
	if err == nil {
		var out []byte
		if out, err = s.run(ctx, c.sb, c.user, commitScript, nil, p, id); err == nil {
			entries, parseErr := parseEntries(out)
			if parseErr != nil || len(entries) != 1 {
				return writtenFile{}, errorf(codeInternal, "the sandbox answered an unreadable entry (%v)", parseErr)
			}
			return writtenFile{Name: entries[0].Name, Type: "file", Path: entries[0].Path}, nil
		}
	}
	// Best effort, on a context of its own: the request's may be what ended.
	cleanup, done := context.WithTimeout(context.WithoutCancel(ctx), killGrace)
	defer done()
	_, _ = s.run(cleanup, c.sb, c.user, abortScript, nil, p, id)
	return writtenFile{}, err
}

func errUploadTooLarge(limit int64) error {
	return &rpcError{Code: codeResourceExhausted, Message: fmt.Sprintf("the upload is larger than the %d bytes allowed", limit), fileStatus: http.StatusRequestEntityTooLarge}
}

// uploadReadError names why the request body could not be read.
func uploadReadError(err error, what string) error {
	var tooLarge *http.MaxBytesError
	var re *rpcError
	switch {
	case errors.As(err, &re):
		return re
	case errors.As(err, &tooLarge):
		return errUploadTooLarge(tooLarge.Limit)
	}
	return errorf(codeInvalidArgument, "%s: %v", what, err)
}

// limitedReader fails once more than limit bytes were read.
type limitedReader struct {
	r           io.Reader
	limit, read int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if l.read += int64(n); l.read > l.limit {
		return n, errUploadTooLarge(l.limit)
	}
	return n, err
}

// failingReader hands content to the exec stream's stdin; when content fails it records why
// and cancels the stream, so that a cut-short upload never looks complete to the sandbox.
type failingReader struct {
	r    io.Reader
	fail context.CancelCauseFunc
	mu   sync.Mutex
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF {
		f.mu.Lock()
		f.err = uploadReadError(err, "the upload could not be read")
		f.mu.Unlock()
		f.fail(f.err)
		return n, io.EOF
	}
	return n, err
}

func (f *failingReader) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
