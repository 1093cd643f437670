// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/fuzzer"
)

// TestRoundTripTypes fuzzes every kind of the group and round-trips it through JSON and
// protobuf in each served version (internal -> v1beta1/v1alpha1 -> JSON or protobuf -> internal),
// with defaulting on decode.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripProtobufTestForAPIGroup(t, Install, fuzzer.Funcs)
}
