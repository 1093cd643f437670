package envd

import (
	"context"
	"net/http"
	"sync"
)

// server is the data plane's handler.
type server struct {
	cfg  Config
	exec execFunc
	mux  *http.ServeMux

	table *processTable
	// processes counts the running processes (each holds an exec stream); streams the
	// streaming requests and the short exec streams of the filesystem and /files.
	processes, streams *limiter
}

func newServer(cfg Config) *server {
	defaults := []struct {
		field *int
		value int
	}{
		{&cfg.MaxProcessesPerSandbox, DefaultMaxProcessesPerSandbox},
		{&cfg.MaxProcessesPerKey, DefaultMaxProcessesPerKey},
		{&cfg.MaxStreamsPerSandbox, DefaultMaxStreamsPerSandbox},
		{&cfg.MaxStreamsPerKey, DefaultMaxStreamsPerKey},
	}
	for _, d := range defaults {
		if *d.field <= 0 {
			*d.field = d.value
		}
	}
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = DefaultMaxUploadBytes
	}
	s := &server{
		cfg:       cfg,
		mux:       http.NewServeMux(),
		table:     &processTable{},
		processes: &limiter{what: "processes", perSandbox: cfg.MaxProcessesPerSandbox, perKey: cfg.MaxProcessesPerKey},
		streams:   &limiter{what: "streams", perSandbox: cfg.MaxStreamsPerSandbox, perKey: cfg.MaxStreamsPerKey},
	}
	s.exec = s.podExec
	s.routes()
	return s
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

func (s *server) routes() {
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("GET /files", s.download)
	s.mux.HandleFunc("POST /files", s.upload)

	const proc, fs = "/process.Process/", "/filesystem.Filesystem/"
	s.mux.Handle(proc+"Start", streaming(s, s.startRPC))
	s.mux.Handle(proc+"Connect", streaming(s, s.connectRPC))
	s.mux.Handle(proc+"List", unary(s, s.listRPC))
	s.mux.Handle(proc+"SendInput", unary(s, s.sendInputRPC))
	s.mux.Handle(proc+"CloseStdin", unary(s, s.closeStdinRPC))
	s.mux.Handle(proc+"SendSignal", unary(s, s.sendSignalRPC))
	s.mux.Handle(proc+"Update", unary(s, s.updateRPC))
	s.mux.Handle(proc+"StreamInput", unimplemented("client streaming is not served (the SDK sends input with SendInput)"))

	s.mux.Handle(fs+"Stat", unary(s, s.statRPC))
	s.mux.Handle(fs+"MakeDir", unary(s, s.makeDirRPC))
	s.mux.Handle(fs+"Move", unary(s, s.moveRPC))
	s.mux.Handle(fs+"ListDir", unary(s, s.listDirRPC))
	s.mux.Handle(fs+"Remove", unary(s, s.removeRPC))
	const noWatch = "watching a directory is not supported by this server's data plane"
	for _, m := range []string{"WatchDir", "CreateWatcher", "GetWatcherEvents", "RemoveWatcher"} {
		s.mux.Handle(fs+m, unimplemented(noWatch))
	}
}

func (s *server) health(w http.ResponseWriter, r *http.Request) {
	if _, err := s.cfg.Resolver.Resolve(r); err != nil {
		writeFileError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// call is what every RPC gets: the resolved sandbox and the user the SDK asked to act as
// (Basic authentication's user name; empty: the container's own user).
type call struct {
	sb   *Sandbox
	user string
}

// prepare resolves the sandbox and applies the client's deadline.
func (s *server) prepare(r *http.Request) (context.Context, context.CancelFunc, *call, error) {
	if r.Method != http.MethodPost {
		return nil, nil, nil, errorf(codeUnimplemented, "Connect calls are POST requests, not %s", r.Method)
	}
	sb, err := s.cfg.Resolver.Resolve(r)
	if err != nil {
		return nil, nil, nil, err
	}
	timeout, err := requestTimeout(r)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := r.Context(), context.CancelFunc(func() {})
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	user, _, _ := r.BasicAuth()
	return ctx, cancel, &call{sb: sb, user: user}, nil
}

// unary serves a unary Connect call.
func unary[Req, Resp any](s *server, h func(context.Context, *call, *Req) (*Resp, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel, c, err := s.prepare(r)
		if err != nil {
			writeUnaryError(w, err)
			return
		}
		defer cancel()
		req := new(Req)
		if err := readUnary(r, req); err != nil {
			writeUnaryError(w, err)
			return
		}
		resp, err := h(ctx, c, req)
		if err != nil {
			writeUnaryError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, resp)
	})
}

// streaming serves a server-streaming Connect call: the stream is always opened, and ended
// with the handler's error if any.
func streaming[Req any](s *server, h func(context.Context, *call, *Req, *http.Request, *streamWriter) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel, c, err := s.prepare(r)
		if err == nil {
			defer cancel()
		}
		req := new(Req)
		if err == nil {
			err = readStreamRequest(r, req)
		}
		var release func()
		if err == nil {
			release, err = s.streams.admit(c.sb)
		}
		out := newStreamWriter(w)
		if err == nil {
			defer release()
			err = h(ctx, c, req, r, out)
		}
		out.end(err)
	})
}

func unimplemented(msg string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := errorf(codeUnimplemented, "%s", msg)
		if r.Header.Get("Content-Type") == contentTypeStreamJSON {
			newStreamWriter(w).end(err)
			return
		}
		writeUnaryError(w, err)
	})
}

// limiter bounds what is open at once per sandbox and per caller key; past a bound, admit
// answers resource_exhausted at once.
type limiter struct {
	what             string
	perSandbox       int
	perKey           int
	mu               sync.Mutex
	bySandbox, byKey map[string]int
}

func (l *limiter) admit(sb *Sandbox) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bySandbox == nil {
		l.bySandbox, l.byKey = map[string]int{}, map[string]int{}
	}
	sbKey := sandboxKey(sb)
	if n := l.bySandbox[sbKey]; n >= l.perSandbox {
		return nil, errorf(codeResourceExhausted, "%d %s are open in sandbox %s, the most allowed", n, l.what, sb.ID)
	}
	if n := l.byKey[sb.Key]; n >= l.perKey {
		return nil, errorf(codeResourceExhausted, "%d %s are open for this API key, the most allowed", n, l.what)
	}
	l.bySandbox[sbKey]++
	l.byKey[sb.Key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.bySandbox[sbKey]--; l.bySandbox[sbKey] <= 0 {
				delete(l.bySandbox, sbKey)
			}
			if l.byKey[sb.Key]--; l.byKey[sb.Key] <= 0 {
				delete(l.byKey, sb.Key)
			}
		})
	}, nil
}
