// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package mcpserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
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
}

// tokenKey is where TokenInfo.Extra keeps the caller's bearer token.
const tokenKey = "bearer-token"

// NewHTTPHandler serves MCP over streamable HTTP. Every request must carry
// `Authorization: Bearer TOKEN`, a token the cluster accepts (no token or a refused one: 401);
// each call acts with that token alone, on base's cluster address and CA (base's own
// credentials are never used), and a session stays bound to the user who opened it (another
// user's token on it: 403).
func NewHTTPHandler(base *rest.Config, opts Options, httpOpts HTTPOptions) http.Handler {
	anon := clusterOnly(base)
	reviews := &reviewCache{base: anon, ttl: httpOpts.TokenReviewTTL, entries: map[[32]byte]reviewEntry{}}
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
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      httpOpts.SessionTimeout,
		MaxRequestBodyBytes: int64(opts.MaxFileBytes)*2 + 1<<20, // a file in base64, and the message around it
	})
	return auth.RequireBearerToken(reviews.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(handler)
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

	mu      sync.Mutex
	entries map[[32]byte]reviewEntry
}

type reviewEntry struct {
	info    *auth.TokenInfo
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
		return entry.info, nil
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
		return nil, fmt.Errorf("%w: the cluster does not accept this bearer token", auth.ErrInvalidToken)
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
	r.entries[key] = reviewEntry{info: info, expires: now.Add(r.ttl)}
	return info, nil
}
