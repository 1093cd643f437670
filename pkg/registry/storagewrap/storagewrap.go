// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package storagewrap wraps the storage that the registries get from their REST options.
package storagewrap

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// Getter returns getter with a decorator that wraps every storage it makes, so that a store is
// complete with the wrapped storage before it starts using its storage.
func Getter(getter generic.RESTOptionsGetter, wrap func(storage.Interface) storage.Interface) generic.RESTOptionsGetter {
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
