// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/cmd/server"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/fastpath"
	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

// protobufPrefix starts every object Kubernetes stores as protobuf ("k8s" and a zero byte).
var protobufPrefix = []byte("k8s\x00")

// TestStorageMediaTypeSwitch stores objects as JSON (what servers before protobuf wrote), then
// restarts on the same etcd with the default protobuf storage: the JSON objects read back
// unchanged, and what is written from then on is stored as protobuf.
func TestStorageMediaTypeSwitch(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	ctx := testContext(t)
	const ns = "storage"

	var opts *server.Options
	s := framework.StartServerWith(t, dataDir, func(o *server.Options) {
		o.RecommendedOptions.Etcd.DefaultStorageMediaType = runtime.ContentTypeJSON
		opts = o
	})
	sb, err := s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, richSandbox(ns, "from-json"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Create(ctx, newTemplate(ns, "tmpl"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, newClaim(ns, "from-json", "tmpl"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := storedValue(ctx, t, opts, "/sandboxes/"+ns+"/from-json"); !bytes.HasPrefix(v, []byte("{")) {
		t.Fatalf("with --storage-media-type=application/json the Sandbox is stored as %.20q, want JSON", v)
	}
	s.Stop()

	s = framework.StartServerWith(t, dataDir, func(o *server.Options) { opts = o })
	gotSB, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "from-json", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Sandbox stored as JSON, read with protobuf storage: %v", err)
	}
	if jsonOf(t, gotSB) != jsonOf(t, sb) {
		t.Errorf("Sandbox changed across the switch:\nbefore: %s\n after: %s", jsonOf(t, sb), jsonOf(t, gotSB))
	}
	gotClaim, err := s.Client.ExtensionsV1beta1().SandboxClaims(ns).Get(ctx, "from-json", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("SandboxClaim stored as JSON, read with protobuf storage: %v", err)
	}
	if jsonOf(t, gotClaim) != jsonOf(t, claim) {
		t.Errorf("SandboxClaim changed across the switch:\nbefore: %s\n after: %s", jsonOf(t, claim), jsonOf(t, gotClaim))
	}

	list, err := s.Client.AgentsV1beta1().Sandboxes(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Client.AgentsV1beta1().Sandboxes(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	gotSB.Labels["switched"] = "yes"
	if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Update(ctx, gotSB, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update of a Sandbox stored as JSON: %v", err)
	}
	expectEvent(t, w, watch.Modified, "from-json")
	if v := storedValue(ctx, t, opts, "/sandboxes/"+ns+"/from-json"); !bytes.HasPrefix(v, protobufPrefix) {
		t.Errorf("the updated Sandbox is stored as %.20q, want protobuf", v)
	}
	if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, newSandbox(ns, "from-proto"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := storedValue(ctx, t, opts, "/sandboxes/"+ns+"/from-proto"); !bytes.HasPrefix(v, protobufPrefix) {
		t.Errorf("a new Sandbox is stored as %.20q, want protobuf", v)
	}
}

// storedValue reads the etcd value whose key ends in suffix from the etcd of the server that o
// configured.
func storedValue(ctx context.Context, t *testing.T, o *server.Options, suffix string) []byte {
	t.Helper()
	cfg, err := fastpath.EtcdClientConfig(o.RecommendedOptions.Etcd.StorageConfig.Transport)
	if err != nil {
		t.Fatal(err)
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get(ctx, o.RecommendedOptions.Etcd.StorageConfig.Prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), suffix) {
			return kv.Value
		}
	}
	t.Fatalf("no key ending in %s in etcd", suffix)
	return nil
}
