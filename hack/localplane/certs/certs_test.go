// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package certs

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func readCert(t *testing.T, dir, name string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name+".crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCAAndLeaves(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	if err := d.EnsureCA("ca", "test-ca", 3650); err != nil {
		t.Fatal(err)
	}
	server := Leaf{Name: "server", CA: "ca", CN: "kube-apiserver", Usage: Server, Days: 365,
		SANs: []string{"127.0.0.1", "localhost", "kubernetes.default.svc"}}
	client := Leaf{Name: "admin", CA: "ca", CN: "admin", Orgs: []string{"system:masters"}, Usage: Client, Days: 365}
	for _, l := range []Leaf{server, client} {
		if err := d.EnsureLeaf(l); err != nil {
			t.Fatal(err)
		}
	}
	ca := readCert(t, d.Path, "ca")
	if !ca.IsCA || ca.Subject.CommonName != "test-ca" {
		t.Errorf("CA: IsCA=%v CN=%q", ca.IsCA, ca.Subject.CommonName)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	srv := readCert(t, d.Path, "server")
	if _, err := srv.Verify(x509.VerifyOptions{Roots: roots, DNSName: "kubernetes.default.svc"}); err != nil {
		t.Errorf("server certificate: %v", err)
	}
	if err := srv.VerifyHostname("127.0.0.1"); err != nil {
		t.Errorf("server certificate lacks its IP SAN: %v", err)
	}
	cl := readCert(t, d.Path, "admin")
	if _, err := cl.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if !slices.Equal(cl.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("client organizations = %v", cl.Subject.Organization)
	}
	if _, err := cl.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("a client certificate verifies for serving")
	}
	if info, err := os.Stat(filepath.Join(d.Path, "admin.key")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("admin.key mode = %v, %v; want 0600", info.Mode().Perm(), err)
	}

	// A second run keeps everything; a new SAN remakes the leaf; Renew remakes it.
	before := fileBytes(t, filepath.Join(d.Path, "server.crt"))
	if err := d.EnsureCA("ca", "test-ca", 3650); err != nil {
		t.Fatal(err)
	}
	if err := d.EnsureLeaf(server); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, fileBytes(t, filepath.Join(d.Path, "server.crt"))) {
		t.Error("a good leaf was made anew")
	}
	server.SANs = append(server.SANs, "10.88.0.1")
	if err := d.EnsureLeaf(server); err != nil {
		t.Fatal(err)
	}
	if readCert(t, d.Path, "server").VerifyHostname("10.88.0.1") != nil {
		t.Error("a leaf lacking a wanted SAN was kept")
	}
	d.Renew = true
	before = fileBytes(t, filepath.Join(d.Path, "admin.crt"))
	if err := d.EnsureLeaf(client); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(before, fileBytes(t, filepath.Join(d.Path, "admin.crt"))) {
		t.Error("Renew kept the leaf")
	}
}

// A leaf of another CA (the CA was made anew) is made again, signed by the new one.
func TestLeafRemadeForNewCA(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	leaf := Leaf{Name: "etcd", CA: "ca", CN: "etcd", Usage: Peer, Days: 365, SANs: []string{"127.0.0.1"}}
	if err := d.EnsureCA("ca", "one", 10); err != nil {
		t.Fatal(err)
	}
	if err := d.EnsureLeaf(leaf); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(d.Path, "ca.crt"))
	if err := d.EnsureCA("ca", "two", 10); err != nil {
		t.Fatal(err)
	}
	if err := d.EnsureLeaf(leaf); err != nil {
		t.Fatal(err)
	}
	if got := readCert(t, d.Path, "etcd").Issuer.CommonName; got != "two" {
		t.Errorf("leaf issued by %q, want the new CA", got)
	}
	if got := readCert(t, d.Path, "etcd").ExtKeyUsage; len(got) != 2 {
		t.Errorf("peer certificate usages = %v, want server and client", got)
	}
}

func TestKeyPair(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	if err := d.EnsureKeyPair("service-account"); err != nil {
		t.Fatal(err)
	}
	pub := fileBytes(t, filepath.Join(d.Path, "service-account.pub"))
	if err := d.EnsureKeyPair("service-account"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pub, fileBytes(t, filepath.Join(d.Path, "service-account.pub"))) {
		t.Error("the key pair was made anew")
	}
	block, _ := pem.Decode(pub)
	if _, err := x509.ParsePKIXPublicKey(block.Bytes); err != nil {
		t.Errorf("service-account.pub: %v", err)
	}
}
