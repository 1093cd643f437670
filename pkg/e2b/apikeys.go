// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2b

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// An API key is a Secret in the keys namespace, named after the key's hash: it holds the SHA-256
// of the key (never the key), the Kubernetes user and groups the key acts as, and the one
// namespace its sandboxes live in. Deleting the Secret revokes the key. Whoever may create
// Secrets in the keys namespace may mint keys for any user: keep it the server's own namespace.
const (
	// APIKeyLabel marks the Secrets that are API keys; the server watches only those.
	APIKeyLabel = "e2b.sandbox-apiserver.dev/api-key"
	// apiKeyPrefix starts every key, as E2B's own keys do.
	apiKeyPrefix = "e2b_"
	// keySecretPrefix starts the name of a key's Secret; the key's ID follows.
	keySecretPrefix = "e2b-key-"
	// keyIDLength is how many hex digits of the key's hash name it (80 bits).
	keyIDLength = 20

	keyDataHash      = "sha256"
	keyDataUser      = "user"
	keyDataGroups    = "groups"
	keyDataNamespace = "namespace"
)

// Identity is who an API key acts as.
type Identity struct {
	// KeyID names the key (a prefix of its hash): safe to log, used for per-key limits and
	// bound into the access tokens the key is given.
	KeyID string
	// User is the Kubernetes identity every operation is authorized as.
	User user.Info
	// Namespace holds the key's sandboxes.
	Namespace string
}

// hashKey is the hex SHA-256 of a key.
func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// NewAPIKey returns a fresh random key and its ID.
func NewAPIKey() (key, id string, err error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	key = apiKeyPrefix + hex.EncodeToString(b)
	return key, hashKey(key)[:keyIDLength], nil
}

// KeySecret is the Secret that makes key act as u in namespace.
func KeySecret(key string, u user.Info, namespace string) (*corev1.Secret, error) {
	if u.GetName() == "" {
		return nil, errors.New("an API key needs a user name")
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, fmt.Errorf("namespace %q: %s", namespace, strings.Join(errs, "; "))
	}
	for _, g := range u.GetGroups() {
		if g == "" || strings.Contains(g, ",") {
			return nil, fmt.Errorf("group %q: must be non-empty and without commas", g)
		}
	}
	hash := hashKey(key)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:   keySecretPrefix + hash[:keyIDLength],
			Labels: map[string]string{APIKeyLabel: "true"},
		},
		Type: corev1.SecretTypeOpaque,
		StringData: map[string]string{
			keyDataHash:      hash,
			keyDataUser:      u.GetName(),
			keyDataGroups:    strings.Join(u.GetGroups(), ","),
			keyDataNamespace: namespace,
		},
	}, nil
}

// CreateAPIKey makes a new key for u in namespace, stored in keysNamespace, and returns it: the
// only time the key is seen, since only its hash is kept.
func CreateAPIKey(ctx context.Context, client kubernetes.Interface, keysNamespace string, u user.Info, namespace string) (key string, id string, err error) {
	key, id, err = NewAPIKey()
	if err != nil {
		return "", "", err
	}
	secret, err := KeySecret(key, u, namespace)
	if err != nil {
		return "", "", err
	}
	if _, err := client.CoreV1().Secrets(keysNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return "", "", fmt.Errorf("storing the key in namespace %s: %w", keysNamespace, err)
	}
	return key, id, nil
}

// errUnknownKey is a key that is malformed, unknown or revoked; the caller is told no more.
var errUnknownKey = errors.New("invalid API key")

// keyStore finds the identity of a key among the key Secrets a lister holds.
type keyStore struct {
	namespace string
	secrets   corelisters.SecretLister
}

// identity returns who key acts as.
func (s *keyStore) identity(key string) (*Identity, error) {
	if !strings.HasPrefix(key, apiKeyPrefix) || len(key) > 128 {
		return nil, errUnknownKey
	}
	hash := hashKey(key)
	return s.byID(hash[:keyIDLength], hash)
}

// byID returns the identity of the key with that ID; a non-empty hash must match the stored one.
func (s *keyStore) byID(id, hash string) (*Identity, error) {
	secret, err := s.secrets.Secrets(s.namespace).Get(keySecretPrefix + id)
	if apierrors.IsNotFound(err) {
		return nil, errUnknownKey
	}
	if err != nil {
		return nil, err
	}
	if secret.Labels[APIKeyLabel] != "true" {
		return nil, errUnknownKey
	}
	stored := string(secret.Data[keyDataHash])
	if hash != "" && subtle.ConstantTimeCompare([]byte(stored), []byte(hash)) != 1 {
		return nil, errUnknownKey
	}
	name, ns := string(secret.Data[keyDataUser]), string(secret.Data[keyDataNamespace])
	if name == "" || len(validation.IsDNS1123Label(ns)) > 0 {
		return nil, fmt.Errorf("the API key %s is stored without a valid user or namespace", id)
	}
	var groups []string
	if g := string(secret.Data[keyDataGroups]); g != "" {
		groups = strings.Split(g, ",")
	}
	return &Identity{KeyID: id, User: &user.DefaultInfo{Name: name, Groups: groups}, Namespace: ns}, nil
}
