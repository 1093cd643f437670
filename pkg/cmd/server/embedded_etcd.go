// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"
)

// embeddedEtcdStartTimeout bounds how long a start may take before the server gives up.
const embeddedEtcdStartTimeout = 60 * time.Second

// startEmbeddedEtcd runs a single-member etcd on loopback that keeps its data in dataDir, so a
// server started without --etcd-servers still stores everything durably. Its client and peer
// ports speak TLS and require a certificate of a CA made for this start (writeEmbeddedEtcdTLS).
// It returns the client URL, the certificates a client presents and a function that stops etcd.
func startEmbeddedEtcd(dataDir string) (string, embeddedEtcdTLS, func(), error) {
	var none embeddedEtcdTLS
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", none, nil, fmt.Errorf("embedded etcd data directory: %w", err)
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", none, nil, err
	}
	certs, err := writeEmbeddedEtcdTLS(filepath.Join(abs, "tls"))
	if err != nil {
		return "", none, nil, fmt.Errorf("embedded etcd certificates: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "sandbox-apiserver"
	cfg.Dir = abs
	clientURL, err := freeLoopbackURL()
	if err != nil {
		return "", none, nil, err
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return "", none, nil, err
	}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.ClientTLSInfo = certs.info()
	cfg.PeerTLSInfo = certs.info()
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// etcd's own log goes beside its data, out of the server's log.
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{filepath.Join(abs, "etcd.log")}
	// Keep the history compacted like kube-apiserver's etcd is in production.
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "5m"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", none, nil, fmt.Errorf("starting embedded etcd in %s: %w", abs, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return "", none, nil, fmt.Errorf("embedded etcd in %s failed: %w", abs, err)
	case <-time.After(embeddedEtcdStartTimeout):
		e.Close()
		return "", none, nil, fmt.Errorf("embedded etcd in %s not ready after %s", abs, embeddedEtcdStartTimeout)
	}
	klog.InfoS("No --etcd-servers given: started an embedded etcd", "dataDir", abs, "url", clientURL.String())
	return clientURL.String(), certs, e.Close, nil
}

// freeLoopbackURL returns an https URL on a loopback port that was free a moment ago. Only this
// process talks to the embedded etcd, so nothing needs its ports to stay the same across restarts.
func freeLoopbackURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, fmt.Errorf("finding a free port for the embedded etcd: %w", err)
	}
	defer l.Close()
	return url.URL{Scheme: "https", Host: l.Addr().String()}, nil
}
