// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// EtcdClientConfig configures etcd clients of the server's own, beside those of the generic
// storage, to reach etcd the way the storage does.

package fastpath

import (
	"context"
	"net"

	clienttransport "go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"k8s.io/apiserver/pkg/server/egressselector"
	"k8s.io/apiserver/pkg/storage/storagebackend"
)

// EtcdClientConfig returns the client configuration for the members of t, with its TLS files and its
// dialer (EgressLookup), as the storage's clients have them.
func EtcdClientConfig(t storagebackend.TransportConfig) (clientv3.Config, error) {
	cfg := clientv3.Config{Endpoints: t.ServerList, Logger: zap.NewNop()}
	if t.CertFile != "" || t.KeyFile != "" || t.TrustedCAFile != "" {
		info := clienttransport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}
		var err error
		if cfg.TLS, err = info.ClientConfig(); err != nil {
			return clientv3.Config{}, err
		}
	}
	if t.EgressLookup != nil {
		dial, err := t.EgressLookup(egressselector.Etcd.AsNetworkContext())
		if err != nil {
			return clientv3.Config{}, err
		}
		cfg.DialOptions = append(cfg.DialOptions, grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		}))
	}
	return cfg, nil
}
