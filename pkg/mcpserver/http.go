// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package mcpserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/sdk/sandbox"
)

// HTTPOptions configure the streamable HTTP transport.
type HTTPOptions struct {
	// SessionTimeout closes a session idle this long.
	SessionTimeout time.Duration
	// TokenReviewTTL is how long a token found valid is trusted before it is checked again; the
	// cluster checks it on every call anyway, since every call is made with it.
	TokenReviewTTL time.Duration
	// MaxSessionsPerUser bounds the open sessions of one user; past it a new session gets a
	// 429.
	MaxSessionsPerUser int
	// AllowedOrigins are the browser origins (scheme://host[:port]) besides the server's own
	// that may send requests; a request with any other Origin gets a 403.
	AllowedOrigins []string
}

// DefaultHTTPOptions are the HTTP transport's defaults.
func DefaultHTTPOptions() HTTPOptions {
	return HTTPOptions{SessionTimeout: 30 * time.Minute, TokenReviewTTL: time.Minute, MaxSessionsPerUser: 16}
}

const (
	// negativeReviewTTL is how long a refused token stays refused without asking the cluster.
	negativeReviewTTL = 10 * time.Second
	// maxConcurrentReviews bounds the token reviews in flight: unknown tokens cannot make the
	// server open connections to the cluster without end.
	maxConcurrentReviews = 16
	// callMargin is what a call may take beyond the longest timeout a tool accepts (reading a
	// status after a wait, writing the answer).
	callMargin = 30 * time.Second
)

// tokenKey is where TokenInfo.Extra keeps the caller's bearer token.
const tokenKey = "bearer-token"

// NewHTTPHandler serves MCP over streamable HTTP. Every request must carry
// `Authorization: Bearer TOKEN`, a token the cluster accepts (no token or a refused one: 401);
// each call acts with that token alone, on base's cluster address and CA (base's own
// credentials are never used), and a session stays bound to the user who opened it (another
// user's token on it: 403).
func NewHTTPHandler(base *rest.Config, opts Options, httpOpts HTTPOptions) http.Handler {
	anon := clusterOnly(base)
	reviews := &reviewCache{base: anon, ttl: httpOpts.TokenReviewTTL, entries: map[[32]byte]reviewEntry{}, inFlight: make(chan struct{}, maxConcurrentReviews)}
	s := &Server{opts: opts, callerOf: func(ctx context.Context, req mcp.Request) (*caller, error) {
		extra := req.GetExtra()
		if extra == nil || extra.TokenInfo == nil {
			return nil, errors.New("the request carries no bearer token")
		}
		token, _ := extra.TokenInfo.Extra[tokenKey].(string)
		namespace, _ := extra.TokenInfo.Extra["namespace"].(string)
		if namespace == "" {
			namespace = opts.DefaultNamespace
		}
		config := rest.CopyConfig(anon)
		config.BearerToken = token
		client, err := sandbox.NewClient(config)
		if err != nil {
			return nil, err
		}
		return &caller{client: client, namespace: namespace, session: strings.ToLower(req.GetSession().ID())}, nil
	}}
	server := s.build()
	owners := &sessionOwners{server: server, owner: map[string]string{}}
	server.AddReceivingMiddleware(owners.record)
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      httpOpts.SessionTimeout,
		MaxRequestBodyBytes: int64(opts.MaxFileBytes)*2 + 1<<20, // a file in base64, and the message around it
	})
	authed := auth.RequireBearerToken(reviews.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(handler)
	return checkOrigin(httpOpts.AllowedOrigins, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The token is checked here first, so that what the SDK's check would answer as a 500
		// (the cluster unreachable) is a 503 that names nothing of the cluster, and a refusal
		// says how to authenticate; the SDK's check then finds the answer cached.
		fields := strings.Fields(r.Header.Get("Authorization"))
		if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
			unauthorized(w, "a bearer token is required: send Authorization: Bearer TOKEN with a token the cluster accepts")
			return
		}
		info, err := reviews.verify(r.Context(), fields[1], r)
		switch {
		case errors.Is(err, auth.ErrInvalidToken):
			unauthorized(w, "the cluster does not accept this bearer token")
			return
		case err != nil:
			slog.Warn("checking a bearer token", "err", err)
			w.Header().Set("Retry-After", "5")
			http.Error(w, "the cluster cannot be reached to check the bearer token now: try again later", http.StatusServiceUnavailable)
			return
		}
		// A new session (a request without a session ID) counts against its user's bound.
		if r.Header.Get("Mcp-Session-Id") == "" && r.Method == http.MethodPost && httpOpts.MaxSessionsPerUser > 0 {
			if n := owners.count(info.UserID, s.created.forget); n >= httpOpts.MaxSessionsPerUser {
				w.Header().Set("Retry-After", "60")
				http.Error(w, fmt.Sprintf("%d sessions of this user are open, the server's limit: close one (HTTP DELETE) or let it expire", n), http.StatusTooManyRequests)
				return
			}
		}
		authed.ServeHTTP(w, r)
	}))
}

// unauthorized is a 401 that says how to authenticate (RFC 6750).
func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="sandbox-mcp"`)
	http.Error(w, msg, http.StatusUnauthorized)
}

// checkOrigin refuses a request a browser sent from another origin than the server's own or
// one of allowed: a web page must not drive the tools with a token it got hold of, nor probe
// the server (DNS rebinding). Requests without Origin (every non-browser client) pass.
func checkOrigin(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		u, err := url.Parse(origin)
		if err == nil && (u.Host == r.Host || slices.Contains(allowed, origin)) {
			next.ServeHTTP(w, r)
			return
		}
		http.Error(w, fmt.Sprintf("Origin %q is not allowed (sandbox-mcp --allowed-origins)", origin), http.StatusForbidden)
	})
}

// sessionOwners remembers which user opened each session, to bound the sessions of each.
type sessionOwners struct {
	server *mcp.Server

	mu    sync.Mutex
	owner map[string]string // session ID -> TokenInfo.UserID
}

// record notes the user of a session at its initialize request, and bounds every call's time.
func (o *sessionOwners) record(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "initialize" {
			if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil && req.GetSession() != nil {
				o.mu.Lock()
				o.owner[req.GetSession().ID()] = extra.TokenInfo.UserID
				o.mu.Unlock()
			}
		}
		return next(ctx, method, req)
	}
}

// count is how many live sessions user has; it forgets the sessions that ended, here and in
// forget.
func (o *sessionOwners) count(user string, forget func(live func(string) bool)) int {
	live := map[string]bool{}
	for ss := range o.server.Sessions() {
		live[ss.ID()] = true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for id, owner := range o.owner {
		switch {
		case !live[id]:
			delete(o.owner, id)
		case owner == user:
			n++
		}
	}
	forget(func(session string) bool { return live[session] })
	return n
}

// clusterOnly is base's cluster address and trust (CA, server name, proxy), without any
// credential of its own.
func clusterOnly(base *rest.Config) *rest.Config {
	return &rest.Config{
		Host:    base.Host,
		APIPath: base.APIPath,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   base.Insecure,
			ServerName: base.ServerName,
			CAFile:     base.CAFile,
			CAData:     base.CAData,
		},
		Proxy:     base.Proxy,
		QPS:       base.QPS,
		Burst:     base.Burst,
		Timeout:   base.Timeout,
		UserAgent: "sandbox-mcp",
	}
}

// reviewCache checks bearer tokens with a SelfSubjectReview made with the token alone, and
// remembers the answer for a while.
type reviewCache struct {
	base *rest.Config
	ttl  time.Duration
	// inFlight bounds the reviews in progress.
	inFlight chan struct{}

	mu      sync.Mutex
	entries map[[32]byte]reviewEntry
}

// reviewEntry is a review's answer: info for a token the cluster accepts, else refused.
type reviewEntry struct {
	info    *auth.TokenInfo
	refused error
	expires time.Time
}

// maxCachedTokens bounds the cache; past it, expired entries are dropped, then all.
const maxCachedTokens = 10000

func (r *reviewCache) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	r.mu.Lock()
	entry, ok := r.entries[key]
	r.mu.Unlock()
	if ok && now.Before(entry.expires) {
		return entry.info, entry.refused
	}
	select {
	case r.inFlight <- struct{}{}:
		defer func() { <-r.inFlight }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	config := rest.CopyConfig(r.base)
	config.BearerToken = token
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if apierrors.IsUnauthorized(err) {
		// Refusals are remembered too, briefly: a caller repeating a bad token does not make
		// the server ask the cluster each time.
		refused := fmt.Errorf("%w: the cluster does not accept this bearer token", auth.ErrInvalidToken)
		r.store(key, reviewEntry{refused: refused, expires: now.Add(negativeReviewTTL)}, now)
		return nil, refused
	}
	if err != nil {
		return nil, fmt.Errorf("checking the bearer token with the cluster: %w", err)
	}
	user := review.Status.UserInfo
	info := &auth.TokenInfo{
		// The session is bound to this user: a request with another user's token is refused.
		UserID: user.Username + "\x00" + user.UID,
		Extra:  map[string]any{tokenKey: token, "username": user.Username},
	}
	// A ServiceAccount works in its own namespace by default.
	if saName, ok := strings.CutPrefix(user.Username, "system:serviceaccount:"); ok {
		if ns, _, found := strings.Cut(saName, ":"); found {
			info.Extra["namespace"] = ns
		}
	}
	r.store(key, reviewEntry{info: info, expires: now.Add(r.ttl)}, now)
	return info, nil
}

// store keeps an answer, within maxCachedTokens.
func (r *reviewCache) store(key [32]byte, entry reviewEntry, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) >= maxCachedTokens {
		for k, e := range r.entries {
			if now.After(e.expires) {
				delete(r.entries, k)
			}
		}
		if len(r.entries) >= maxCachedTokens {
			clear(r.entries)
		}
	}
	r.entries[key] = entry
}
