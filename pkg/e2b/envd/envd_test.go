package envd

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// localExec is the one fake of these tests: it runs the exec command on this machine instead
// of in a container, with HOME at home, so the scripts run for real against a real filesystem
// and real processes.
func localExec(home string) execFunc {
	return func(ctx context.Context, _ *Sandbox, req execRequest) error {
		if req.TTY {
			return errors.New("no terminal in unit tests")
		}
		cmd := exec.CommandContext(ctx, req.Command[0], req.Command[1:]...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		cmd.Stdout, cmd.Stderr = req.Stdout, req.Stderr
		cmd.WaitDelay = time.Second
		if req.Stdin != nil {
			in, err := cmd.StdinPipe()
			if err != nil {
				return err
			}
			go func() {
				_, _ = io.Copy(in, req.Stdin)
				_ = in.Close()
			}()
		}
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code := exit.ExitCode()
			if code < 0 {
				code = 137 // killed by a signal, as the kubelet reports it
			}
			return &exitError{Code: code}
		}
		return err
	}
}

type fixedResolver struct {
	sb  *Sandbox
	err error
}

func (f fixedResolver) Resolve(*http.Request) (*Sandbox, error) { return f.sb, f.err }

type harness struct {
	t    *testing.T
	srv  *server
	url  string
	home string
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	home := t.TempDir()
	if cfg.Resolver == nil {
		cfg.Resolver = fixedResolver{sb: &Sandbox{ID: "sb1", Namespace: "ns", Pod: "p", Container: "c", Key: "k1", Env: map[string]string{"FROM_CLAIM": "claim", "BOTH": "claim"}}}
	}
	s := newServer(cfg)
	s.exec = localExec(home)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	// Processes outlive requests by design; a test's own end ends them.
	t.Cleanup(func() {
		s.table.mu.Lock()
		defer s.table.mu.Unlock()
		for _, procs := range s.table.bySandbox {
			for _, p := range procs {
				_ = exec.Command("/bin/sh", "-c", killScript, "envd", "KILL", strconv.FormatUint(uint64(p.pid), 10)).Run()
			}
		}
	})
	return &harness{t: t, srv: s, url: srv.URL, home: home}
}

// unary makes a unary Connect call and answers the HTTP status and decoded body.
func (h *harness) unary(method string, req any, resp any) (int, *rpcError) {
	h.t.Helper()
	body, _ := json.Marshal(req)
	r, err := http.Post(h.url+method, contentTypeUnaryJSON, bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	defer r.Body.Close()
	data, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusOK {
		var re rpcError
		if err := json.Unmarshal(data, &re); err != nil {
			h.t.Fatalf("%s: status %d with a body that is no Connect error: %q", method, r.StatusCode, data)
		}
		return r.StatusCode, &re
	}
	if resp != nil {
		if err := json.Unmarshal(data, resp); err != nil {
			h.t.Fatalf("%s: %v in %q", method, err, data)
		}
	}
	return r.StatusCode, nil
}

// stream is an open server-streaming call.
type stream struct {
	t    *testing.T
	body io.ReadCloser
}

func (h *harness) stream(method string, req any, headers ...string) *stream {
	h.t.Helper()
	msg, _ := json.Marshal(req)
	env := make([]byte, 5+len(msg))
	binary.BigEndian.PutUint32(env[1:], uint32(len(msg)))
	copy(env[5:], msg)
	return h.rawStream(method, env, headers...)
}

func (h *harness) rawStream(method string, body []byte, headers ...string) *stream {
	h.t.Helper()
	r, _ := http.NewRequest(http.MethodPost, h.url+method, bytes.NewReader(body))
	r.Header.Set("Content-Type", contentTypeStreamJSON)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		h.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != contentTypeStreamJSON {
		h.t.Fatalf("%s: status %d, content type %q", method, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &stream{t: h.t, body: resp.Body}
	h.t.Cleanup(func() { _ = resp.Body.Close() })
	return s
}

// next answers the next event, or the end-of-stream error (nil error: a clean end).
func (s *stream) next() (*processEvent, *rpcError, bool) {
	s.t.Helper()
	flags, data, err := readEnvelope(s.body, 1<<20)
	if err != nil {
		s.t.Fatalf("reading the stream: %v", err)
	}
	if flags&flagEndStream != 0 {
		var end struct {
			Error *rpcError `json:"error"`
		}
		if err := json.Unmarshal(data, &end); err != nil {
			s.t.Fatalf("end of stream %q: %v", data, err)
		}
		return nil, end.Error, true
	}
	var resp eventResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		s.t.Fatalf("event %q: %v", data, err)
	}
	return &resp.Event, nil, false
}

// collect reads until the stream's end: stdout, stderr, the end event and the stream's error.
func (s *stream) collect() (stdout, stderr string, end *endEvent, streamErr *rpcError) {
	s.t.Helper()
	for {
		ev, err, done := s.next()
		if done {
			return stdout, stderr, end, err
		}
		switch {
		case ev.Data != nil:
			stdout += string(ev.Data.Stdout)
			stderr += string(ev.Data.Stderr)
		case ev.End != nil:
			end = ev.End
		}
	}
}

func (s *stream) started() uint32 {
	s.t.Helper()
	ev, err, done := s.next()
	if done || ev.Start == nil || ev.Start.Pid == 0 {
		s.t.Fatalf("first event is %+v (stream error %v), not a start with a pid", ev, err)
	}
	return ev.Start.Pid
}

func run(cmd string, opts ...func(*startRequest)) *startRequest {
	req := &startRequest{Process: &processConfig{Cmd: "/bin/sh", Args: []string{"-c", cmd}}}
	for _, o := range opts {
		o(req)
	}
	return req
}

func TestStartStreamsOutputAndExitCode(t *testing.T) {
	h := newHarness(t, Config{})
	must(t, os.Mkdir(filepath.Join(h.home, "work"), 0o755))
	req := run(`echo "out $FROM_CLAIM $BOTH $MINE $(pwd)"; echo oops >&2; exit 3`, func(r *startRequest) {
		r.Process.Envs = map[string]string{"MINE": "mine", "BOTH": "request"}
		cwd := "work"
		r.Process.Cwd = &cwd
	})
	s := h.stream("/process.Process/Start", req)
	s.started()
	stdout, stderr, end, err := s.collect()
	if err != nil {
		t.Fatalf("stream error: %v", err)
	}
	want := "out claim request mine " + filepath.Join(h.home, "work") + "\n"
	if stdout != want || stderr != "oops\n" {
		t.Errorf("stdout %q, stderr %q; want %q and %q", stdout, stderr, want, "oops\n")
	}
	if end == nil || end.ExitCode != 3 || !end.Exited {
		t.Errorf("end %+v, want exit code 3", end)
	}
}

func TestStartRefusesBadInputByField(t *testing.T) {
	h := newHarness(t, Config{})
	cases := map[string]struct {
		req     *startRequest
		want    string
		headers []string
	}{
		"no command": {&startRequest{Process: &processConfig{}}, "process.cmd", nil},
		"bad env":    {run("true", func(r *startRequest) { r.Process.Envs = map[string]string{"A=B": "x"} }), "process.envs", nil},
		"missing cwd": {run("true", func(r *startRequest) {
			cwd := "/does/not/exist"
			r.Process.Cwd = &cwd
		}), "cwd /does/not/exist", nil},
		// Basic authentication's user name is the user to run as (E2B's user option).
		"unknown user": {run("true"), "no-such-user-e2b", []string{"Authorization", "Basic bm8tc3VjaC11c2VyLWUyYjo="}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, _, err := h.stream("/process.Process/Start", c.req, c.headers...).collect()
			if err == nil || err.Code != codeInvalidArgument || !strings.Contains(err.Message, c.want) {
				t.Errorf("error %v, want invalid_argument naming %q", err, c.want)
			}
		})
	}
}

func TestBackgroundProcessStdinConnectListKill(t *testing.T) {
	h := newHarness(t, Config{})
	stdin := true
	tag := "bg"
	first := h.stream("/process.Process/Start", &startRequest{Process: &processConfig{Cmd: "/bin/sh", Args: []string{"-c", "while read line; do echo got $line; done; echo closed"}}, Stdin: &stdin, Tag: &tag})
	pid := first.started()
	sel := &processSelector{Pid: ptr(uint32Value(pid))}

	var list listResponse
	h.unary("/process.Process/List", empty{}, &list)
	if len(list.Processes) != 1 || list.Processes[0].Pid != pid || *list.Processes[0].Tag != "bg" {
		t.Fatalf("list %+v, want the one process %d", list, pid)
	}

	// A second client connects by tag and sees the same output as the first.
	second := h.stream("/process.Process/Connect", &connectRequest{Process: &processSelector{Tag: &tag}})
	if got := second.started(); got != pid {
		t.Fatalf("connect answered pid %d, want %d", got, pid)
	}
	if status, err := h.unary("/process.Process/SendInput", &sendInputRequest{Process: sel, Input: &processInput{Stdin: []byte("one\n")}}, nil); err != nil {
		t.Fatalf("send input: %d %v", status, err)
	}
	for _, s := range []*stream{first, second} {
		ev, err, _ := s.next()
		if ev == nil || ev.Data == nil || string(ev.Data.Stdout) != "got one\n" {
			t.Fatalf("event %+v (error %v), want the echoed line", ev, err)
		}
	}
	if _, err := h.unary("/process.Process/CloseStdin", &closeStdinRequest{Process: sel}, nil); err != nil {
		t.Fatalf("close stdin: %v", err)
	}
	stdout, _, end, err := first.collect()
	if err != nil || stdout != "closed\n" || end == nil || end.ExitCode != 0 {
		t.Fatalf("after closing stdin: stdout %q, end %+v, error %v", stdout, end, err)
	}
	// Gone from the list, and signals to it answer not_found (the SDK's kill returns false).
	h.unary("/process.Process/List", empty{}, &list)
	if len(list.Processes) != 0 {
		t.Errorf("list %+v after the end", list)
	}
	if status, err := h.unary("/process.Process/SendSignal", &sendSignalRequest{Process: sel, Signal: sigKill}, nil); err == nil || err.Code != codeNotFound || status != http.StatusNotFound {
		t.Errorf("kill of an ended process: %d %v, want 404 not_found", status, err)
	}
}

func TestKillEndsProcessAndItsChildren(t *testing.T) {
	h := newHarness(t, Config{})
	marker := filepath.Join(h.home, "child-pid")
	s := h.stream("/process.Process/Start", run("sleep 300 & echo $! > "+marker+"; wait"))
	pid := s.started()
	waitFor(t, func() bool { b, _ := os.ReadFile(marker); return len(bytes.TrimSpace(b)) > 0 })
	child, _ := os.ReadFile(marker)
	if _, err := h.unary("/process.Process/SendSignal", &sendSignalRequest{Process: &processSelector{Pid: ptr(uint32Value(pid))}, Signal: sigKill}, nil); err != nil {
		t.Fatalf("kill: %v", err)
	}
	_, _, end, _ := s.collect()
	if end == nil || end.ExitCode == 0 {
		t.Errorf("end %+v, want a non-zero exit", end)
	}
	waitFor(t, func() bool {
		stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(child)) + "/stat")
		return err != nil || strings.Contains(string(stat), ") Z ")
	})
}

func TestProcessLimitPerSandbox(t *testing.T) {
	h := newHarness(t, Config{MaxProcessesPerSandbox: 1})
	first := h.stream("/process.Process/Start", run("sleep 300"))
	pid := first.started()
	_, _, _, err := h.stream("/process.Process/Start", run("true")).collect()
	if err == nil || err.Code != codeResourceExhausted {
		t.Fatalf("second process: %v, want resource_exhausted", err)
	}
	h.unary("/process.Process/SendSignal", &sendSignalRequest{Process: &processSelector{Pid: ptr(uint32Value(pid))}, Signal: sigKill}, nil)
	first.collect()
	// The bound is released with the process's end.
	_, _, end, err := h.stream("/process.Process/Start", run("true")).collect()
	if err != nil || end == nil || end.ExitCode != 0 {
		t.Fatalf("after the first ended: end %+v, error %v", end, err)
	}
}

func TestMalformedRequestsGetClearErrors(t *testing.T) {
	h := newHarness(t, Config{})
	cases := map[string][]byte{
		"empty body":       {},
		"short header":     {0, 0, 0},
		"short message":    {0, 0, 0, 0, 10, '{'},
		"compressed":       {flagCompressed, 0, 0, 0, 2, '{', '}'},
		"trailing data":    {0, 0, 0, 0, 2, '{', '}', 0},
		"not json":         {0, 0, 0, 0, 3, 'a', 'b', 'c'},
		"huge length":      {0, 0xff, 0xff, 0xff, 0xff},
		"wrong field type": append([]byte{0, 0, 0, 0, 20}, `{"process":{"cmd":1}}`[:20]...),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, _, err := h.rawStream("/process.Process/Start", body).collect()
			if err == nil || (err.Code != codeInvalidArgument && err.Code != codeUnimplemented && err.Code != codeResourceExhausted) || err.Message == "" {
				t.Errorf("error %v, want a clear invalid_argument", err)
			}
		})
	}
	status, err := h.unary("/process.Process/SendSignal", json.RawMessage(`{"signal":"SIGNAL_SIGHUP"}`), nil)
	if status != http.StatusBadRequest || err == nil || !strings.Contains(err.Message, "SIGNAL_SIGHUP") {
		t.Errorf("unknown signal: %d %v", status, err)
	}
	resp, postErr := http.Post(h.url+"/filesystem.Filesystem/Stat", "application/proto", strings.NewReader(""))
	must(t, postErr)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "application/proto") {
		t.Errorf("binary protobuf: %d %s, want 400 naming the content type", resp.StatusCode, body)
	}
	status, err = h.unary("/filesystem.Filesystem/WatchDir", pathRequest{Path: "/"}, nil)
	if status != http.StatusNotImplemented || err == nil || err.Code != codeUnimplemented {
		t.Errorf("watch: %d %v, want 501 unimplemented", status, err)
	}
}

func TestResolverErrorsKeepTheirMeaning(t *testing.T) {
	h := newHarness(t, Config{Resolver: fixedResolver{err: &StatusError{Code: http.StatusNotFound, Message: "sandbox x not found"}}})
	status, err := h.unary("/filesystem.Filesystem/Stat", pathRequest{Path: "/"}, nil)
	if status != http.StatusNotFound || err == nil || err.Code != codeNotFound {
		t.Errorf("unary: %d %v, want 404 not_found", status, err)
	}
	if _, _, _, err := h.stream("/process.Process/Start", run("true")).collect(); err == nil || err.Code != codeNotFound {
		t.Errorf("stream: %v, want not_found", err)
	}
	resp, _ := http.Get(h.url + "/health")
	var body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || body.Code != 404 || body.Message != "sandbox x not found" {
		t.Errorf("health: %d %+v", resp.StatusCode, body)
	}
}

func TestFilesystem(t *testing.T) {
	h := newHarness(t, Config{})
	var made entryResponse
	if _, err := h.unary("/filesystem.Filesystem/MakeDir", pathRequest{Path: "a/b"}, &made); err != nil {
		t.Fatal(err)
	}
	if made.Entry.Path != filepath.Join(h.home, "a/b") || made.Entry.Type != fileTypeDirectory || made.Entry.Permissions[0] != 'd' {
		t.Errorf("made %+v, want the directory under home", made.Entry)
	}
	if _, err := h.unary("/filesystem.Filesystem/MakeDir", pathRequest{Path: "a/b"}, nil); err == nil || err.Code != codeAlreadyExists {
		t.Errorf("second make dir: %v, want already_exists", err)
	}
	must(t, os.WriteFile(filepath.Join(h.home, "a/b/odd name\nwith newline"), []byte("12345"), 0o640))
	must(t, os.Symlink("b", filepath.Join(h.home, "a/link")))

	var one, two listDirResponse
	h.unary("/filesystem.Filesystem/ListDir", listDirRequest{Path: "a", Depth: 1}, &one)
	h.unary("/filesystem.Filesystem/ListDir", listDirRequest{Path: filepath.Join(h.home, "a"), Depth: 2}, &two)
	if names := entryNames(one.Entries); names != "b,link" {
		t.Errorf("depth 1: %s", names)
	}
	if names := entryNames(two.Entries); names != "b,link,odd name\nwith newline" {
		t.Errorf("depth 2: %q", names)
	}
	for _, e := range two.Entries {
		if e.Name == "link" && (e.Type != fileTypeSymlink || e.SymlinkTarget == nil || *e.SymlinkTarget != "b") {
			t.Errorf("link %+v", e)
		}
		if e.Type == fileTypeFile && (e.Size != "5" || e.Mode != 0o640 || e.Permissions != "-rw-r-----") {
			t.Errorf("file %+v", e)
		}
	}

	var moved entryResponse
	if _, err := h.unary("/filesystem.Filesystem/Move", moveRequest{Source: "a/b", Destination: "c/d"}, &moved); err != nil {
		t.Fatal(err)
	}
	if moved.Entry.Path != filepath.Join(h.home, "c/d") {
		t.Errorf("moved to %q", moved.Entry.Path)
	}
	if _, err := h.unary("/filesystem.Filesystem/Remove", pathRequest{Path: "c"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"c", "a/b", "nope"} {
		if status, err := h.unary("/filesystem.Filesystem/Stat", pathRequest{Path: p}, nil); status != http.StatusNotFound || err.Code != codeNotFound {
			t.Errorf("stat %s: %d %v, want not_found", p, status, err)
		}
	}
	if _, err := h.unary("/filesystem.Filesystem/ListDir", listDirRequest{Path: "a/link/../../nope"}, nil); err == nil || err.Code != codeNotFound {
		t.Errorf("list of a missing dir: %v", err)
	}
}

func TestFilesUploadDownload(t *testing.T) {
	h := newHarness(t, Config{MaxUploadBytes: 1 << 16})
	binaryData := make([]byte, 3000)
	for i := range binaryData {
		binaryData[i] = byte(i * 7)
	}

	// Multipart, two files named by their part, one of them binary.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "dir/bin.dat")
	fw.Write(binaryData)
	fw, _ = mw.CreateFormFile("file", "/"+strings.TrimPrefix(filepath.Join(h.home, "text.txt"), "/"))
	fw.Write([]byte("hello\n"))
	mw.Close()
	resp, err := http.Post(h.url+"/files", mw.FormDataContentType(), &body)
	must(t, err)
	var written []writtenFile
	json.NewDecoder(resp.Body).Decode(&written)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(written) != 2 || written[0].Path != filepath.Join(h.home, "dir/bin.dat") || written[0].Type != "file" {
		t.Fatalf("multipart upload: %d %+v", resp.StatusCode, written)
	}
	if got := h.download(t, "dir/bin.dat", 200); !bytes.Equal(got, binaryData) {
		t.Errorf("binary file came back different (%d bytes)", len(got))
	}
	if got := h.download(t, filepath.Join(h.home, "text.txt"), 200); string(got) != "hello\n" {
		t.Errorf("text file: %q", got)
	}

	// Octet-stream, gzip-encoded, to the query's path.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(binaryData)
	zw.Close()
	r, _ := http.NewRequest(http.MethodPost, h.url+"/files?path=raw.bin", &gz)
	r.Header.Set("Content-Type", "application/octet-stream")
	r.Header.Set("Content-Encoding", "gzip")
	resp, err = http.DefaultClient.Do(r)
	must(t, err)
	resp.Body.Close()
	if got := h.download(t, "raw.bin", 200); resp.StatusCode != 200 || !bytes.Equal(got, binaryData) {
		t.Errorf("octet-stream upload: %d, %d bytes back", resp.StatusCode, len(got))
	}

	// Too large: refused, and nothing is left behind, also when only the gzip'd body was small.
	for name, req := range map[string]*http.Request{
		"declared": newUpload(h.url+"/files?path=big", bytes.NewReader(make([]byte, 1<<17)), ""),
		"streamed": newUpload(h.url+"/files?path=big", io.MultiReader(bytes.NewReader(make([]byte, 1<<17))), ""),
		"gzip":     newUpload(h.url+"/files?path=big", bytes.NewReader(gzipped(make([]byte, 1<<17))), "gzip"),
	} {
		if name == "streamed" {
			req.ContentLength = -1
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s: status %d, want 413", name, resp.StatusCode)
		}
	}
	if left, _ := os.ReadDir(h.home); len(left) != 3 {
		t.Errorf("home holds %d entries after refused uploads, want dir, text.txt, raw.bin", len(left))
	}
	h.download(t, "missing", http.StatusNotFound)
	h.download(t, "dir", http.StatusBadRequest)
}

func (h *harness) download(t *testing.T, p string, wantStatus int) []byte {
	t.Helper()
	resp, err := http.Get(h.url + "/files?path=" + p)
	must(t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		t.Fatalf("download %s: status %d (%s), want %d", p, resp.StatusCode, data, wantStatus)
	}
	return data
}

func newUpload(url string, body io.Reader, encoding string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, url, body)
	r.Header.Set("Content-Type", "application/octet-stream")
	if encoding != "" {
		r.Header.Set("Content-Encoding", encoding)
	}
	return r
}

func gzipped(data []byte) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	zw.Close()
	return b.Bytes()
}

func entryNames(entries []entryInfo) string {
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	return strings.Join(sorted(names), ",")
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// headerResolver resolves the sandbox named by the E2b-Sandbox-Id header, all of one key.
type headerResolver struct{}

func (headerResolver) Resolve(r *http.Request) (*Sandbox, error) {
	return &Sandbox{ID: r.Header.Get("E2b-Sandbox-Id"), Namespace: "ns", Pod: "p", Container: "c", Key: "one-key"}, nil
}

func TestProcessLimitPerKeyAcrossSandboxes(t *testing.T) {
	h := newHarness(t, Config{Resolver: headerResolver{}, MaxProcessesPerKey: 1})
	first := h.stream("/process.Process/Start", run("sleep 300"), "E2b-Sandbox-Id", "a")
	pid := first.started()
	_, _, _, err := h.stream("/process.Process/Start", run("true"), "E2b-Sandbox-Id", "b").collect()
	if err == nil || err.Code != codeResourceExhausted || !strings.Contains(err.Message, "API key") {
		t.Fatalf("a process in another sandbox of the same key: %v, want resource_exhausted naming the key", err)
	}
	// Processes are kept per sandbox: a lists its own, b none.
	for sandbox, want := range map[string]int{"a": 1, "b": 0} {
		r, _ := http.NewRequest(http.MethodPost, h.url+"/process.Process/List", strings.NewReader("{}"))
		r.Header.Set("Content-Type", contentTypeUnaryJSON)
		r.Header.Set("E2b-Sandbox-Id", sandbox)
		resp, err := http.DefaultClient.Do(r)
		must(t, err)
		var list listResponse
		_ = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if len(list.Processes) != want || (want == 1 && list.Processes[0].Pid != pid) {
			t.Errorf("sandbox %s lists %+v, want %d process(es)", sandbox, list.Processes, want)
		}
	}
}

// An image whose /bin/sh never reports the pid but floods its output is ended, not buffered.
func TestStartWithoutPidIsBounded(t *testing.T) {
	h := newHarness(t, Config{})
	ended := make(chan struct{})
	h.srv.exec = func(ctx context.Context, _ *Sandbox, req execRequest) error {
		defer close(ended)
		chunk := make([]byte, 32<<10)
		for {
			if _, err := req.Stdout.Write(chunk); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			default:
			}
		}
	}
	_, _, _, err := h.stream("/process.Process/Start", run("true")).collect()
	if err == nil || err.Code != codeUnavailable || !strings.Contains(err.Message, "without reporting the process's pid") {
		t.Fatalf("start without a pid: %v, want unavailable saying why", err)
	}
	<-ended
}
