// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The cluster CA of hack/local-up.sh (_output/local/certs/ca.{crt,key}): the kube-apiserver
// accepts client certificates it signed, with the subject's CN as the user name and O as groups.
var (
	caOnce sync.Once
	caCert *x509.Certificate
	caKey  crypto.Signer
	caErr  error
)

func loadCA() (*x509.Certificate, crypto.Signer, error) {
	caOnce.Do(func() {
		certPEM, err := os.ReadFile(filepath.Join(certsDir, "ca.crt"))
		if err != nil {
			caErr = err
			return
		}
		keyPEM, err := os.ReadFile(filepath.Join(certsDir, "ca.key"))
		if err != nil {
			caErr = err
			return
		}
		block, _ := pem.Decode(certPEM)
		if block == nil {
			caErr = errors.New("ca.crt: no PEM block")
			return
		}
		if caCert, caErr = x509.ParseCertificate(block.Bytes); caErr != nil {
			return
		}
		block, _ = pem.Decode(keyPEM)
		if block == nil {
			caErr = errors.New("ca.key: no PEM block")
			return
		}
		var key any
		switch block.Type {
		case "RSA PRIVATE KEY":
			key, caErr = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, caErr = x509.ParseECPrivateKey(block.Bytes)
		default:
			key, caErr = x509.ParsePKCS8PrivateKey(block.Bytes)
		}
		if caErr != nil {
			return
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			caErr = fmt.Errorf("ca.key: %T cannot sign", key)
			return
		}
		caKey = signer
	})
	return caCert, caKey, caErr
}

// newUser makes a client certificate for user (CN) in groups (O), signed by the cluster CA, and
// returns the path of a kubeconfig for it that points at the local kube-apiserver. The user has
// no permissions beyond those of system:authenticated until the test binds a role to it.
func newUser(t *testing.T, user string, groups ...string) string {
	t.Helper()
	ca, signer, err := loadCA()
	if err != nil {
		t.Fatalf("loading the cluster CA from %s: %v", certsDir, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, signer)
	if err != nil {
		t.Fatalf("signing a client certificate for %s: %v", user, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}

	admin, err := clientcmd.LoadFromFile(adminKubeconfig)
	if err != nil {
		t.Fatalf("reading %s: %v", adminKubeconfig, err)
	}
	ctx, ok := admin.Contexts[admin.CurrentContext]
	if !ok || admin.Clusters[ctx.Cluster] == nil {
		t.Fatalf("%s: no cluster for the current context %q", adminKubeconfig, admin.CurrentContext)
	}
	cluster := admin.Clusters[ctx.Cluster]
	caData := cluster.CertificateAuthorityData
	if len(caData) == 0 && cluster.CertificateAuthority != "" {
		if caData, err = os.ReadFile(cluster.CertificateAuthority); err != nil {
			t.Fatal(err)
		}
	}

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: cluster.Server, CertificateAuthorityData: caData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	cfg.Contexts[user] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user, Namespace: "default"}
	cfg.CurrentContext = user
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
