// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2b

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// A sandbox's access token (E2B's envdAccessToken) is "<keyID>.<MAC>": the MAC binds the key,
// the claim's namespace, name and UID under a signing key only the server holds. A token outlives
// neither its key (the key's Secret is looked up on every request) nor its claim (a claim made
// again under the same name has another UID). The signing key is a Secret of the keys namespace
// so that every replica signs alike; it is read at start, so deleting it and restarting the
// servers revokes every token at once.
const (
	signingKeySecret = "e2b-access-token-signing-key"
	signingKeyData   = "key"
)

// tokenSigner makes and checks access tokens.
type tokenSigner struct{ key []byte }

// token is the access token of the claim namespace/name (uid) for the key keyID.
func (s tokenSigner) token(keyID, namespace, name string, uid types.UID) string {
	return keyID + "." + base64.RawURLEncoding.EncodeToString(s.mac(keyID, namespace, name, uid))
}

func (s tokenSigner) mac(keyID, namespace, name string, uid types.UID) []byte {
	m := hmac.New(sha256.New, s.key)
	for _, part := range []string{"e2b-access-token/v1", keyID, namespace, name, string(uid)} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// keyOf is the key ID a token names, "" when it is not shaped as a token.
func keyOf(token string) string {
	id, _, ok := strings.Cut(token, ".")
	if !ok || len(id) != keyIDLength {
		return ""
	}
	return id
}

// valid says whether token is the one of keyID for the claim.
func (s tokenSigner) valid(token, keyID, namespace, name string, uid types.UID) bool {
	_, sig, _ := strings.Cut(token, ".")
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, s.mac(keyID, namespace, name, uid))
}

// loadSigningKey reads the signing key from keysNamespace, making it the first time.
func loadSigningKey(ctx context.Context, client kubernetes.Interface, keysNamespace string) (tokenSigner, error) {
	secrets := client.CoreV1().Secrets(keysNamespace)
	for range 3 {
		secret, err := secrets.Get(ctx, signingKeySecret, metav1.GetOptions{})
		if err == nil {
			if key := secret.Data[signingKeyData]; len(key) >= 32 {
				return tokenSigner{key: key}, nil
			}
			return tokenSigner{}, fmt.Errorf("secret %s/%s holds no key of at least 32 bytes in %q", keysNamespace, signingKeySecret, signingKeyData)
		}
		if !apierrors.IsNotFound(err) {
			return tokenSigner{}, fmt.Errorf("reading the access token signing key %s/%s: %w", keysNamespace, signingKeySecret, err)
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return tokenSigner{}, err
		}
		_, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: signingKeySecret},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{signingKeyData: key},
		}, metav1.CreateOptions{})
		if err == nil {
			return tokenSigner{key: key}, nil
		}
		// Another replica made it first: read theirs.
		if !apierrors.IsAlreadyExists(err) {
			return tokenSigner{}, fmt.Errorf("making the access token signing key %s/%s: %w", keysNamespace, signingKeySecret, err)
		}
	}
	return tokenSigner{}, fmt.Errorf("the access token signing key %s/%s kept changing", keysNamespace, signingKeySecret)
}
