// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package certs makes the certificates of the local plane (hack/local-up.sh) and of a deploy
// from the plain manifests (hack/deploy-certs.sh): CAs kept once made, leaves signed by them and
// kept while they still verify and are valid for a while longer. Files are NAME.crt and NAME.key
// (PEM; keys PKCS#8, mode 0600) in one directory.
package certs

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1" //nolint:gosec // the subject key identifier of RFC 5280 4.2.1.2, not a signature
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Usage is what a leaf certificate is for.
type Usage string

const (
	Server Usage = "server"
	Client Usage = "client"
	// Peer serves and dials (etcd's members).
	Peer Usage = "peer"
)

// keyBits: RSA keys of the same size as kubeadm's.
const keyBits = 2048

// RenewBefore: a leaf that expires sooner is made anew.
const RenewBefore = 30 * 24 * time.Hour

// Leaf describes a certificate signed by the CA named CA in the same directory.
type Leaf struct {
	Name, CA, CN string
	// Orgs are the subject's organizations (Kubernetes groups for a client).
	Orgs  []string
	Usage Usage
	Days  int
	// SANs are DNS names or IP addresses.
	SANs []string
}

// Dir is a directory of certificates.
type Dir struct {
	Path string
	// Renew makes leaves anew even when they are still good.
	Renew bool
	// Report, when set, is told of each file made or kept.
	Report func(string)
}

func (d Dir) report(format string, args ...any) {
	if d.Report != nil {
		d.Report(fmt.Sprintf(format, args...))
	}
}

func (d Dir) file(name, ext string) string { return filepath.Join(d.Path, name+ext) }

// EnsureCA makes the CA NAME (a self-signed certificate for cn, valid for days) unless its
// certificate and key exist: a CA is what others trust, so it is kept.
func (d Dir) EnsureCA(name, cn string, days int) error {
	if _, _, err := d.load(name); err == nil {
		return nil
	}
	key, err := d.newKey(name)
	if err != nil {
		return err
	}
	serial, err := randomSerial()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Duration(days) * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:          subjectKeyID(&key.PublicKey),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	d.report("new CA %s.crt (CN %s, %d days)", name, cn, days)
	return writePEM(d.file(name, ".crt"), "CERTIFICATE", der, 0o644)
}

// EnsureLeaf makes the leaf l unless it exists, verifies against its CA, names the same
// subject and alternative names and is valid for RenewBefore more (or Renew is set).
func (d Dir) EnsureLeaf(l Leaf) error {
	caCert, caKey, err := d.load(l.CA)
	if err != nil {
		return fmt.Errorf("%s: its CA %s: %w", l.Name, l.CA, err)
	}
	if !d.Renew && d.leafGood(l, caCert) {
		return nil
	}
	key, err := d.newKey(l.Name)
	if err != nil {
		return err
	}
	serial, err := randomSerial()
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: l.CN, Organization: l.Orgs},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Duration(l.Days) * 24 * time.Hour),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		AuthorityKeyId:        caCert.SubjectKeyId,
	}
	switch l.Usage {
	case Server:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	case Client:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	case Peer:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	default:
		return fmt.Errorf("%s: usage %q is not server, client or peer", l.Name, l.Usage)
	}
	for _, s := range l.SANs {
		if ip := net.ParseIP(s); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, s)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	d.report("new %s.crt (CN %s, %d days, signed by %s.crt)", l.Name, l.CN, l.Days, l.CA)
	return writePEM(d.file(l.Name, ".crt"), "CERTIFICATE", der, 0o644)
}

// leafGood reports whether the leaf on disk can stay.
func (d Dir) leafGood(l Leaf, ca *x509.Certificate) bool {
	cert, key, err := d.load(l.Name)
	if err != nil {
		return false
	}
	// A stop between writing the key and the certificate leaves them apart.
	if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return false
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return false
	}
	if time.Until(cert.NotAfter) < RenewBefore || cert.Subject.CommonName != l.CN {
		return false
	}
	for _, s := range l.SANs {
		if cert.VerifyHostname(s) != nil {
			return false
		}
	}
	return true
}

// EnsureKeyPair makes NAME.key and its public key NAME.pub (the service account signing key)
// unless both exist.
func (d Dir) EnsureKeyPair(name string) error {
	pub := d.file(name, ".pub")
	if _, err := readKey(d.file(name, ".key")); err == nil {
		if _, err := os.Stat(pub); err == nil {
			return nil
		}
	}
	key, err := d.newKey(name)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	d.report("new key pair %s.key, %s.pub", name, name)
	return writePEM(pub, "PUBLIC KEY", der, 0o644)
}

func (d Dir) newKey(name string) (*rsa.PrivateKey, error) {
	if err := os.MkdirAll(filepath.Dir(d.Path), 0o755); err != nil {
		return nil, err
	}
	if err := os.Mkdir(d.Path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, keyBits)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return key, writePEM(d.file(name, ".key"), "PRIVATE KEY", der, 0o600)
}

// load reads NAME.crt and NAME.key.
func (d Dir) load(name string) (*x509.Certificate, crypto.Signer, error) {
	data, err := os.ReadFile(d.file(name, ".crt"))
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("%s.crt: no PEM certificate", name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := readKey(d.file(name, ".key"))
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// readKey reads a PKCS#8 or PKCS#1 private key (openssl made the latter in older checkouts).
func readKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM key", path)
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("%s: not a PKCS#8 or PKCS#1 private key", path)
}

// writePEM writes atomically, so a reader never sees half a file.
func writePEM(path, typ string, der []byte, mode fs.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return os.Rename(tmp, path)
}

func randomSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func subjectKeyID(pub *rsa.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha1.Sum(der) //nolint:gosec // see the import
	return sum[:]
}
