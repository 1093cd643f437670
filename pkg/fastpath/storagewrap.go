// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// WrapStorage and DecodedGetter wrap the storage that the registries get from their REST options.

package fastpath

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// WrapStorage returns getter with a decorator that wraps every storage it makes, so that a store is
// complete with the wrapped storage before it starts using its storage.
func WrapStorage(getter generic.RESTOptionsGetter, wrap func(storage.Interface) storage.Interface) generic.RESTOptionsGetter {
	return wrappedGetter{RESTOptionsGetter: getter, wrap: wrap}
}

type wrappedGetter struct {
	generic.RESTOptionsGetter
	wrap func(storage.Interface) storage.Interface
}

func (g wrappedGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	decorate := opts.Decorator
	opts.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, trigger storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorate(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrs, trigger, indexers)
		if err != nil {
			return nil, nil, err
		}
		return g.wrap(s), destroy, nil
	}
	return opts, nil
}

// DecodedGetter returns getter with a storage codec that passes every object it decodes from
// etcd, for the watch cache, a list or a read, to decoded before returning it.
func DecodedGetter(getter generic.RESTOptionsGetter, decoded func(runtime.Object)) generic.RESTOptionsGetter {
	return decodedGetter{RESTOptionsGetter: getter, decoded: decoded}
}

type decodedGetter struct {
	generic.RESTOptionsGetter
	decoded func(runtime.Object)
}

func (g decodedGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil || opts.StorageConfig == nil {
		return opts, err
	}
	config := *opts.StorageConfig
	config.Codec = decodingCodec{Codec: config.Codec, decoded: g.decoded}
	opts.StorageConfig = &config
	return opts, nil
}

type decodingCodec struct {
	runtime.Codec
	decoded func(runtime.Object)
}

func (c decodingCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := c.Codec.Decode(data, defaults, into)
	if err == nil && obj != nil {
		c.decoded(obj)
	}
	return obj, gvk, err
}
