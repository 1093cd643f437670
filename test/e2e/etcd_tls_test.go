// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sandboxEtcdAddr is the client address of the local plane's sandbox-etcd.
func sandboxEtcdAddr() string {
	port := os.Getenv("SANDBOX_ETCD_PORT")
	if port == "" {
		port = "2381"
	}
	return "127.0.0.1:" + port
}

// TestSandboxEtcdRequiresClientCertificate is the attack of a process (or a pod) that reaches the
// project's etcd and writes a Sandbox there for the controllers to run with their rights: the
// etcd speaks TLS only and accepts only certificates of its own CA, which signs nothing but
// sandbox-apiserver's client certificate. A certificate of the cluster's CA (the admin's) is
// refused as well; sandbox-apiserver's certificate reads the sandbox keys.
func TestSandboxEtcdRequiresClientCertificate(t *testing.T) {
	t.Parallel()
	addr := sandboxEtcdAddr()
	ca := x509.NewCertPool()
	if !ca.AppendCertsFromPEM(readFile(t, filepath.Join(certsDir, "sandbox-etcd-ca.crt"))) {
		t.Fatal("no certificate in sandbox-etcd-ca.crt")
	}
	clientWith := func(certName string) *http.Client {
		cfg := &tls.Config{RootCAs: ca, MinVersion: tls.VersionTLS12}
		if certName != "" {
			pair, err := tls.LoadX509KeyPair(filepath.Join(certsDir, certName+".crt"), filepath.Join(certsDir, certName+".key"))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	// A write of a Sandbox key through etcd's JSON gateway (keys and values are base64).
	put := func(client *http.Client, scheme string) (int, string, error) {
		body, _ := json.Marshal(map[string]string{
			"key":   base64.StdEncoding.EncodeToString([]byte("/registry/agents.x-k8s.io/sandboxes/default/planted")),
			"value": base64.StdEncoding.EncodeToString([]byte(`{"kind":"Sandbox"}`)),
		})
		resp, err := client.Post(scheme+"://"+addr+"/v3/kv/put", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}

	for _, tc := range []struct {
		name, scheme, cert string
	}{
		{"plain HTTP", "http", ""},
		{"TLS without a client certificate", "https", ""},
		{"TLS with the cluster admin's certificate (another CA)", "https", "admin"},
	} {
		code, body, err := put(clientWith(tc.cert), tc.scheme)
		switch {
		case err != nil:
			t.Logf("%s: refused: %v", tc.name, err)
		case code == http.StatusOK:
			t.Errorf("%s: the put of a Sandbox key succeeded: %s", tc.name, body)
		default:
			t.Logf("%s: refused with %d %s", tc.name, code, strings.TrimSpace(body))
		}
	}

	// sandbox-apiserver's certificate is accepted: a read of the sandbox keys answers.
	range_, _ := json.Marshal(map[string]any{
		"key":        base64.StdEncoding.EncodeToString([]byte("/registry/")),
		"range_end":  base64.StdEncoding.EncodeToString([]byte("/registry0")),
		"count_only": true,
	})
	resp, err := clientWith("sandbox-etcd-client").Post("https://"+addr+"/v3/kv/range", "application/json", bytes.NewReader(range_))
	if err != nil {
		t.Fatalf("range with sandbox-apiserver's etcd client certificate: %v", err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
		t.Fatalf("range with sandbox-apiserver's etcd client certificate: %d %s", resp.StatusCode, b)
	}
}
