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
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apitestingfuzzer "k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/dump"
	"sigs.k8s.io/randfill/bytesource"
	"sigs.k8s.io/yaml"

	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/fuzzer"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1alpha1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/validation"
)

// fuzzKind is a kind of the group and, for the top-level kinds, its validation.
type fuzzKind struct {
	kind string
	// validate, validateUpdate and validateStatus are nil for list kinds; validateStatus also for
	// kinds without a status subresource.
	validate       func(obj runtime.Object) field.ErrorList
	validateUpdate func(obj, old runtime.Object) field.ErrorList
	validateStatus func(obj, old runtime.Object) field.ErrorList
}

var fuzzKinds = []fuzzKind{
	{
		kind: "SandboxClaim",
		validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateSandboxClaim(obj.(*extensions.SandboxClaim))
		},
		validateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxClaimUpdate(obj.(*extensions.SandboxClaim), old.(*extensions.SandboxClaim))
		},
		validateStatus: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxClaimStatusUpdate(obj.(*extensions.SandboxClaim), old.(*extensions.SandboxClaim))
		},
	},
	{
		kind: "SandboxTemplate",
		validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateSandboxTemplate(obj.(*extensions.SandboxTemplate))
		},
		validateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxTemplateUpdate(obj.(*extensions.SandboxTemplate), old.(*extensions.SandboxTemplate))
		},
	},
	{
		kind: "SandboxWarmPool",
		validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateSandboxWarmPool(obj.(*extensions.SandboxWarmPool))
		},
		validateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxWarmPoolUpdate(obj.(*extensions.SandboxWarmPool), old.(*extensions.SandboxWarmPool))
		},
		validateStatus: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateSandboxWarmPoolStatusUpdate(obj.(*extensions.SandboxWarmPool), old.(*extensions.SandboxWarmPool))
		},
	},
	{kind: "SandboxClaimList"},
	{kind: "SandboxTemplateList"},
	{kind: "SandboxWarmPoolList"},
}

// fuzzVersions are the served versions; conversion goes from each to the other through the hub.
var fuzzVersions = []schema.GroupVersion{v1beta1.SchemeGroupVersion, v1alpha1.SchemeGroupVersion}

// fuzzFuncs fill objects the way the round-trip test does: metadata in shapes that survive JSON,
// and the group's own functions.
var fuzzFuncs = apitestingfuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, fuzzer.Funcs)

var (
	fuzzScheme = newFuzzScheme()
	// fuzzCodecs decode leniently (unknown and duplicate fields dropped), fuzzStrictCodecs report
	// them as strict decoding errors, as the server does under fieldValidation=Strict.
	fuzzCodecs       = serializer.NewCodecFactory(fuzzScheme)
	fuzzStrictCodecs = serializer.NewCodecFactory(fuzzScheme, serializer.EnableStrict)
	fuzzJSON         = serializerFor(fuzzCodecs, runtime.ContentTypeJSON)
)

func newFuzzScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	Install(s)
	return s
}

// serializerFor returns the serializer of codecs for mediaType.
func serializerFor(codecs serializer.CodecFactory, mediaType string) runtime.SerializerInfo {
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		panic("no serializer for " + mediaType)
	}
	return info
}

// namedDecoder is one way the server (or a client) decodes a body.
type namedDecoder struct {
	name string
	runtime.Decoder
}

// fuzzDecoders are the decoders FuzzDecode tries every input with.
var fuzzDecoders = []namedDecoder{
	{"universal", fuzzCodecs.UniversalDeserializer()},
	{"universal strict", fuzzStrictCodecs.UniversalDeserializer()},
	{"json", serializerFor(fuzzCodecs, runtime.ContentTypeJSON).Serializer},
	{"json strict", serializerFor(fuzzCodecs, runtime.ContentTypeJSON).StrictSerializer},
	{"yaml", serializerFor(fuzzCodecs, runtime.ContentTypeYAML).Serializer},
	{"yaml strict", serializerFor(fuzzCodecs, runtime.ContentTypeYAML).StrictSerializer},
}

// fuzzTargets are every kind in every served version. A fuzz input's selector byte picks one: it
// is the kind a body without apiVersion and kind is decoded as (as the URL says on a request), and
// the kind FuzzConvert and FuzzValidate fill.
var fuzzTargets = func() []schema.GroupVersionKind {
	var gvks []schema.GroupVersionKind
	for _, k := range fuzzKinds {
		for _, gv := range fuzzVersions {
			gvks = append(gvks, gv.WithKind(k.kind))
		}
	}
	return gvks
}()

func targetOf(sel uint8) (schema.GroupVersionKind, fuzzKind) {
	gvk := fuzzTargets[int(sel)%len(fuzzTargets)]
	return gvk, kindOf(gvk.Kind)
}

// kindOf returns the fuzzKind of kind; ok is false for a kind the group does not fuzz (the meta
// types every group version carries: WatchEvent, ListOptions, ...).
func kindOf(kind string) fuzzKind {
	for _, k := range fuzzKinds {
		if k.kind == kind {
			return k
		}
	}
	return fuzzKind{}
}

// isFuzzKind tells whether gvk is one of the kinds under test.
func isFuzzKind(gvk schema.GroupVersionKind) bool {
	return gvk.Group == extensions.GroupName && gvk.Version != runtime.APIVersionInternal && kindOf(gvk.Kind).kind != ""
}

// addSeeds adds the examples of the group (as YAML and as JSON), then extra bodies, once for each
// target.
func addSeeds(f *testing.F, extra ...string) {
	f.Helper()
	var bodies [][]byte
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "artifacts", "examples", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if !strings.Contains(string(data), "apiVersion: "+extensions.GroupName+"/") {
			continue
		}
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		bodies = append(bodies, data, js)
	}
	if len(bodies) == 0 {
		f.Fatal("no examples of the group in artifacts/examples")
	}
	for _, e := range extra {
		bodies = append(bodies, []byte(e))
	}
	for i, b := range bodies {
		// Spread the bodies over the targets rather than multiplying them.
		f.Add(uint8(i), b)
	}
	for i := range fuzzTargets {
		f.Add(uint8(i), []byte(`{}`))
	}
}

// trickyBodies are hand-written seeds: wrong types, odd numbers and times, odd unicode, nesting,
// duplicate keys, YAML aliases.
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
}

// FuzzDecode decodes arbitrary bytes with every decoder of the server's codecs, as JSON and YAML,
// leniently and strictly. No input may panic. An object of the group that decodes must survive a
// round trip: defaulted, encoded as JSON in its version and decoded again (strictly, since it is
// our own output), it is semantically equal to what was decoded.
func FuzzDecode(f *testing.F) {
	addSeeds(f, trickyBodies...)
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		defaultGVK, _ := targetOf(sel)
		for _, d := range fuzzDecoders {
			gvk := defaultGVK
			obj, actual, err := d.Decode(data, &gvk, nil)
			if err != nil && !runtime.IsStrictDecodingError(err) {
				continue
			}
			// A strict decoding error still returns the whole object, which must round-trip too.
			if obj == nil || actual == nil || !isFuzzKind(*actual) {
				continue
			}
			checkJSONRoundTrip(t, d.name, obj, *actual)
		}
	})
}

// checkJSONRoundTrip defaults obj, encodes it as JSON in the version of gvk, decodes the result
// and fails unless that gives the same object. An object whose JSON does not decode again (a
// metav1.Time out of the years 0-9999 once in UTC is written in a form RFC 3339 parsing refuses) is
// tolerated only when validation refuses it: otherwise the server stores it, and every read of it
// fails afterwards.
func checkJSONRoundTrip(t *testing.T, decoder string, obj runtime.Object, gvk schema.GroupVersionKind) {
	t.Helper()
	fuzzScheme.Default(obj)
	want := obj.DeepCopyObject()
	encoded, err := runtime.Encode(fuzzCodecs.EncoderForVersion(fuzzJSON.Serializer, gvk.GroupVersion()), obj)
	if err != nil {
		t.Fatalf("%s: a decoded %s does not encode: %v\nobject: %s", decoder, gvk, err, dump.Pretty(want))
	}
	got, gotGVK, err := fuzzStrictCodecs.UniversalDeserializer().Decode(encoded, nil, nil)
	if err != nil {
		if errs := validateCreate(t, want, gvk); len(errs) == 0 {
			t.Fatalf("%s: a valid %s, defaulted and encoded as JSON, does not decode again: %v\nencoded: %s", decoder, gvk, err, encoded)
		}
		return
	}
	if *gotGVK != gvk {
		t.Fatalf("%s: a %s re-decodes as %s", decoder, gvk, gotGVK)
	}
	fuzzScheme.Default(got)
	normalizeForJSON(want)
	normalizeForJSON(got)
	if !apiequality.Semantic.DeepEqual(want, got) {
		t.Fatalf("%s: %s changes in a JSON round trip:\n%s\nencoded: %s", decoder, gvk, describeDiff(want, got), encoded)
	}
}

// validateCreate converts a defaulted versioned object of gvk to the hub and returns what the
// create validation of its kind (of each item for a list) says about it.
func validateCreate(t *testing.T, versioned runtime.Object, gvk schema.GroupVersionKind) field.ErrorList {
	t.Helper()
	internal := convert(t, versioned.DeepCopyObject(), gvk.GroupKind().WithVersion(runtime.APIVersionInternal))
	setRequestNamespace(internal)
	k := kindOf(gvk.Kind)
	if k.validate != nil {
		return k.validate(internal)
	}
	item := kindOf(strings.TrimSuffix(k.kind, "List"))
	var errs field.ErrorList
	for _, it := range itemsOf(internal) {
		errs = append(errs, item.validate(it)...)
	}
	return errs
}

// checkStorable fails unless a hub object that validation accepted survives the way to storage
// and back: converted to the storage version (v1beta1), encoded as JSON, decoded strictly and
// converted back, it is unchanged (but for what JSON does not carry).
func checkStorable(t *testing.T, internal runtime.Object) {
	t.Helper()
	kind := reflect.TypeOf(internal).Elem().Name()
	storage := v1beta1.SchemeGroupVersion.WithKind(kind)
	encoded, err := runtime.Encode(fuzzCodecs.EncoderForVersion(fuzzJSON.Serializer, storage.GroupVersion()), convert(t, internal, storage))
	if err != nil {
		t.Fatalf("a valid %s does not encode for storage: %v\nobject: %s", kind, err, dump.Pretty(internal))
	}
	decoded, _, err := fuzzStrictCodecs.UniversalDeserializer().Decode(encoded, nil, nil)
	if err != nil {
		t.Fatalf("a valid %s is stored as JSON that does not decode again (every read of it would fail): %v\nstored: %s", kind, err, encoded)
	}
	back := convert(t, decoded, storage.GroupKind().WithVersion(runtime.APIVersionInternal))
	want := internal.DeepCopyObject()
	normalizeForJSON(want)
	normalizeForJSON(back)
	if !apiequality.Semantic.DeepEqual(want, back) {
		t.Fatalf("a valid %s changes on its way to storage and back:\n%s\nstored: %s", kind, describeDiff(want, back), encoded)
	}
}

// normalizeForJSON clears what JSON does not carry by design: the type metadata an object holds in
// memory, and the sub-second part of metav1.Time (serialized as RFC 3339 in whole seconds).
func normalizeForJSON(obj runtime.Object) {
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	truncateTimes(reflect.ValueOf(obj))
}

var timeType = reflect.TypeOf(metav1.Time{})

func truncateTimes(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			truncateTimes(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == timeType {
			if v.CanSet() {
				t := v.Interface().(metav1.Time)
				v.Set(reflect.ValueOf(metav1.Time{Time: t.Truncate(time.Second)}))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				truncateTimes(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			truncateTimes(v.Index(i))
		}
	}
}

// describeDiff shows how two objects differ, as JSON when that shows it, as Go values otherwise.
func describeDiff(a, b any) string {
	if d := diff.Diff(a, b); d != "" {
		return d
	}
	return "equal as JSON; as Go values:\n" + dump.Pretty(a) + "\n" + dump.Pretty(b)
}

// FuzzConvert checks the round trip between the versions: an object of one version, converted to
// the internal hub, to the other version, back to the hub and to its own version, is unchanged,
// and the hub objects on the way are equal. The objects come from the input both ways: filled
// with randfill driven by the bytes (as the version's type and as the hub type), and decoded from
// them when they are a body of the group.
func FuzzConvert(f *testing.F) {
	addSeeds(f, trickyBodies...)
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		gvk, _ := targetOf(sel)
		other := otherVersion(gvk)

		// An object of the version, filled from the bytes.
		versioned, err := fuzzScheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		filler(data).Fill(versioned)
		checkVersionRoundTrip(t, "filled "+gvk.Version, versioned, gvk, other)

		// A hub object, filled from the bytes: hub -> version -> hub -> other version -> hub.
		internal, err := fuzzScheme.New(gvk.GroupKind().WithVersion(runtime.APIVersionInternal))
		if err != nil {
			t.Fatal(err)
		}
		filler(data).Fill(internal)
		checkHubRoundTrip(t, internal, gvk, other)

		// The bytes as a body, if they are one.
		want := gvk
		obj, actual, err := fuzzCodecs.UniversalDeserializer().Decode(data, &want, nil)
		if err == nil && actual != nil && isFuzzKind(*actual) {
			checkVersionRoundTrip(t, "decoded", obj, *actual, otherVersion(*actual))
		}
	})
}

// filler is a randfill.Filler reading its randomness from data.
func filler(data []byte) interface{ Fill(any) } {
	return apitestingfuzzer.FuzzerFor(fuzzFuncs, bytesource.New(data), fuzzCodecs)
}

func otherVersion(gvk schema.GroupVersionKind) schema.GroupVersionKind {
	for _, gv := range fuzzVersions {
		if gv.Version != gvk.Version {
			return gv.WithKind(gvk.Kind)
		}
	}
	panic("one version only")
}

// convert converts in to a new object of gvk, failing the test on error.
func convert(t *testing.T, in runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	t.Helper()
	out, err := fuzzScheme.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if err := fuzzScheme.Convert(in, out, nil); err != nil {
		t.Fatalf("converting %T to %s: %v\nobject: %s", in, gvk, err, dump.Pretty(in))
	}
	return out
}

// checkVersionRoundTrip converts obj (of gvk) to the hub, to other, to the hub and back to gvk.
func checkVersionRoundTrip(t *testing.T, what string, obj runtime.Object, gvk, other schema.GroupVersionKind) {
	t.Helper()
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	orig := obj.DeepCopyObject()
	hub := gvk.GroupKind().WithVersion(runtime.APIVersionInternal)
	internal1 := convert(t, obj, hub)
	if !apiequality.Semantic.DeepEqual(obj, orig) {
		t.Fatalf("%s: converting %s to the hub changed the source:\n%s", what, gvk, describeDiff(orig, obj))
	}
	internal2 := convert(t, convert(t, internal1, other), hub)
	if !apiequality.Semantic.DeepEqual(internal1, internal2) {
		t.Fatalf("%s: %s -> hub -> %s -> hub changes the hub object:\n%s", what, gvk, other.Version, describeDiff(internal1, internal2))
	}
	back := convert(t, internal2, gvk)
	back.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	if !apiequality.Semantic.DeepEqual(orig, back) {
		t.Fatalf("%s: %s -> hub -> %s -> hub -> %s is not the original:\n%s", what, gvk, other.Version, gvk.Version, describeDiff(orig, back))
	}
}

// checkHubRoundTrip converts a hub object to gvk's version and back, then to other's and back.
func checkHubRoundTrip(t *testing.T, internal runtime.Object, gvk, other schema.GroupVersionKind) {
	t.Helper()
	internal.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	hub := gvk.GroupKind().WithVersion(runtime.APIVersionInternal)
	for _, v := range []schema.GroupVersionKind{gvk, other} {
		back := convert(t, convert(t, internal, v), hub)
		back.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		if !apiequality.Semantic.DeepEqual(internal, back) {
			t.Fatalf("hub -> %s -> hub is not the original:\n%s", v.Version, describeDiff(internal, back))
		}
	}
}

// knownErrorTypes are the field error types validation may report. ErrorTypeInternal is not among
// them: it is a bug of the validation, not of the object.
var knownErrorTypes = map[field.ErrorType]bool{
	field.ErrorTypeNotFound:     true,
	field.ErrorTypeRequired:     true,
	field.ErrorTypeDuplicate:    true,
	field.ErrorTypeInvalid:      true,
	field.ErrorTypeNotSupported: true,
	field.ErrorTypeForbidden:    true,
	field.ErrorTypeTooLong:      true,
	field.ErrorTypeTooMany:      true,
	field.ErrorTypeTypeInvalid:  true,
}

// FuzzValidate validates hub objects made from the input: the bytes decoded as a body (defaulted
// and converted, as the server does before validation) and a hub object filled from the bytes. The
// validation of create, of an update to the same object and between the two, and of a status
// update must not panic, must leave the objects alone, and every error must name a field and
// have a known type. An object the create validation accepts must survive storage as JSON.
func FuzzValidate(f *testing.F) {
	addSeeds(f, trickyBodies...)
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		gvk, _ := targetOf(sel)
		var objs []runtime.Object

		want := gvk
		if obj, actual, err := fuzzCodecs.UniversalDeserializer().Decode(data, &want, nil); err == nil && actual != nil && isFuzzKind(*actual) {
			fuzzScheme.Default(obj)
			internal := convert(t, obj, actual.GroupKind().WithVersion(runtime.APIVersionInternal))
			setRequestNamespace(internal)
			objs = append(objs, internal)
		}

		internal, err := fuzzScheme.New(gvk.GroupKind().WithVersion(runtime.APIVersionInternal))
		if err != nil {
			t.Fatal(err)
		}
		filler(data).Fill(internal)
		objs = append(objs, internal)

		for _, obj := range objs {
			k := kindOf(reflect.TypeOf(obj).Elem().Name())
			validateAll(t, k, obj, obj)
			for _, old := range objs {
				if reflect.TypeOf(old) == reflect.TypeOf(obj) && old != obj {
					validateAll(t, k, obj, old)
				}
			}
		}
	})
}

// validateAll runs every validation of k on obj (and old for updates) and checks the errors.
func validateAll(t *testing.T, k fuzzKind, obj, old runtime.Object) {
	t.Helper()
	if k.validate == nil {
		// A list: validate its items.
		item := kindOf(strings.TrimSuffix(k.kind, "List"))
		for _, it := range itemsOf(obj) {
			validateAll(t, item, it, it)
		}
		return
	}
	before, beforeOld := obj.DeepCopyObject(), old.DeepCopyObject()
	errs := k.validate(obj)
	checkErrors(t, "create", errs)
	checkErrors(t, "update", k.validateUpdate(obj, old))
	if k.validateStatus != nil {
		checkErrors(t, "status update", k.validateStatus(obj, old))
	}
	if !apiequality.Semantic.DeepEqual(before, obj) || !apiequality.Semantic.DeepEqual(beforeOld, old) {
		t.Fatalf("validation of a %s changed the object:\n%s%s", k.kind, describeDiff(before, obj), describeDiff(beforeOld, old))
	}
	if len(errs) == 0 {
		checkStorable(t, obj)
	}
}

// setRequestNamespace gives an object without a namespace (a list: its items) the namespace of the
// request, as the server does before validation.
func setRequestNamespace(obj runtime.Object) {
	if meta.IsListType(obj) {
		for _, it := range itemsOf(obj) {
			setRequestNamespace(it)
		}
		return
	}
	if m := obj.(metav1.Object); m.GetNamespace() == "" {
		m.SetNamespace("fuzz")
	}
}

// itemsOf returns the items of a list object.
func itemsOf(list runtime.Object) []runtime.Object {
	v := reflect.ValueOf(list).Elem().FieldByName("Items")
	out := make([]runtime.Object, 0, v.Len())
	for i := 0; i < v.Len(); i++ {
		out = append(out, v.Index(i).Addr().Interface().(runtime.Object))
	}
	return out
}

func checkErrors(t *testing.T, what string, errs field.ErrorList) {
	t.Helper()
	for _, e := range errs {
		if e == nil {
			t.Fatalf("%s: a nil error in %v", what, errs)
		}
		if e.Field == "" {
			t.Errorf("%s: error without a field path: %v", what, e)
		}
		if !knownErrorTypes[e.Type] {
			t.Errorf("%s: error of type %q: %v", what, e.Type, e)
		}
	}
	// The server formats the list into a 422; that must not panic either.
	if agg := errs.ToAggregate(); agg != nil && agg.Error() == "" {
		t.Errorf("%s: errors format to an empty message: %#v", what, errs)
	}
}
