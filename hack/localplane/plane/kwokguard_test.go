// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kwok-guard passes kube-apiserver's kubelet client, requests and upgrades alike, to kwok's
// server, and refuses a client without a certificate and one of the same CA with another name.
func TestKwokGuardTakesOnlyTheKubeletClient(t *testing.T) {
	root := t.TempDir()
	cfg := Config{Root: root, Out: filepath.Join(root, "_output/local"), KwokNodeIP: netip.MustParseAddr("127.0.0.1"),
		KwokPort: freePort(t), KwokBackendPort: freePort(t), KubeAPIServerPort: 6443}
	if err := cfg.WriteCredentials(false, func(string) {}); err != nil {
		t.Fatal(err)
	}

	// kwok's server: /healthz, and an upgrade that echoes what it is sent.
	backend := http.NewServeMux()
	backend.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	backend.HandleFunc("/exec/ns/pod/agent", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "SPDY/3.1" {
			http.Error(w, "want an upgrade", http.StatusBadRequest)
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
		line, _ := buf.ReadString('\n')
		_, _ = io.WriteString(conn, "echo "+line)
	})
	serving, err := tls.LoadX509KeyPair(cfg.Cert("kwok-serving.crt"), cfg.Cert("kwok-serving.key"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Addr: "127.0.0.1:" + strconv.Itoa(cfg.KwokBackendPort), Handler: backend, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{serving}, MinVersion: tls.VersionTLS12}}
	go func() { _ = srv.ListenAndServeTLS("", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	ctx, cancel := context.WithCancel(context.Background())
	guardDone := make(chan error, 1)
	go func() { guardDone <- cfg.ServeKwokGuard(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-guardDone; err != nil {
			t.Errorf("the guard: %v", err)
		}
	})

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(mustRead(t, cfg.Cert("ca.crt")))
	clientTLS := func(cert string) *tls.Config {
		c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		if cert != "" {
			pair, err := tls.LoadX509KeyPair(cfg.Cert(cert+".crt"), cfg.Cert(cert+".key"))
			if err != nil {
				t.Fatal(err)
			}
			c.Certificates = []tls.Certificate{pair}
		}
		return c
	}
	get := func(cert string) (string, error) {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: clientTLS(cert)}}
		resp, err := client.Get("https://" + cfg.kwokAddr() + "/healthz")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	if err := poll(context.Background(), 20*time.Millisecond, 10*time.Second, func() (bool, error) {
		_, err := get(kubeletClientCN)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the guard never served kube-apiserver's kubelet client: %v", err)
	}

	for _, cert := range []string{"", "admin", "kwok"} {
		if body, err := get(cert); err == nil {
			t.Errorf("with %q's certificate the guard answered %q; want the handshake refused", cert, body)
		}
	}
	if body, err := get(kubeletClientCN); err != nil || body != "ok" {
		t.Errorf("kube-apiserver's kubelet client: %q, %v; want ok", body, err)
	}

	// A stream: the upgrade passes, and then the bytes both ways.
	conn, err := tls.Dial("tcp", cfg.kwokAddr(), clientTLS(kubeletClientCN))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(conn, "POST /exec/ns/pod/agent?command=id HTTP/1.1\r\nHost: kwok\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("the upgrade through the guard: %v, %v", resp, err)
	}
	_, _ = io.WriteString(conn, "ping\n")
	if line, err := r.ReadString('\n'); err != nil || strings.TrimSpace(line) != "echo ping" {
		t.Errorf("through the upgraded stream: %q, %v; want echo ping", line, err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
