// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"fmt"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/common"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	scalescheme "k8s.io/client-go/scale/scheme"
	scaleautoscalingv1 "k8s.io/client-go/scale/scheme/autoscalingv1"

	agentsinstall "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/install"
	agentsv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1alpha1"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	extensionsinstall "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/install"
	extensionsv1alpha1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1alpha1"
	extensionsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/registry/sandboxstream"
)

var (
	// Scheme holds every type the server serves: both groups in all versions, and the Scale of the
	// scale subresources (client-go's internal Scale with its autoscaling/v1 conversions).
	Scheme = runtime.NewScheme()
	// Codecs encodes and decodes the types of Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec decodes query parameters (list, get and delete options).
	ParameterCodec = runtime.NewParameterCodec(Scheme)
	// serverCodecs are the three, as the groups' storage takes them.
	serverCodecs = common.Codecs{Scheme: Scheme, Codecs: Codecs, ParameterCodec: ParameterCodec}

	// StorageVersions are the versions objects are written to etcd in.
	StorageVersions = schema.GroupVersions{agentsv1beta1.SchemeGroupVersion, extensionsv1beta1.SchemeGroupVersion}
)

func init() {
	agentsinstall.Install(Scheme)
	extensionsinstall.Install(Scheme)
	utilruntime.Must(scalescheme.AddToScheme(Scheme))
	utilruntime.Must(scaleautoscalingv1.AddToScheme(Scheme))
	// The streaming subresources take the query types of their pods/* counterparts.
	utilruntime.Must(sandboxstream.AddToScheme(Scheme, agentsv1beta1.SchemeGroupVersion, agentsv1alpha1.SchemeGroupVersion,
		extensionsv1beta1.SchemeGroupVersion, extensionsv1alpha1.SchemeGroupVersion))

	// The unversioned meta types every API server serves (Status, WatchEvent, options).
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	metav1.AddToGroupVersion(Scheme, unversioned)
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}

// NegotiatedSerializer is what the server speaks: JSON, YAML and protobuf. kubectl asks for JSON
// (or a JSON Table); clients built with protobuf ask for it and accept JSON too.
var NegotiatedSerializer runtime.NegotiatedSerializer = Codecs

// StorageCodec writes objects to etcd in mediaType (JSON or protobuf), in StorageVersions, and
// reads whatever encoding an object was stored in: switching the media type needs no migration.
func StorageCodec(mediaType string) (runtime.Codec, error) {
	info, ok := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return nil, fmt.Errorf("no serializer for storage media type %q", mediaType)
	}
	return Codecs.CodecForVersions(info.Serializer, Codecs.UniversalDeserializer(), StorageVersions, runtime.InternalGroupVersioner), nil
}
