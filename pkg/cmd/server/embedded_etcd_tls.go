// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// embeddedEtcdTLS is where the certificates of the embedded etcd are kept.
type embeddedEtcdTLS struct {
	caFile, certFile, keyFile string
}

// info is the etcd side: serve with the certificate and require one of the CA from every client
// and peer.
func (t embeddedEtcdTLS) info() transport.TLSInfo {
	return transport.TLSInfo{CertFile: t.certFile, KeyFile: t.keyFile, TrustedCAFile: t.caFile, ClientCertAuth: true}
}

// writeEmbeddedEtcdTLS makes, for this start only, a CA and one certificate it signs for
// 127.0.0.1 with server and client usage, and writes them into dir (mode 0600). The embedded
// etcd serves its loopback ports with that certificate and requires it from clients; the server's
// storage presents it. Another process on the machine reaching those ports holds no certificate
// of the CA, so it can neither read nor write sandbox objects (which the controllers act on with
// the server's rights).
func writeEmbeddedEtcdTLS(dir string) (embeddedEtcdTLS, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return embeddedEtcdTLS{}, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return embeddedEtcdTLS{}, err
	}
	ca, err := cert.NewSelfSignedCACert(cert.Config{CommonName: "sandbox-apiserver-embedded-etcd-ca"}, caKey)
	if err != nil {
		return embeddedEtcdTLS{}, fmt.Errorf("embedded etcd CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return embeddedEtcdTLS{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return embeddedEtcdTLS{}, err
	}
	now := time.Now()
	leaf := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "sandbox-apiserver-embedded-etcd"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		NotBefore:    now.Add(-time.Hour),
		// Remade at every start; a year outlasts any run.
		NotAfter:    now.Add(365 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return embeddedEtcdTLS{}, fmt.Errorf("embedded etcd certificate: %w", err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return embeddedEtcdTLS{}, err
	}
	t := embeddedEtcdTLS{
		caFile:   filepath.Join(dir, "ca.crt"),
		certFile: filepath.Join(dir, "etcd.crt"),
		keyFile:  filepath.Join(dir, "etcd.key"),
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: ca.Raw})
	if err := cert.WriteCert(t.caFile, caPEM); err != nil {
		return embeddedEtcdTLS{}, err
	}
	if err := cert.WriteCert(t.certFile, pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: der})); err != nil {
		return embeddedEtcdTLS{}, err
	}
	if err := keyutil.WriteKey(t.keyFile, keyPEM); err != nil {
		return embeddedEtcdTLS{}, err
	}
	return t, nil
}
