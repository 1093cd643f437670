package envd

import "net/http"

// server is the data plane's handler; its routes are filled in by the services.
type server struct {
	cfg Config
	mux *http.ServeMux
}

func newServer(cfg Config) *server {
	if cfg.MaxProcessesPerSandbox <= 0 {
		cfg.MaxProcessesPerSandbox = DefaultMaxProcessesPerSandbox
	}
	if cfg.MaxProcessesPerKey <= 0 {
		cfg.MaxProcessesPerKey = DefaultMaxProcessesPerKey
	}
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = DefaultMaxUploadBytes
	}
	return &server{cfg: cfg, mux: http.NewServeMux()}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}
