// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package framework runs sandbox-apiserver in-process for integration tests: the real server and
// registries on an embedded etcd, without a kube-apiserver in front (so no delegated
// authentication, authorization or namespace admission).
package framework

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/cmd/server"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/fastpath"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/claimbinding"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxwake"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/warm"
)

// startTimeout bounds how long a server may take to become ready.
const startTimeout = 60 * time.Second

// Server is a running in-process sandbox-apiserver.
type Server struct {
	// Config reaches the server as a privileged loopback client (system:apiserver, not the
	// controllers).
	Config *rest.Config
	// Client is the generated clientset on Config.
	Client *versioned.Clientset
	// ControllerConfig and ControllerClient reach the server as its own controllers do: the only
	// client whose writes may carry warm-pool, template and claim marks.
	ControllerConfig *rest.Config
	ControllerClient *versioned.Clientset
	// WarmChooser picks the warm members claims are bound to at create time; nil unless the
	// server was started by StartNonLeader.
	WarmChooser *warm.Chooser
	// ClaimBinder binds claims to warm members inside their create, with WarmChooser's members.
	ClaimBinder *claimbinding.Binder
	// Waker is the server's Waker, as the proxy subresources call it.
	Waker *sandboxwake.Waker
	// Ours lists and watches our kinds from the server's registries, as the controllers' caches do.
	Ours *fastpath.InformerSource
	// DataDir is the embedded etcd's data directory; a new server on it sees the same objects.
	DataDir string

	stop func()
}

// StartServer starts a server with an embedded etcd in dataDir on free loopback ports, waits until
// it is ready and stops it when the test ends.
func StartServer(t testing.TB, dataDir string) *Server {
	t.Helper()
	return StartServerWith(t, dataDir, nil)
}

// StartNonLeader starts a server as a replica that never leads: its controllers are enabled,
// but its cluster is an address nothing listens on, so leader election never succeeds and no
// controller runs, while the warm chooser every replica keeps binds claims at create time.
func StartNonLeader(t testing.TB, dataDir string) *Server {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// Port 1 on loopback: connections are refused at once.
	const unreachable = `apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
users: [{name: none, user: {}}]
current-context: none
`
	if err := os.WriteFile(kubeconfig, []byte(unreachable), 0o600); err != nil {
		t.Fatal(err)
	}
	return StartServerWith(t, dataDir, func(o *server.Options) {
		o.RecommendedOptions.CoreAPI = genericoptions.NewCoreAPIOptions()
		o.RecommendedOptions.CoreAPI.CoreAPIKubeconfigPath = kubeconfig
	})
}

// StartServerWith is StartServer with the options changed by modify (when not nil) before the
// server is built, for example to use an etcd the test runs itself.
func StartServerWith(t testing.TB, dataDir string, modify func(*server.Options)) *Server {
	t.Helper()
	o := server.NewOptions()
	o.EtcdDataDir = dataDir
	o.RecommendedOptions.Authentication = nil
	o.RecommendedOptions.Authorization = nil
	o.RecommendedOptions.CoreAPI = nil
	o.RecommendedOptions.Admission = nil
	// API priority and fairness reads its configuration from the cluster.
	o.RecommendedOptions.Features.EnablePriorityAndFairness = false
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.RecommendedOptions.SecureServing.Listener = listener
	o.RecommendedOptions.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	o.RecommendedOptions.SecureServing.ServerCert.CertDirectory = t.TempDir()
	if modify != nil {
		modify(o)
	}

	srv, cleanup, err := o.Prepare()
	if err != nil {
		t.Fatalf("preparing sandbox-apiserver: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.GenericAPIServer.PrepareRun().RunWithContext(ctx) }()

	s := &Server{Config: rest.CopyConfig(srv.GenericAPIServer.LoopbackClientConfig), DataDir: dataDir, WarmChooser: srv.WarmChooser, ClaimBinder: srv.ClaimBinder, Waker: srv.Waker, Ours: srv.Ours}
	s.Config.QPS, s.Config.Burst = 1000, 2000
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("sandbox-apiserver stopped with an error: %v", err)
		}
		cleanup()
	}
	t.Cleanup(s.stop)

	s.Client, err = versioned.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	s.ControllerConfig = srv.ControllerIdentity.ClientConfig(s.Config)
	if s.ControllerClient, err = versioned.NewForConfig(s.ControllerConfig); err != nil {
		t.Fatal(err)
	}
	if err := waitReady(ctx, s.Client, done); err != nil {
		t.Fatalf("sandbox-apiserver did not become ready: %v", err)
	}
	return s
}

// Stop shuts the server and its embedded etcd down; the data directory stays.
func (s *Server) Stop() { s.stop() }

func waitReady(ctx context.Context, client *versioned.Clientset, done <-chan error) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, startTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, errors.Join(errors.New("server exited"), err)
		default:
		}
		var status int
		client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		return status == http.StatusOK, nil
	})
}
