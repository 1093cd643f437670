// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

// Package apifuzz holds the Go fuzz targets both API groups share: decoding arbitrary bytes with
// the server's codecs, converting between the versions through the internal hub, and validating
// whatever decodes. Each group's install package runs them with its own kinds and seeds.
package apifuzz

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
	"k8s.io/apimachinery/pkg/runtime/serializer/recognizer"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/dump"
	"sigs.k8s.io/randfill/bytesource"
	"sigs.k8s.io/yaml"
)

// Kind is a kind of the group and, for the top-level kinds, its validation on the hub type.
type Kind struct {
	Name string
	// Validate, ValidateUpdate and ValidateStatus are nil for list kinds; ValidateStatus also for
	// kinds without a status subresource.
	Validate       func(obj runtime.Object) field.ErrorList
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	ValidateStatus func(obj, old runtime.Object) field.ErrorList
}

// Group is one API group under fuzzing.
type Group struct {
	name     string
	kinds    []Kind
	versions []schema.GroupVersion
	storage  schema.GroupVersion
	funcs    apitestingfuzzer.FuzzerFuncs

	scheme *runtime.Scheme
	// codecs decode leniently (unknown and duplicate fields dropped), strictCodecs report them as
	// strict decoding errors, as the server does under fieldValidation=Strict.
	codecs, strictCodecs serializer.CodecFactory
	json, protobuf       runtime.SerializerInfo
	decoders             []namedDecoder
	// targets are every kind in every served version. A fuzz input's selector byte picks one: it
	// is the kind a body without apiVersion and kind is decoded as (as the URL says on a
	// request), and the kind FuzzConvert and FuzzValidate fill.
	targets []schema.GroupVersionKind
}

// NewGroup describes the group name installed by install, with its kinds, its served versions
// (the first is the storage version) and the fuzzer functions of its types.
func NewGroup(name string, install func(*runtime.Scheme), kinds []Kind, versions []schema.GroupVersion, funcs apitestingfuzzer.FuzzerFuncs) *Group {
	g := &Group{name: name, kinds: kinds, versions: versions, storage: versions[0],
		funcs: apitestingfuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, funcs)}
	g.scheme = runtime.NewScheme()
	install(g.scheme)
	g.codecs = serializer.NewCodecFactory(g.scheme)
	g.strictCodecs = serializer.NewCodecFactory(g.scheme, serializer.EnableStrict)
	g.json = serializerFor(g.codecs, runtime.ContentTypeJSON)
	g.protobuf = serializerFor(g.codecs, runtime.ContentTypeProtobuf)
	g.decoders = []namedDecoder{
		{"universal", g.codecs.UniversalDeserializer()},
		{"universal strict", g.strictCodecs.UniversalDeserializer()},
		{"json", serializerFor(g.codecs, runtime.ContentTypeJSON).Serializer},
		{"json strict", serializerFor(g.codecs, runtime.ContentTypeJSON).StrictSerializer},
		{"yaml", serializerFor(g.codecs, runtime.ContentTypeYAML).Serializer},
		{"yaml strict", serializerFor(g.codecs, runtime.ContentTypeYAML).StrictSerializer},
		{"protobuf", g.protobuf.Serializer},
	}
	for _, k := range kinds {
		for _, gv := range versions {
			g.targets = append(g.targets, gv.WithKind(k.Name))
		}
	}
	return g
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

func (g *Group) targetOf(sel uint8) (schema.GroupVersionKind, Kind) {
	gvk := g.targets[int(sel)%len(g.targets)]
	return gvk, g.kindOf(gvk.Kind)
}

// kindOf returns the Kind of kind; ok is false for a kind the group does not fuzz (the meta
// types every group version carries: WatchEvent, ListOptions, ...).
func (g *Group) kindOf(kind string) Kind {
	for _, k := range g.kinds {
		if k.Name == kind {
			return k
		}
	}
	return Kind{}
}

// isFuzzKind tells whether gvk is one of the kinds under test.
func (g *Group) isFuzzKind(gvk schema.GroupVersionKind) bool {
	return gvk.Group == g.name && gvk.Version != runtime.APIVersionInternal && g.kindOf(gvk.Kind).Name != ""
}

// addSeeds adds the examples of the group (as YAML and as JSON), then extra bodies, once for each
// target.
func (g *Group) addSeeds(f *testing.F, extra ...string) {
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
		if !strings.Contains(string(data), "apiVersion: "+g.name+"/") {
			continue
		}
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		bodies = append(bodies, data, js, g.protobufOf(f, js))
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
	for i := range g.targets {
		f.Add(uint8(i), []byte(`{}`))
	}
}

// protobufOf encodes a JSON example as protobuf in its own version, so that the fuzzer starts from
// well-formed protobuf bodies too.
func (g *Group) protobufOf(f *testing.F, js []byte) []byte {
	f.Helper()
	obj, gvk, err := g.codecs.UniversalDeserializer().Decode(js, nil, nil)
	if err != nil {
		f.Fatalf("decoding an example: %v", err)
	}
	encoded, err := runtime.Encode(g.codecs.EncoderForVersion(g.protobuf.Serializer, gvk.GroupVersion()), obj)
	if err != nil {
		f.Fatalf("encoding an example %s as protobuf: %v", gvk, err)
	}
	return encoded
}

// FuzzDecode runs with the examples of the group (as YAML, JSON and protobuf) and extra as seeds.
// It decodes arbitrary bytes with every decoder of the server's codecs: JSON and YAML, leniently
// and strictly, and protobuf. No input may panic. An object of the group that decodes must survive
// a round trip: defaulted, encoded in its version and decoded again (strictly, since it is our own
// output), it is semantically equal to what was decoded. What JSON or YAML gave goes through JSON
// and through protobuf; what protobuf gave goes through protobuf (protobuf carries bytes that
// JSON would rewrite, such as strings that are not UTF-8).
func (g *Group) FuzzDecode(f *testing.F, extra ...string) {
	g.addSeeds(f, extra...)
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		defaultGVK, _ := g.targetOf(sel)
		for _, d := range g.decoders {
			gvk := defaultGVK
			obj, actual, err := d.Decode(data, &gvk, nil)
			if err != nil && !runtime.IsStrictDecodingError(err) {
				continue
			}
			// A strict decoding error still returns the whole object, which must round-trip too.
			if obj == nil || actual == nil || !g.isFuzzKind(*actual) {
				continue
			}
			// The universal decoder takes protobuf bodies too.
			if d.name != "protobuf" && !g.isProtobuf(data) {
				g.checkJSONRoundTrip(t, d.name, obj.DeepCopyObject(), *actual)
			}
			g.checkProtobufRoundTrip(t, d.name, obj, *actual)
		}
	})
}

// isProtobuf says whether data is a protobuf body (it starts with the protobuf envelope's magic).
func (g *Group) isProtobuf(data []byte) bool {
	r, ok := g.protobuf.Serializer.(recognizer.RecognizingDecoder)
	if !ok {
		return false
	}
	yes, _, _ := r.RecognizesData(data)
	return yes
}

// checkJSONRoundTrip defaults obj, encodes it as JSON in the version of gvk, decodes the result
// and fails unless that gives the same object. An object whose JSON does not decode again (a
// metav1.Time out of the years 0-9999 once in UTC is written in a form RFC 3339 parsing refuses),
// or decodes to something else (a zero time in a pointer field comes back unset), is tolerated
// only when validation refuses it: otherwise the server stores it, and reads give something else
// or fail.
func (g *Group) checkJSONRoundTrip(t *testing.T, decoder string, obj runtime.Object, gvk schema.GroupVersionKind) {
	t.Helper()
	g.scheme.Default(obj)
	want := obj.DeepCopyObject()
	encoded, err := runtime.Encode(g.codecs.EncoderForVersion(g.json.Serializer, gvk.GroupVersion()), obj)
	if err != nil {
		t.Fatalf("%s: a decoded %s does not encode: %v\nobject: %s", decoder, gvk, err, dump.Pretty(want))
	}
	got, gotGVK, err := g.strictCodecs.UniversalDeserializer().Decode(encoded, nil, nil)
	if err != nil {
		if errs := g.validateCreate(t, want, gvk); len(errs) == 0 {
			t.Fatalf("%s: a valid %s, defaulted and encoded as JSON, does not decode again: %v\nencoded: %s", decoder, gvk, err, encoded)
		}
		return
	}
	if *gotGVK != gvk {
		t.Fatalf("%s: a %s re-decodes as %s", decoder, gvk, gotGVK)
	}
	g.scheme.Default(got)
	normalizeForJSON(want)
	normalizeForJSON(got)
	if !apiequality.Semantic.DeepEqual(want, got) {
		if errs := g.validateCreate(t, want, gvk); len(errs) > 0 {
			return // never stored: validation refuses what JSON cannot carry (a zero shutdownTime)
		}
		t.Fatalf("%s: a valid %s changes in a JSON round trip:\n%s\nencoded: %s", decoder, gvk, describeDiff(want, got), encoded)
	}
}

// checkProtobufRoundTrip is checkJSONRoundTrip through protobuf.
func (g *Group) checkProtobufRoundTrip(t *testing.T, decoder string, obj runtime.Object, gvk schema.GroupVersionKind) {
	t.Helper()
	g.scheme.Default(obj)
	want := obj.DeepCopyObject()
	encoded, err := runtime.Encode(g.codecs.EncoderForVersion(g.protobuf.Serializer, gvk.GroupVersion()), obj)
	if err != nil {
		t.Fatalf("%s: a decoded %s does not encode as protobuf: %v\nobject: %s", decoder, gvk, err, dump.Pretty(want))
	}
	got, gotGVK, err := g.strictCodecs.UniversalDeserializer().Decode(encoded, nil, nil)
	if err != nil {
		if errs := g.validateCreate(t, want, gvk); len(errs) == 0 {
			t.Fatalf("%s: a valid %s, defaulted and encoded as protobuf, does not decode again: %v\nencoded: %q", decoder, gvk, err, encoded)
		}
		return
	}
	if *gotGVK != gvk {
		t.Fatalf("%s: a %s re-decodes from protobuf as %s", decoder, gvk, gotGVK)
	}
	g.scheme.Default(got)
	normalizeForJSON(want)
	normalizeForJSON(got)
	if !apiequality.Semantic.DeepEqual(want, got) {
		if errs := g.validateCreate(t, want, gvk); len(errs) > 0 {
			return // never stored
		}
		t.Fatalf("%s: a valid %s changes in a protobuf round trip:\n%s", decoder, gvk, describeDiff(want, got))
	}
}

// validateCreate converts a defaulted versioned object of gvk to the hub and returns what the
// create validation of its kind (of each item for a list) says about it.
func (g *Group) validateCreate(t *testing.T, versioned runtime.Object, gvk schema.GroupVersionKind) field.ErrorList {
	t.Helper()
	internal := g.convert(t, versioned.DeepCopyObject(), gvk.GroupKind().WithVersion(runtime.APIVersionInternal))
	setRequestNamespace(internal)
	k := g.kindOf(gvk.Kind)
	if k.Validate != nil {
		return k.Validate(internal)
	}
	item := g.kindOf(strings.TrimSuffix(k.Name, "List"))
	var errs field.ErrorList
	for _, it := range itemsOf(internal) {
		errs = append(errs, item.Validate(it)...)
	}
	return errs
}

// checkStorable fails unless a hub object that validation accepted survives the way to storage
// and back: converted to the storage version (v1beta1), encoded as protobuf (what the server
// stores) and as JSON (what it serves), each decoded strictly and converted back, it is unchanged
// (but for what JSON does not carry). The strings of an object from a protobuf body may be any
// bytes, which JSON writes as U+FFFD, as it does for Kubernetes' own kinds: such an object must
// still come back from JSON, but need not come back equal.
func (g *Group) checkStorable(t *testing.T, internal runtime.Object, fromProtobuf bool) {
	t.Helper()
	kind := reflect.TypeOf(internal).Elem().Name()
	storage := g.storage.WithKind(kind)
	stored := g.convert(t, internal, storage)
	for _, s := range []struct {
		name       string
		serializer runtime.Serializer
		mustEqual  bool
	}{{"protobuf", g.protobuf.Serializer, true}, {"JSON", g.json.Serializer, !fromProtobuf}} {
		encoded, err := runtime.Encode(g.codecs.EncoderForVersion(s.serializer, storage.GroupVersion()), stored)
		if err != nil {
			t.Fatalf("a valid %s does not encode as %s: %v\nobject: %s", kind, s.name, err, dump.Pretty(internal))
		}
		decoded, _, err := g.strictCodecs.UniversalDeserializer().Decode(encoded, nil, nil)
		if err != nil {
			t.Fatalf("a valid %s encoded as %s does not decode again (every read of it would fail): %v\nencoded: %q", kind, s.name, err, encoded)
		}
		if !s.mustEqual {
			continue
		}
		back := g.convert(t, decoded, storage.GroupKind().WithVersion(runtime.APIVersionInternal))
		want := internal.DeepCopyObject()
		normalizeForJSON(want)
		normalizeForJSON(back)
		if !apiequality.Semantic.DeepEqual(want, back) {
			t.Fatalf("a valid %s changes on its way through %s and back:\n%s\nencoded: %q", kind, s.name, describeDiff(want, back), encoded)
		}
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

// FuzzConvert runs with the examples of the group and extra as seeds. It checks the round trip between the versions: an object of one version, converted to
// the internal hub, to the other version, back to the hub and to its own version, is unchanged,
// and the hub objects on the way are equal. The objects come from the input both ways: filled
// with randfill driven by the bytes (as the version's type and as the hub type), and decoded from
// them when they are a body of the group.
func (g *Group) FuzzConvert(f *testing.F, extra ...string) {
	g.addSeeds(f, extra...)
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		gvk, _ := g.targetOf(sel)
		other := g.otherVersion(gvk)

		// An object of the version, filled from the bytes.
		versioned, err := g.scheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		g.filler(data).Fill(versioned)
		g.checkVersionRoundTrip(t, "filled "+gvk.Version, versioned, gvk, other)

		// A hub object, filled from the bytes: hub -> version -> hub -> other version -> hub.
		internal, err := g.scheme.New(gvk.GroupKind().WithVersion(runtime.APIVersionInternal))
		if err != nil {
			t.Fatal(err)
		}
		g.filler(data).Fill(internal)
		g.checkHubRoundTrip(t, internal, gvk, other)

		// The bytes as a body, if they are one.
		want := gvk
		obj, actual, err := g.codecs.UniversalDeserializer().Decode(data, &want, nil)
		if err == nil && actual != nil && g.isFuzzKind(*actual) {
			g.checkVersionRoundTrip(t, "decoded", obj, *actual, g.otherVersion(*actual))
		}
	})
}

// filler is a randfill.Filler reading its randomness from data.
func (g *Group) filler(data []byte) interface{ Fill(any) } {
	return apitestingfuzzer.FuzzerFor(g.funcs, bytesource.New(data), g.codecs)
}

func (g *Group) otherVersion(gvk schema.GroupVersionKind) schema.GroupVersionKind {
	for _, gv := range g.versions {
		if gv.Version != gvk.Version {
			return gv.WithKind(gvk.Kind)
		}
	}
	panic("one version only")
}

// convert converts in to a new object of gvk, failing the test on error.
func (g *Group) convert(t *testing.T, in runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	t.Helper()
	out, err := g.scheme.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.scheme.Convert(in, out, nil); err != nil {
		t.Fatalf("converting %T to %s: %v\nobject: %s", in, gvk, err, dump.Pretty(in))
	}
	return out
}

// checkVersionRoundTrip converts obj (of gvk) to the hub, to other, to the hub and back to gvk.
func (g *Group) checkVersionRoundTrip(t *testing.T, what string, obj runtime.Object, gvk, other schema.GroupVersionKind) {
	t.Helper()
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	// The server converts only defaulted objects (decoding defaults them): an unset optional field
	// whose hub type has no "unset" (a pool's replicas) comes back as its default.
	g.scheme.Default(obj)
	orig := obj.DeepCopyObject()
	hub := gvk.GroupKind().WithVersion(runtime.APIVersionInternal)
	internal1 := g.convert(t, obj, hub)
	if !apiequality.Semantic.DeepEqual(obj, orig) {
		t.Fatalf("%s: converting %s to the hub changed the source:\n%s", what, gvk, describeDiff(orig, obj))
	}
	internal2 := g.convert(t, g.convert(t, internal1, other), hub)
	if !apiequality.Semantic.DeepEqual(internal1, internal2) {
		t.Fatalf("%s: %s -> hub -> %s -> hub changes the hub object:\n%s", what, gvk, other.Version, describeDiff(internal1, internal2))
	}
	back := g.convert(t, internal2, gvk)
	back.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	if !apiequality.Semantic.DeepEqual(orig, back) {
		t.Fatalf("%s: %s -> hub -> %s -> hub -> %s is not the original:\n%s", what, gvk, other.Version, gvk.Version, describeDiff(orig, back))
	}
}

// checkHubRoundTrip converts a hub object to gvk's version and back, then to other's and back.
func (g *Group) checkHubRoundTrip(t *testing.T, internal runtime.Object, gvk, other schema.GroupVersionKind) {
	t.Helper()
	internal.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	hub := gvk.GroupKind().WithVersion(runtime.APIVersionInternal)
	for _, v := range []schema.GroupVersionKind{gvk, other} {
		back := g.convert(t, g.convert(t, internal, v), hub)
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

// FuzzValidate runs with the examples of the group and extra as seeds. It validates hub objects made from the input: the bytes decoded as a body (defaulted
// and converted, as the server does before validation) and a hub object filled from the bytes. The
// validation of create, of an update to the same object and between the two, and of a status
// update must not panic, must leave the objects alone, and every error must name a field and
// have a known type. An object the create validation accepts must survive storage (see
// checkStorable).
func (g *Group) FuzzValidate(f *testing.F, extra ...string) {
	g.addSeeds(f, extra...)
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		gvk, _ := g.targetOf(sel)
		var objs []runtime.Object
		// The object decoded from a protobuf body, whose strings JSON may rewrite.
		var fromProtobuf runtime.Object

		want := gvk
		if obj, actual, err := g.codecs.UniversalDeserializer().Decode(data, &want, nil); err == nil && actual != nil && g.isFuzzKind(*actual) {
			g.scheme.Default(obj)
			internal := g.convert(t, obj, actual.GroupKind().WithVersion(runtime.APIVersionInternal))
			setRequestNamespace(internal)
			objs = append(objs, internal)
			if g.isProtobuf(data) {
				fromProtobuf = internal
			}
		}

		internal, err := g.scheme.New(gvk.GroupKind().WithVersion(runtime.APIVersionInternal))
		if err != nil {
			t.Fatal(err)
		}
		g.filler(data).Fill(internal)
		objs = append(objs, internal)

		for _, obj := range objs {
			k := g.kindOf(reflect.TypeOf(obj).Elem().Name())
			protobufBody := obj == fromProtobuf
			g.validateAll(t, k, obj, obj, protobufBody)
			for _, old := range objs {
				if reflect.TypeOf(old) == reflect.TypeOf(obj) && old != obj {
					g.validateAll(t, k, obj, old, protobufBody)
				}
			}
		}
	})
}

// validateAll runs every validation of k on obj (and old for updates) and checks the errors.
// fromProtobuf says obj was decoded from a protobuf body (see checkStorable).
func (g *Group) validateAll(t *testing.T, k Kind, obj, old runtime.Object, fromProtobuf bool) {
	t.Helper()
	if k.Validate == nil {
		// A list: validate its items.
		item := g.kindOf(strings.TrimSuffix(k.Name, "List"))
		for _, it := range itemsOf(obj) {
			g.validateAll(t, item, it, it, fromProtobuf)
		}
		return
	}
	before, beforeOld := obj.DeepCopyObject(), old.DeepCopyObject()
	errs := k.Validate(obj)
	checkErrors(t, "create", errs)
	checkErrors(t, "update", k.ValidateUpdate(obj, old))
	if k.ValidateStatus != nil {
		checkErrors(t, "status update", k.ValidateStatus(obj, old))
	}
	if !apiequality.Semantic.DeepEqual(before, obj) || !apiequality.Semantic.DeepEqual(beforeOld, old) {
		t.Fatalf("validation of a %s changed the object:\n%s%s", k.Name, describeDiff(before, obj), describeDiff(beforeOld, old))
	}
	if len(errs) == 0 {
		g.checkStorable(t, obj, fromProtobuf)
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
