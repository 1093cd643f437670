// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/fuzzer"
)

// TestRoundTripTypes fuzzes every kind of the group and round-trips it through JSON and each
// served version (internal -> v1beta1/v1alpha1 -> JSON -> internal), with defaulting on decode.
// Our types have no protobuf encoding; this helper covers JSON only.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, fuzzer.Funcs)
}
