// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package plane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"time"
)

// kubeletClientCN is the name in kube-apiserver's kubelet client certificate, the one client
// kwok's kubelet API takes through the guard.
const kubeletClientCN = "kube-apiserver-kubelet-client"

// ServeKwokGuard serves kwok's kubelet API (exec, attach, logs, port-forward of every kwok pod)
// at the kwok Nodes' address to kube-apiserver alone, until ctx ends. kwok authenticates no
// client: the guard speaks TLS with kwok's serving certificate, takes only a client certificate
// of the cluster CA naming kube-apiserver's kubelet client (the CA also signs users'
// certificates), and forwards to kwok on loopback, upgrades (the streams) included.
func (c Config) ServeKwokGuard(ctx context.Context) error {
	pem, err := os.ReadFile(c.Cert("ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("no certificate in %s", c.Cert("ca.crt"))
	}
	serving, err := tls.LoadX509KeyPair(c.Cert("kwok-serving.crt"), c.Cert("kwok-serving.key"))
	if err != nil {
		return err
	}
	backend := &url.URL{Scheme: "https", Host: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(c.KwokBackendPort)).String()}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(backend)
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 16,
		},
		// Followed logs and streams pass as they come.
		FlushInterval: -1,
	}
	srv := &http.Server{
		Addr:              c.kwokAddr(),
		Handler:           proxy,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{serving},
			ClientCAs:    pool,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS12,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if len(cs.PeerCertificates) == 0 || cs.PeerCertificates[0].Subject.CommonName != kubeletClientCN {
					return errors.New("kwok's kubelet API takes only kube-apiserver's kubelet client")
				}
				return nil
			},
		},
		// HTTP/1.1 only: the streams are HTTP/1.1 upgrades.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	errs := make(chan error, 1)
	go func() { errs <- srv.ListenAndServeTLS("", "") }()
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	}
}

// kwokAddr is where kube-apiserver reaches kwok's kubelet API: the guard, at the kwok Nodes'
// address and KwokPort, the port they advertise.
func (c Config) kwokAddr() string {
	return netip.AddrPortFrom(c.KwokNodeIP, uint16(c.KwokPort)).String()
}
