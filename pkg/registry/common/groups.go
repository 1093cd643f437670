// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package common

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// Codecs are the server's scheme and codecs, which every group is served with.
type Codecs struct {
	Scheme         *runtime.Scheme
	Codecs         serializer.CodecFactory
	ParameterCodec runtime.ParameterCodec
}

// GroupInfo is the library's group info for group on c. Its serializer encodes a list item by
// item into the response (the StreamingCollectionEncodingToJSON and ...ToProtobuf features, on by
// default) instead of into one buffer as large as the response.
func (c Codecs) GroupInfo(group string) genericapiserver.APIGroupInfo {
	return genericapiserver.NewDefaultAPIGroupInfo(group, c.Scheme, c.ParameterCodec, c.Codecs)
}

// AddSubresources adds a kind's subresources, keyed by subresource name, to resources.
func AddSubresources(resources map[string]rest.Storage, kind string, subresources map[string]rest.Storage) {
	for name, storage := range subresources {
		resources[kind+"/"+name] = storage
	}
}
