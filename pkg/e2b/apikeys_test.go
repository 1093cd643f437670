// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2b

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// storedKey is the Secret of key as the API server stores it (StringData turned into Data).
func storedKey(t *testing.T, key string, u user.Info, namespace string) *corev1.Secret {
	t.Helper()
	s, err := KeySecret(key, u, namespace)
	if err != nil {
		t.Fatal(err)
	}
	s.Namespace = "keys"
	s.Data = map[string][]byte{}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	return s
}

// newKeyStore is a store over secrets in the namespace "keys".
func newKeyStore(t *testing.T, secrets ...*corev1.Secret) (*keyStore, cache.Indexer) {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range secrets {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return &keyStore{namespace: "keys", secrets: corelisters.NewSecretLister(idx)}, idx
}

func TestAPIKeys(t *testing.T) {
	key, id, err := NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "e2b_") || len(key) != 44 || len(id) != keyIDLength {
		t.Fatalf("key %q (id %q): want e2b_ and 40 hex digits, a %d-digit id", key, id, keyIDLength)
	}
	other, _, _ := NewAPIKey()
	secret := storedKey(t, key, &user.DefaultInfo{Name: "alice", Groups: []string{"team-a"}}, "tenant-a")
	if strings.Contains(secret.String(), key) {
		t.Fatalf("the stored Secret holds the key itself: %s", secret)
	}
	store, idx := newKeyStore(t, secret)

	got, err := store.identity(key)
	if err != nil {
		t.Fatalf("identity of a stored key: %v", err)
	}
	if got.User.GetName() != "alice" || strings.Join(got.User.GetGroups(), ",") != "team-a" || got.Namespace != "tenant-a" || got.KeyID != id {
		t.Errorf("identity %+v %v, want alice in team-a, namespace tenant-a, id %s", got, got.User, id)
	}
	for name, k := range map[string]string{"unknown": other, "no prefix": strings.TrimPrefix(key, "e2b_"), "empty": "", "changed": key[:len(key)-1] + "x"} {
		if _, err := store.identity(k); !errors.Is(err, errUnknownKey) {
			t.Errorf("%s key: err %v, want errUnknownKey", name, err)
		}
	}
	// A Secret of the key's name holding another hash (made by hand, or a collision) is no match.
	forged := storedKey(t, other, &user.DefaultInfo{Name: "mallory"}, "tenant-a")
	forged.Name = secret.Name
	if err := idx.Update(forged); err != nil {
		t.Fatal(err)
	}
	if _, err := store.identity(key); !errors.Is(err, errUnknownKey) {
		t.Errorf("key against another key's hash: err %v, want errUnknownKey", err)
	}
	// Revoking is deleting the Secret.
	if err := idx.Delete(forged); err != nil {
		t.Fatal(err)
	}
	if _, err := store.identity(key); !errors.Is(err, errUnknownKey) {
		t.Errorf("revoked key: err %v, want errUnknownKey", err)
	}
}

func TestKeySecretRefusesBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		u  user.Info
		ns string
	}{
		"no user":        {&user.DefaultInfo{}, "ns"},
		"bad namespace":  {&user.DefaultInfo{Name: "u"}, "Not_A_Namespace"},
		"comma in group": {&user.DefaultInfo{Name: "u", Groups: []string{"a,b"}}, "ns"},
	} {
		if _, err := KeySecret("e2b_x", tc.u, tc.ns); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestAuthenticated: the control plane answers 401 in E2B's error shape without a valid key, and
// 429 once a key has its most requests in flight; another key is not held up by it.
func TestAuthenticated(t *testing.T) {
	keyA, _, _ := NewAPIKey()
	keyB, _, _ := NewAPIKey()
	store, _ := newKeyStore(t,
		storedKey(t, keyA, &user.DefaultInfo{Name: "a"}, "ns-a"),
		storedKey(t, keyB, &user.DefaultInfo{Name: "b"}, "ns-b"))
	release := make(chan struct{})
	entered := make(chan string, 4)
	s := &Server{keys: store, inFlight: keyLimiter{max: 1}, opts: Options{MaxRequestsPerKey: 1}}
	h := s.authenticated(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- identityFrom(r.Context()).Namespace
		if r.URL.Path == "/hold" {
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	do := func(key, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if key != "" {
			req.Header.Set("X-API-KEY", key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for name, key := range map[string]string{"missing": "", "unknown": "e2b_0000000000000000000000000000000000000000"} {
		rec := do(key, "/sandboxes")
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), `"code":401`) {
			t.Errorf("%s key: %d %s, want 401 with an E2B error body", name, rec.Code, rec.Body)
		}
	}
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- do(keyA, "/hold") }()
	if ns := <-entered; ns != "ns-a" {
		t.Fatalf("key A's request ran as namespace %q", ns)
	}
	if rec := do(keyA, "/sandboxes"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("key A over its bound: %d %s, want 429", rec.Code, rec.Body)
	}
	if rec := do(keyB, "/sandboxes"); rec.Code != http.StatusNoContent {
		t.Errorf("key B while A is at its bound: %d, want 204", rec.Code)
	}
	<-entered
	close(release)
	<-done
	if rec := do(keyA, "/sandboxes"); rec.Code != http.StatusNoContent {
		t.Errorf("key A after its request ended: %d, want 204", rec.Code)
	}
}
