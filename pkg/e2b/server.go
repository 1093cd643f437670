// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package e2b serves an endpoint that E2B's SDKs speak to unchanged, on a listener of its own
// (the SDKs call root paths with their own authentication, so it cannot go through the
// aggregator). One port serves both of E2B's planes:
//
//   - the control plane (E2B_API_URL: /sandboxes, /v2/sandboxes), mapped to SandboxClaims in the
//     namespace of the caller's API key, every operation made or authorized as the key's
//     Kubernetes identity (see tenant.go);
//   - the sandboxes' daemon API (E2B_SANDBOX_URL, a request carrying E2b-Sandbox-Id, or the host
//     <port>-<sandboxID>.<domain>), served by pkg/e2b/envd over pods/exec once the Resolver here
//     has checked the sandbox's access token and the identity's right to exec.
//
// A sandbox's E2B ID is its claim's name; a key sees only its own namespace, so another tenant's
// sandbox is absent (404) to it.
package e2b

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/e2b/envd"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxproxy"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// Headers of E2B's protocol.
const (
	apiKeyHeader      = "X-API-Key"
	accessTokenHeader = "X-Access-Token"
	sandboxIDHeader   = "E2b-Sandbox-Id"
)

// EnvdPort is the port E2B's SDKs address the sandbox daemon at (host <port>-<id>.<domain>).
const EnvdPort = 49983

// Config is what the endpoint needs from the server that runs it.
type Config struct {
	Options *Options
	// Loopback reaches this server's own API with its full rights. Tenants' requests go through it
	// impersonating the key's identity, so they are authorized, admitted and validated as that
	// user's own would be; reads after such an authorization, and suspending or waking a
	// sandbox, use it as it is.
	Loopback *rest.Config
	// Kube reaches the cluster with the server's rights: the key Secrets, the sandboxes' pods and
	// their exec.
	Kube *rest.Config
	// Authorizer answers whether an identity may do what the endpoint does on its behalf
	// outside a request to the API (exec, pause, resume): the server's delegated authorizer
	// (SubjectAccessReview against the cluster's RBAC).
	Authorizer authorizer.Authorizer
	// Pods finds a sandbox's pod from the server's cache of them; nil asks the cluster.
	Pods sandboxproxy.PodGetter
}

// Server is the E2B endpoint.
type Server struct {
	opts       Options
	authorizer authorizer.Authorizer
	loopback   *rest.Config
	admin      versioned.Interface
	adminSDK   *sandbox.Client
	kube       kubernetes.Interface
	pods       sandboxproxy.PodGetter
	resolved   resolvedCache
	keys       *keyStore
	keysSynced cache.InformerSynced
	informers  informers.SharedInformerFactory
	signer     tokenSigner
	tenants    tenantCache
	inFlight   keyLimiter
	control    http.Handler
	data       http.Handler
	hostRE     *regexp.Regexp
}

// New builds the endpoint; Run serves it.
func New(c Config) (*Server, error) {
	admin, err := versioned.NewForConfig(c.Loopback)
	if err != nil {
		return nil, err
	}
	adminSDK, err := sandbox.NewClient(c.Loopback)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(c.Kube)
	if err != nil {
		return nil, err
	}
	opts := *c.Options
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 10*time.Minute, informers.WithNamespace(opts.KeysNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.Set{APIKeyLabel: "true"}.String()
		}))
	secrets := factory.Core().V1().Secrets()
	s := &Server{
		opts: opts, authorizer: c.Authorizer, loopback: c.Loopback, admin: admin, adminSDK: adminSDK, kube: kube, pods: c.Pods,
		keys:       &keyStore{namespace: opts.KeysNamespace, secrets: secrets.Lister()},
		keysSynced: secrets.Informer().HasSynced,
		informers:  factory,
		inFlight:   keyLimiter{max: opts.MaxRequestsPerKey},
	}
	if opts.Domain != "" {
		s.hostRE = regexp.MustCompile(`^(\d+)-([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.` + regexp.QuoteMeta(opts.Domain) + `(:\d+)?$`)
	}
	s.control = s.authenticated(s.controlPlaneRoutes())
	s.data = envd.NewHandler(envd.Config{Resolver: resolver{s}, RESTConfig: c.Kube, Client: kube})
	return s, nil
}

// Listen opens the endpoint's listener, so that a taken port fails the server's start.
func (s *Server) Listen() (net.Listener, error) {
	l, err := net.Listen("tcp", s.opts.BindAddress)
	if err != nil {
		return nil, fmt.Errorf("--e2b-bind-address: %w", err)
	}
	return l, nil
}

// Serve loads the keys and the signing key, then serves on l until ctx is done.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	s.informers.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.keysSynced) {
		_ = l.Close()
		return fmt.Errorf("the E2B API keys in namespace %s did not sync", s.opts.KeysNamespace)
	}
	signer, err := loadSigningKey(ctx, s.kube, s.opts.KeysNamespace)
	if err != nil {
		_ = l.Close()
		return err
	}
	s.signer = signer
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	if !s.opts.PlainHTTP {
		cert, err := tls.LoadX509KeyPair(s.opts.TLSCertFile, s.opts.TLSKeyFile)
		if err != nil {
			_ = l.Close()
			return fmt.Errorf("loading the E2B endpoint's TLS files: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
		l = tls.NewListener(l, srv.TLSConfig)
	}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	klog.InfoS("Serving the E2B endpoint", "address", l.Addr().String(), "tls", !s.opts.PlainHTTP)
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeHTTP sends a request for a sandbox's daemon to the data plane, anything else to the
// control plane.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(sandboxIDHeader) != "" {
		s.data.ServeHTTP(w, r)
		return
	}
	if s.hostRE != nil {
		if m := s.hostRE.FindStringSubmatch(strings.ToLower(r.Host)); m != nil {
			if port, _ := strconv.Atoi(m[1]); port != EnvdPort {
				writeError(w, http.StatusNotFound, fmt.Sprintf("port %s of sandbox %s is not served here: only the sandbox daemon's port %d is", m[1], m[2], EnvdPort))
				return
			}
			r.Header.Set(sandboxIDHeader, m[2])
			s.data.ServeHTTP(w, r)
			return
		}
	}
	s.control.ServeHTTP(w, r)
}

// apiError is E2B's error body.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// writeError answers E2B's error body.
func writeError(w http.ResponseWriter, code int, message string) {
	writeJSON(w, code, apiError{Code: code, Message: message})
}

// writeJSON answers v as JSON with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		code, body = http.StatusInternalServerError, []byte(`{"code":500,"message":"encoding the response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// keyLimiter bounds the requests in flight per key.
type keyLimiter struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

// acquire takes a slot of key, false when all are taken; release gives it back.
func (l *keyLimiter) acquire(key string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	if l.n[key] >= l.max {
		return nil, false
	}
	l.n[key]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.n[key]--; l.n[key] == 0 {
			delete(l.n, key)
		}
	}, true
}

type identityKey struct{}

// identityFrom is the caller's identity, set by authenticated.
func identityFrom(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}

// authenticated answers 401 to a request without a valid API key and 429 to one over its key's
// bound, and serves the others with their identity in the context.
func (s *Server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(apiKeyHeader)
		if key == "" {
			writeError(w, http.StatusUnauthorized, "missing API key: send it in the X-API-Key header")
			return
		}
		id, err := s.keys.identity(key)
		if errors.Is(err, errUnknownKey) {
			writeError(w, http.StatusUnauthorized, "invalid API key")
			return
		}
		if err != nil {
			klog.ErrorS(err, "Looking up an E2B API key")
			writeError(w, http.StatusInternalServerError, "looking up the API key failed")
			return
		}
		release, ok := s.inFlight.acquire(id.KeyID)
		if !ok {
			writeError(w, http.StatusTooManyRequests, fmt.Sprintf("this API key has %d requests in flight, the most it may", s.opts.MaxRequestsPerKey))
			return
		}
		defer release()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	})
}
