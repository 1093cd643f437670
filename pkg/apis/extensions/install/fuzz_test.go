// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package install

// Go native fuzz targets for extensions.agents.x-k8s.io: decoding arbitrary bytes with the server's codecs,
// converting between the versions, and validating whatever decodes. `go test` runs the seeds
// below (and any input kept under testdata/fuzz/<Target>/); a fuzzing run takes one target:
//
//	go test -run '^$' -fuzz '^FuzzDecode$' -fuzztime 30s ./pkg/apis/extensions/install
//
// The agents group has the same three targets in pkg/apis/agents/install; the two files differ in
// their kinds and seeds only.

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/apifuzz"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/fuzzer"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1alpha1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/validation"
)

// fuzzKinds are the kinds of the group, with the validation of the top-level ones.
var fuzzKinds = []apifuzz.Kind{
	{
		Name: "SandboxClaim",
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateSandboxClaim(obj.(*extensions.SandboxClaim))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxClaimUpdate(obj.(*extensions.SandboxClaim), old.(*extensions.SandboxClaim))
		},
		ValidateStatus: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxClaimStatusUpdate(obj.(*extensions.SandboxClaim), old.(*extensions.SandboxClaim))
		},
	},
	{
		Name: "SandboxTemplate",
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateSandboxTemplate(obj.(*extensions.SandboxTemplate))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxTemplateUpdate(obj.(*extensions.SandboxTemplate), old.(*extensions.SandboxTemplate))
		},
	},
	{
		Name: "SandboxWarmPool",
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateSandboxWarmPool(obj.(*extensions.SandboxWarmPool))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxWarmPoolUpdate(obj.(*extensions.SandboxWarmPool), old.(*extensions.SandboxWarmPool))
		},
		ValidateStatus: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxWarmPoolStatusUpdate(obj.(*extensions.SandboxWarmPool), old.(*extensions.SandboxWarmPool))
		},
	},
	{Name: "SandboxClaimList"},
	{Name: "SandboxTemplateList"},
	{Name: "SandboxWarmPoolList"},
}

// trickyBodies are hand-written seeds: wrong types, odd numbers and times, odd unicode, nesting,
// duplicate keys, YAML aliases, protobuf.
var trickyBodies = []string{
	``,
	`null`,
	`[]`,
	`"SandboxClaim"`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim"}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1alpha1","kind":"SandboxClaim","metadata":{"name":"c"},"spec":{"sandboxTemplateRef":"t"}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim","spec":{"sandboxTemplateRef":{"name":"t"},"warmpool":"Fast_Pool",` +
		`"env":[{"name":"1X","value":"v"},{"name":"A","value":"v","containerName":"Bad"},{"name":"A","value":"w"},{"name":"A"}]}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim","spec":{"lifecycle":{"ttlSecondsAfterFinished":-1,` +
		`"shutdownPolicy":"Orphan","shutdownTime":"2099-01-01T00:00:00.5-01:00"}}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim","spec":{"lifecycle":{"ttlSecondsAfterFinished":2147483648}}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim","spec":{"additionalPodMetadata":{"labels":{"agents.x-k8s.io/claim-uid":"x",` +
		`"🙂":"\u202e"},"annotations":{"k8s.io/x":"\u0000"}}}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim","status":{"sandbox":{"name":"Bad_Name","podIPs":["1.2.3"]},` +
		`"conditions":[{"type":"","status":"","lastTransitionTime":null}]}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxTemplate","spec":{"networkPolicyManagement":"Sometimes","envVarsInjectionPolicy":"",` +
		`"podTemplate":{"spec":{"containers":[]}},"networkPolicy":{"ingress":[{"ports":[{"protocol":"ICMP","port":"http","endPort":1}],` +
		`"from":[{"ipBlock":{"cidr":"10.0.0.0/33","except":["11.0.0.0/8"]},"podSelector":{"matchExpressions":[{"key":"a","operator":"Maybe"}]}}]}],` +
		`"egress":[{"ports":[{"port":70000,"endPort":1}]}]}}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxTemplate","spec":{"podTemplate":{"spec":{"containers":[{"name":"a","image":"b",` +
		`"ports":[{"containerPort":0,"hostPort":65536,"name":"TOO-LONG-PORT-NAME"}],"env":[{"name":""}],"volumeMounts":[{"name":"nope"}]}],` +
		`"volumes":[{"name":"v"},{"name":"v"}],"restartPolicy":"Sometimes"}},"volumeClaimTemplates":[{"metadata":{"name":"v"},"spec":{}}]}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxWarmPool","spec":{"replicas":-1,"sandboxTemplateRef":{},"updateStrategy":{"type":"Rolling"}}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxWarmPool","spec":{"replicas":1e309}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxWarmPool","spec":{"replicas":1.5,"replicas":2}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1alpha1","kind":"SandboxWarmPool","status":{"replicas":-3,"readyReplicas":9,"selector":"a in (b"}}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxWarmPoolList","items":[{"spec":{"replicas":1}},{}]}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxTemplate","metadata":{"annotations":{"deep":"` + strings.Repeat("{", 200) + `"}},"x":` +
		strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"SandboxClaim"} trailing`,
	`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"SandboxClaim"}`,
	`{"apiVersion":"extensions.agents.x-k8s.io/v1beta1","kind":"Sandbox"}`,
	"apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxWarmPool\nspec:\n  replicas: 0x10\n  sandboxTemplateRef: &r {name: t}\n  updateStrategy: *r\n",
	"a: &a [*a, *a]\n",
	"apiVersion: extensions.agents.x-k8s.io/v1beta1\nkind: SandboxClaim\nspec:\n  lifecycle:\n    shutdownTime: 2099-01-01\n    ttlSecondsAfterFinished: .inf\n",
	"\xff\xfe{\x00}",
	// Protobuf, whose strings may be any bytes: a selfLink that is not UTF-8, which JSON would rewrite.
	"k8s\x00\x0a:\x0a#extensions.agents.x-k8s.io/v1alpha1\x12\x13SandboxWarmPoolList\x12\x07\x0a\x05\x0a\x030\xff0",
}

// group is this API group under fuzzing; v1beta1, the storage version, first.
var group = apifuzz.NewGroup(extensions.GroupName, Install, fuzzKinds,
	[]schema.GroupVersion{v1beta1.SchemeGroupVersion, v1alpha1.SchemeGroupVersion}, fuzzer.Funcs)

func FuzzDecode(f *testing.F)   { group.FuzzDecode(f, trickyBodies...) }
func FuzzConvert(f *testing.F)  { group.FuzzConvert(f, trickyBodies...) }
func FuzzValidate(f *testing.F) { group.FuzzValidate(f, trickyBodies...) }
