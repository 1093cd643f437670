// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package fastpath

import (
	"io"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/storagebackend"
)

// statusCodec decodes every input as a Status whose message is the input.
type statusCodec struct{}

func (statusCodec) Decode(data []byte, _ *schema.GroupVersionKind, _ runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	return &metav1.Status{Message: string(data)}, nil, nil
}
func (statusCodec) Encode(runtime.Object, io.Writer) error { return nil }
func (statusCodec) Identifier() runtime.Identifier         { return "status" }

type fixedGetter struct{ opts generic.RESTOptions }

func (g fixedGetter) GetRESTOptions(schema.GroupResource, runtime.Object) (generic.RESTOptions, error) {
	return g.opts, nil
}

func TestDecodedGetterPassesDecodedObjects(t *testing.T) {
	config := &storagebackend.ConfigForResource{Config: storagebackend.Config{Codec: statusCodec{}}}
	var seen []string
	getter := DecodedGetter(fixedGetter{generic.RESTOptions{StorageConfig: config}}, func(obj runtime.Object) {
		seen = append(seen, obj.(*metav1.Status).Message)
	})
	opts, err := getter.GetRESTOptions(schema.GroupResource{Resource: "things"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := opts.StorageConfig.Codec.Decode([]byte("one"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*metav1.Status).Message; got != "one" || len(seen) != 1 || seen[0] != "one" {
		t.Errorf("decoded %q, hook saw %q; want one, [one]", got, seen)
	}
	if _, ok := config.Codec.(statusCodec); !ok {
		t.Errorf("the wrapped getter's own configuration changed: codec %T", config.Codec)
	}
}
