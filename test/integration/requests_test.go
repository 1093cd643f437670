// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	agentsv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/agents/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/apiserver"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned"
	"github.com/sandbox-apiserver/sandbox-apiserver/pkg/generated/clientset/versioned/scheme"
)

// warningRecorder keeps the Warning headers of the responses of a client.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (r *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

func (r *warningRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.warnings...)
}

// sandboxJSON is a valid Sandbox as a request body, with extra text inserted in its spec.
func sandboxJSON(name, extraSpec string) []byte {
	return []byte(`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"` + name + `"},` +
		`"spec":{` + extraSpec + `"podTemplate":{"spec":{"containers":[{"name":"agent","image":"busybox"}]}}}}`)
}

// postSandbox creates a Sandbox from a raw body through the REST client of client, with the given
// create options, and returns the result and the HTTP status code.
func postSandbox(ctx context.Context, client rest.Interface, ns string, body []byte, opts *metav1.CreateOptions) (rest.Result, int) {
	req := client.Post().Namespace(ns).Resource("sandboxes").SetHeader("Content-Type", "application/json").Body(body)
	if opts != nil {
		req = req.VersionedParams(opts, scheme.ParameterCodec)
	}
	res := req.Do(ctx)
	var code int
	res.StatusCode(&code)
	return res, code
}

// TestRequestBodies checks how the server answers bodies that are not a valid object: malformed
// JSON, unknown fields under each field validation mode, and a body over the size limit.
func TestRequestBodies(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "requests"
	rc := s.Client.AgentsV1beta1().RESTClient()

	t.Run("malformed JSON is 400", func(t *testing.T) {
		ctx := testContext(t)
		res, code := postSandbox(ctx, rc, ns, []byte(`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"broken"`), nil)
		if code != http.StatusBadRequest || !apierrors.IsBadRequest(res.Error()) {
			t.Fatalf("want 400 BadRequest, got %d: %v", code, res.Error())
		}
		if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "broken", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("malformed body stored something: %v", err)
		}
	})

	t.Run("a body of the wrong type is 400", func(t *testing.T) {
		ctx := testContext(t)
		_, code := postSandbox(ctx, rc, ns, []byte(`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"typed"},"spec":{"replicas":"one"}}`), nil)
		if code != http.StatusBadRequest {
			t.Fatalf("string replicas: want 400, got %d", code)
		}
	})

	t.Run("unknown field is dropped with a warning by default", func(t *testing.T) {
		ctx := testContext(t)
		rec := &warningRecorder{}
		cfg := rest.CopyConfig(s.Config)
		cfg.WarningHandler = rec
		client, err := versioned.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, code := postSandbox(ctx, client.AgentsV1beta1().RESTClient(), ns, sandboxJSON("lenient", `"colour":"blue",`), nil)
		if err := res.Error(); err != nil || code != http.StatusCreated {
			t.Fatalf("create with an unknown field: want 201, got %d: %v", code, err)
		}
		warnings := rec.all()
		if len(warnings) == 0 || !strings.Contains(strings.Join(warnings, "\n"), `unknown field "spec.colour"`) {
			t.Errorf("warnings %q, want one about unknown field \"spec.colour\"", warnings)
		}
		raw, err := client.AgentsV1beta1().RESTClient().Get().Namespace(ns).Resource("sandboxes").Name("lenient").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "colour") {
			t.Errorf("the unknown field was stored: %s", raw)
		}
	})

	t.Run("unknown field is refused under Strict", func(t *testing.T) {
		ctx := testContext(t)
		res, code := postSandbox(ctx, rc, ns, sandboxJSON("strict", `"colour":"blue",`), &metav1.CreateOptions{FieldValidation: "Strict"})
		err := res.Error()
		if code != http.StatusBadRequest || !apierrors.IsBadRequest(err) {
			t.Fatalf("want 400 BadRequest, got %d: %v", code, err)
		}
		if !strings.Contains(err.Error(), `unknown field "spec.colour"`) {
			t.Errorf("the error does not name the unknown field: %v", err)
		}
		if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "strict", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("refused body stored something: %v", err)
		}
	})

	t.Run("duplicate field is refused under Strict", func(t *testing.T) {
		ctx := testContext(t)
		res, code := postSandbox(ctx, rc, ns, sandboxJSON("duplicate", `"replicas":0,"replicas":1,`), &metav1.CreateOptions{FieldValidation: "Strict"})
		if code != http.StatusBadRequest || !strings.Contains(res.Error().Error(), "duplicate field") {
			t.Fatalf("want 400 naming the duplicate field, got %d: %v", code, res.Error())
		}
	})

	t.Run("unknown field is accepted silently under Ignore", func(t *testing.T) {
		ctx := testContext(t)
		rec := &warningRecorder{}
		cfg := rest.CopyConfig(s.Config)
		cfg.WarningHandler = rec
		client, err := versioned.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, code := postSandbox(ctx, client.AgentsV1beta1().RESTClient(), ns, sandboxJSON("ignored", `"colour":"blue",`), &metav1.CreateOptions{FieldValidation: "Ignore"})
		if code != http.StatusCreated {
			t.Fatalf("want 201, got %d: %v", code, res.Error())
		}
		if w := rec.all(); len(w) != 0 {
			t.Errorf("warnings under Ignore: %q", w)
		}
	})

	t.Run("a body over the size limit is 413", func(t *testing.T) {
		ctx := testContext(t)
		// 3.5 MiB in one annotation: over the server's 3 MiB request limit, so the body is refused
		// before it is decoded.
		big := strings.Repeat("x", 3*1024*1024+512*1024)
		body := []byte(`{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"huge","annotations":{"big":"` + big + `"}},` +
			`"spec":{"podTemplate":{"spec":{"containers":[{"name":"agent","image":"busybox"}]}}}}`)
		res, code := postSandbox(ctx, rc, ns, body, nil)
		if code != http.StatusRequestEntityTooLarge || !apierrors.IsRequestEntityTooLargeError(res.Error()) {
			t.Fatalf("want 413 RequestEntityTooLarge, got %d: %v", code, res.Error())
		}
		if _, err := s.Client.AgentsV1beta1().Sandboxes(ns).Get(ctx, "huge", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("oversized body stored something: %v", err)
		}
	})
}

// TestContentTypes checks the media types of request and response bodies: JSON and YAML both
// ways, and protobuf to the clients that prefer it.
func TestContentTypes(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const ns = "content"
	ctx := testContext(t)
	rc := s.Client.AgentsV1beta1().RESTClient()

	yamlBody := []byte("apiVersion: agents.x-k8s.io/v1beta1\nkind: Sandbox\nmetadata:\n  name: from-yaml\nspec:\n" +
		"  podTemplate:\n    spec:\n      containers:\n      - name: agent\n        image: busybox\n")
	res := rc.Post().Namespace(ns).Resource("sandboxes").SetHeader("Content-Type", "application/yaml").Body(yamlBody).Do(ctx)
	var code int
	if res.StatusCode(&code); code != http.StatusCreated {
		t.Fatalf("create from YAML: want 201, got %d: %v", code, res.Error())
	}

	get := func(t *testing.T, accept string, list bool) (int, string, []byte) {
		t.Helper()
		req := rc.Get().Namespace(ns).Resource("sandboxes").SetHeader("Accept", accept)
		if !list {
			req = req.Name("from-yaml")
		}
		res := req.Do(ctx)
		var code int
		var contentType string
		res.StatusCode(&code).ContentType(&contentType)
		raw, _ := res.Raw()
		return code, contentType, raw
	}

	t.Run("YAML", func(t *testing.T) {
		code, contentType, raw := get(t, "application/yaml", false)
		if code != http.StatusOK || contentType != "application/yaml" || !strings.Contains(string(raw), "kind: Sandbox") {
			t.Errorf("GET as YAML: %d %s %.100q", code, contentType, raw)
		}
	})

	t.Run("metadata only, as garbage collectors read it", func(t *testing.T) {
		accept := "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
			"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
		if code, contentType, _ := get(t, accept, true); code != http.StatusOK || contentType != "application/vnd.kubernetes.protobuf" {
			t.Errorf("list as PartialObjectMetadataList: %d %s", code, contentType)
		}
	})

	// Protobuf is served for our kinds, to clients that ask for it first; JSON stays the answer to
	// those that do not (kubectl).
	decodes := func(t *testing.T, raw []byte, wantKind string) {
		t.Helper()
		obj, gvk, err := apiserver.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
		if err != nil || gvk.Kind != wantKind {
			t.Errorf("decoding the protobuf answer: %v (kind %q, want %q)", err, gvk.Kind, wantKind)
			return
		}
		if sb, ok := obj.(*agentsv1beta1.Sandbox); ok && sb.Name != "from-yaml" {
			t.Errorf("protobuf Sandbox is named %q, want from-yaml", sb.Name)
		}
	}
	t.Run("protobuf preferred, JSON accepted", func(t *testing.T) {
		for _, list := range []bool{false, true} {
			code, contentType, raw := get(t, "application/vnd.kubernetes.protobuf,application/json", list)
			if code != http.StatusOK || contentType != "application/vnd.kubernetes.protobuf" {
				t.Fatalf("list=%v: %d %s %.100q", list, code, contentType, raw)
			}
			if !bytes.HasPrefix(raw, []byte("k8s\x00")) {
				t.Errorf("list=%v: the body does not start with protobuf's k8s\\0 prefix: %.20q", list, raw)
			}
			wantKind := "Sandbox"
			if list {
				wantKind = "SandboxList"
			}
			decodes(t, raw, wantKind)
		}
	})
	t.Run("JSON by default", func(t *testing.T) {
		code, contentType, raw := get(t, "application/json, */*", false)
		if code != http.StatusOK || contentType != "application/json" || !bytes.HasPrefix(raw, []byte("{")) {
			t.Errorf("GET with Accept: application/json, */*: %d %s %.100q", code, contentType, raw)
		}
	})
}
