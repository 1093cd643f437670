// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package claimbinding

import (
	"context"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
)

// splitEtcd keeps each resource in the etcd cluster its map names.
type splitEtcd map[string][]string

func (s splitEtcd) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	config := storagebackend.NewDefaultConfig("/registry", nil)
	config.Transport.ServerList = s[resource.Resource]
	return generic.RESTOptions{StorageConfig: config.ForResource(resource)}, nil
}

// recordingStorage records the creates that reach the storage under the binder.
type recordingStorage struct {
	storage.Interface
	created []string
}

func (r *recordingStorage) Create(_ context.Context, key string, _, _ runtime.Object, _ uint64) error {
	r.created = append(r.created, key)
	return nil
}

// TestSplitEtcdBindsNothing: with claims and sandboxes in different etcd clusters no transaction
// can hold both, so the binder connects nowhere, takes no member from its chooser, and every claim
// is stored as it is.
func TestSplitEtcdBindsNothing(t *testing.T) {
	f := newBindFixture(t, newTemplate(), warmMember("m1", testPool))
	f.warm(warmMember("m1", testPool))
	b, err := New(Config{Chooser: f.chooser, OptsGetter: splitEtcd{
		"sandboxclaims": {"http://127.0.0.1:1"},
		"sandboxes":     {"http://127.0.0.1:2"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if b.etcd != nil {
		t.Fatal("the binder made an etcd client for split clusters")
	}
	if err := b.SetRegistry(Registry{}); err != nil {
		t.Fatalf("SetRegistry: %v", err)
	}
	under := &recordingStorage{}
	claim := &extensions.SandboxClaim{}
	claim.Name, claim.Namespace = "c", "ns"
	if err := b.WrapClaimStorage(under).Create(context.Background(), "/claims/ns/c", claim, &extensions.SandboxClaim{}, 0); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got := f.queued(); !slices.Equal(got, []string{"m1"}) {
		t.Errorf("members queued = %q, want m1 untouched", got)
	}
	if len(under.created) != 1 {
		t.Errorf("creates stored as they are: %v, want the claim's", under.created)
	}
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
