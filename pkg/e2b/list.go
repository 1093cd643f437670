// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2b

import (
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

var errEOF = io.EOF

// Paging of GET /v2/sandboxes.
const (
	defaultPageSize = 100
	maxPageSize     = 100
	nextTokenHeader = "X-Next-Token"
)

// listQuery is what a list asks for.
type listQuery struct {
	metadata     map[string]string
	states       map[string]bool
	template     string
	startedAfter time.Time
	ascending    bool
	limit        int
	after        *cursor
}

// cursor is where a page ends: sandboxes sort by start time, then name.
type cursor struct {
	started time.Time
	name    string
}

func (c cursor) encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.started.UTC().Format(time.RFC3339Nano) + " " + c.name))
}

func decodeCursor(token string) (*cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, err
	}
	at, name, ok := strings.Cut(string(raw), " ")
	if !ok {
		return nil, fmt.Errorf("no name")
	}
	started, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return nil, err
	}
	return &cursor{started: started, name: name}, nil
}

// parseListQuery reads a list's query parameters, naming the one that is wrong.
func parseListQuery(q url.Values, v2 bool) (*listQuery, error) {
	out := &listQuery{limit: defaultPageSize}
	if m := q.Get("metadata"); m != "" {
		// "k=v&k2=v2" with each key and value URL-encoded once more (E2B's SDKs encode them
		// before joining the pairs).
		pairs, err := url.ParseQuery(m)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		out.metadata = map[string]string{}
		for k, vs := range pairs {
			key, errK := url.QueryUnescape(k)
			value, errV := url.QueryUnescape(vs[len(vs)-1])
			if errK != nil || errV != nil {
				return nil, fmt.Errorf("metadata: %q=%q is not URL-encoded", k, vs[len(vs)-1])
			}
			out.metadata[key] = value
		}
	}
	if !v2 {
		out.states = map[string]bool{stateRunning: true}
		out.limit = 0
		return out, nil
	}
	for _, v := range q["state"] {
		for _, st := range strings.Split(v, ",") {
			if st != stateRunning && st != statePaused {
				return nil, fmt.Errorf("state %q: must be %s or %s", st, stateRunning, statePaused)
			}
			if out.states == nil {
				out.states = map[string]bool{}
			}
			out.states[st] = true
		}
	}
	out.template = q.Get("template")
	if v := q.Get("startedAfter"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, fmt.Errorf("startedAfter %q: not an RFC 3339 time", v)
		}
		out.startedAfter = t
	}
	switch q.Get("order") {
	case "", "desc":
	case "asc":
		out.ascending = true
	default:
		return nil, fmt.Errorf("order %q: must be asc or desc", q.Get("order"))
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return nil, fmt.Errorf("limit %q: must be an integer from 1 to %d", v, maxPageSize)
		}
		out.limit = n
	}
	if v := q.Get("nextToken"); v != "" {
		c, err := decodeCursor(v)
		if err != nil {
			return nil, fmt.Errorf("nextToken: not a token this endpoint gave")
		}
		out.after = c
	}
	return out, nil
}

// matches says whether a listed sandbox passes the query's filters.
func (q *listQuery) matches(s listedSandbox) bool {
	if q.states != nil && !q.states[s.State] {
		return false
	}
	if q.template != "" && s.TemplateID != q.template {
		return false
	}
	if !q.startedAfter.IsZero() && s.StartedAt.Before(q.startedAfter) {
		return false
	}
	for k, v := range q.metadata {
		if got, ok := s.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// before says whether a sorts before b in the query's order.
func (q *listQuery) before(a, b cursor) bool {
	if !a.started.Equal(b.started) {
		return a.started.Before(b.started) == q.ascending
	}
	return (a.name < b.name) == q.ascending
}

func (s *Server) listV1(w http.ResponseWriter, r *http.Request) { s.serveList(w, r, false) }

func (s *Server) list(w http.ResponseWriter, r *http.Request) { s.serveList(w, r, true) }

// serveList lists the key's sandboxes: the claims of its namespace, read as the caller.
func (s *Server) serveList(w http.ResponseWriter, r *http.Request, v2 bool) {
	query, err := parseListQuery(r.URL.Query(), v2)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid query: "+err.Error())
		return
	}
	id := identityFrom(r.Context())
	client, err := s.tenantClient(id)
	if err != nil {
		writeInternal(w, "making a client for the key's identity", err)
		return
	}
	claims, err := client.Clientset().ExtensionsV1beta1().SandboxClaims(id.Namespace).List(r.Context(), metav1.ListOptions{})
	if err != nil {
		writeAPIError(w, "listing the sandboxes", err)
		return
	}
	// The claims' Sandboxes, read with the server's rights after the caller listed the claims.
	sandboxes, err := s.admin.AgentsV1beta1().Sandboxes(id.Namespace).List(r.Context(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		writeInternal(w, "listing the sandboxes", err)
		return
	}
	byName := map[string]*agentsv1beta1.Sandbox{}
	for i := range sandboxes.Items {
		byName[sandboxes.Items[i].Name] = &sandboxes.Items[i]
	}
	var out []listedSandbox
	for i := range claims.Items {
		claim := &claims.Items[i]
		if claim.DeletionTimestamp != nil {
			continue
		}
		sb := byName[claim.Status.SandboxStatus.Name]
		if sb != nil && !servesClaim(sb, claim) {
			sb = nil
		}
		item := listed(claim, sb)
		if !query.matches(item) {
			continue
		}
		if query.after != nil && !query.before(*query.after, cursor{item.StartedAt, item.SandboxID}) {
			continue
		}
		out = append(out, item)
	}
	slices.SortFunc(out, func(a, b listedSandbox) int {
		if query.before(cursor{a.StartedAt, a.SandboxID}, cursor{b.StartedAt, b.SandboxID}) {
			return -1
		}
		return 1
	})
	if query.limit > 0 && len(out) > query.limit {
		out = out[:query.limit]
		last := out[len(out)-1]
		w.Header().Set(nextTokenHeader, cursor{last.StartedAt, last.SandboxID}.encode())
	}
	if out == nil {
		out = []listedSandbox{}
	}
	writeJSON(w, http.StatusOK, out)
}

// sortedKeys are m's keys in order.
func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
