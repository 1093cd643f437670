// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEmbeddedEtcdRequiresClientCertificate: another process on the machine that finds the
// embedded etcd's loopback port can neither read nor write it; the certificates handed to the
// server's storage can.
func TestEmbeddedEtcdRequiresClientCertificate(t *testing.T) {
	clientURL, certs, stop, err := startEmbeddedEtcd(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if !strings.HasPrefix(clientURL, "https://127.0.0.1:") {
		t.Fatalf("client URL %s, want https on 127.0.0.1", clientURL)
	}
	serverCA, err := certs.info().ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	rangeAll := func(cfg *tls.Config) (int, error) {
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := client.Post(clientURL+"/v3/kv/range", "application/json",
			bytes.NewReader([]byte(`{"key":"AA==","range_end":"AA==","count_only":true}`)))
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}

	// Trusting the server but presenting no certificate: the handshake fails.
	anonymous := &tls.Config{RootCAs: serverCA.RootCAs, MinVersion: tls.VersionTLS12}
	if code, err := rangeAll(anonymous); err == nil {
		t.Errorf("range without a client certificate answered %d, want a failed handshake", code)
	}
	// Plain HTTP gets no etcd answer.
	resp, err := http.Post(strings.Replace(clientURL, "https://", "http://", 1)+"/v3/kv/range", "application/json",
		bytes.NewReader([]byte(`{"key":"AA=="}`)))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP range answered 200")
		}
	}
	// The server's certificates are accepted.
	if code, err := rangeAll(serverCA); err != nil || code != http.StatusOK {
		t.Errorf("range with the server's certificate: %d %v, want 200", code, err)
	}
}
