// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package install

// Go native fuzz targets for agents.x-k8s.io: decoding arbitrary bytes with the server's codecs,
// converting between the versions, and validating whatever decodes. `go test` runs the seeds
// below (and any input kept under testdata/fuzz/<Target>/); a fuzzing run takes one target:
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 30s ./pkg/apis/agents/install
//
// The extensions group has the same three targets in pkg/apis/extensions/install.

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/fuzzer"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1alpha1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/validation"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/apifuzz"
)

// fuzzKinds are the kinds of the group, with the validation of the top-level ones.
var fuzzKinds = []apifuzz.Kind{
	{
		Name:     "Sandbox",
		Validate: func(obj runtime.Object) field.ErrorList { return validation.ValidateSandbox(obj.(*agents.Sandbox)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxUpdate(obj.(*agents.Sandbox), old.(*agents.Sandbox))
		},
		ValidateStatus: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxStatusUpdate(obj.(*agents.Sandbox), old.(*agents.Sandbox))
		},
	},
	{Name: "SandboxList"},
}

// trickyBodies are hand-written seeds: wrong types, odd numbers and times, odd unicode, nesting,
// duplicate keys, YAML aliases.
var trickyBodies = []string{
	``,
	`null`,
	`[]`,
	`"Sandbox"`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox"}`,
	`{"apiVersion":"agents.x-k8s.io/v1alpha1","kind":"Sandbox","metadata":{"name":"x"},"spec":{"replicas":"1"}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","spec":{"replicas":2147483648}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","spec":{"replicas":1e309}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","spec":{"replicas":1.5,"replicas":-1}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","spec":{"shutdownTime":"2099-01-01T00:00:00.123456789+05:30"}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","spec":{"shutdownTime":"yesterday"}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","spec":{"shutdownPolicy":"Sometimes","service":"yes"}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"\u202eevil\u0000","labels":{"🙂":"\ud800"}}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","spec":{"podTemplate":{"spec":{"containers":{"name":"agent"}}}}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","spec":{"podTemplate":{"spec":{"containers":[{"name":"a","image":"b",` +
		`"resources":{"requests":{"cpu":"1e1000","memory":"-1Gi"}},"ports":[{"containerPort":"http"}]}]}}}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","spec":{"volumeClaimTemplates":[{"metadata":{"name":"w"},` +
		`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"0.000000001m"}}}}]}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","status":{"replicas":5,"selector":"a!=b","podIPs":["::1","300.1.1.1"],` +
		`"conditions":[{"type":"Ready","status":"Maybe","lastTransitionTime":"2020-01-01T00:00:00Z","reason":"x y"}]}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"SandboxList","items":[{"metadata":{"name":"a"}},{}]}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"annotations":{"deep":"` + strings.Repeat("[", 200) + `"}},"x":` +
		strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"managedFields":[{"manager":"m","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]}}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox"} trailing`,
	`{"apiVersion":"agents.x-k8s.io/v2","kind":"Sandbox"}`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"WatchEvent","type":"ADDED","object":{}}`,
	"apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata: &m\n  name: x\n  labels: {a: b}\nspec:\n  podTemplate:\n    metadata: *m\n",
	"a: &a [*a, *a]\n",
	"apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nspec:\n  replicas: 0x1\n  service: yes\n  shutdownTime: 2099-01-01\n",
	"apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata:\n  labels:\n    1: 2\n    ? [a]\n    : b\n",
	"---\n---\napiVersion: agents.x-k8s.io/v1alpha1\nkind: Sandbox\n",
	"\xff\xfe{\x00}",
}

// group is this API group under fuzzing; v1beta1, the storage version, first.
var group = apifuzz.NewGroup(agents.GroupName, Install, fuzzKinds,
	[]schema.GroupVersion{v1beta1.SchemeGroupVersion, v1alpha1.SchemeGroupVersion}, fuzzer.Funcs)

func FuzzDecode(f *testing.F)   { group.FuzzDecode(f, trickyBodies...) }
func FuzzConvert(f *testing.F)  { group.FuzzConvert(f, trickyBodies...) }
func FuzzValidate(f *testing.F) { group.FuzzValidate(f, trickyBodies...) }
