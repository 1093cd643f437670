// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package apiserver

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
)

// TestListsAreEncodedItemByItem checks that a list the API serves is written out as it is
// encoded, in JSON and protobuf, not first encoded whole into a buffer as large as the response
// (tens of MiB for a full list of thousands of Sandboxes, per request).
func TestListsAreEncodedItemByItem(t *testing.T) {
	list := &agents.SandboxList{}
	for i := range 1000 {
		list.Items = append(list.Items, agents.Sandbox{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("sandbox-%04d", i), Namespace: "tenant", Labels: map[string]string{"app": "agent"}}})
	}
	serializer := serverCodecs.GroupInfo(agents.GroupName).NegotiatedSerializer
	for _, mediaType := range []string{apiruntime.ContentTypeJSON, apiruntime.ContentTypeProtobuf} {
		t.Run(mediaType, func(t *testing.T) {
			info, ok := apiruntime.SerializerInfoForMediaType(serializer.SupportedMediaTypes(), mediaType)
			if !ok {
				t.Fatalf("no serializer for %s", mediaType)
			}
			var w writes
			if err := serializer.EncoderForVersion(info.Serializer, agentsv1beta1.SchemeGroupVersion).Encode(list, &w); err != nil {
				t.Fatal(err)
			}
			if w.largest > w.total/100 {
				t.Errorf("a %d-byte list of %d Sandboxes was written with a largest write of %d bytes: encoded whole first",
					w.total, len(list.Items), w.largest)
			}
		})
	}
}

// writes records the writes made to it.
type writes struct{ total, largest int }

func (w *writes) Write(p []byte) (int, error) {
	w.total += len(p)
	w.largest = max(w.largest, len(p))
	return len(p), nil
}
