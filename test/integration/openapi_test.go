// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// openAPIV3 is the part of an OpenAPI v3 document the test reads.
type openAPIV3 struct {
	OpenAPI    string                     `json:"openapi"`
	Paths      map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]schema `json:"schemas"`
	} `json:"components"`
}

type schema struct {
	Description string            `json:"description"`
	Properties  map[string]schema `json:"properties"`
	Required    []string          `json:"required"`
	GVK         []struct {
		Group, Version, Kind string
	} `json:"x-kubernetes-group-version-kind"`
}

// TestOpenAPI checks that both OpenAPI versions are served and carry the kinds with their
// documentation, which kubectl explain and server-side apply rely on.
func TestOpenAPI(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	rc := s.Client.Discovery().RESTClient()

	t.Run("v2", func(t *testing.T) {
		raw, err := rc.Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(testContext(t))
		if err != nil {
			t.Fatalf("GET /openapi/v2: %v", err)
		}
		var doc struct {
			Swagger     string            `json:"swagger"`
			Definitions map[string]schema `json:"definitions"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Swagger != "2.0" {
			t.Errorf("swagger %q, want 2.0", doc.Swagger)
		}
		for _, name := range []string{
			"io.x-k8s.agents.v1beta1.Sandbox", "io.x-k8s.agents.v1alpha1.Sandbox",
			"io.x-k8s.agents.extensions.v1beta1.SandboxClaim", "io.x-k8s.agents.extensions.v1beta1.SandboxTemplate",
			"io.x-k8s.agents.extensions.v1beta1.SandboxWarmPool",
		} {
			def, ok := doc.Definitions[name]
			if !ok {
				t.Errorf("/openapi/v2 has no definition %s", name)
				continue
			}
			if len(def.GVK) == 0 {
				t.Errorf("%s has no x-kubernetes-group-version-kind", name)
			}
		}
	})

	t.Run("v3 discovery", func(t *testing.T) {
		raw, err := rc.Get().AbsPath("/openapi/v3").DoRaw(testContext(t))
		if err != nil {
			t.Fatalf("GET /openapi/v3: %v", err)
		}
		var root struct {
			Paths map[string]struct {
				URL string `json:"serverRelativeURL"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(raw, &root); err != nil {
			t.Fatal(err)
		}
		for _, gv := range []string{
			"apis/agents.x-k8s.io/v1beta1", "apis/agents.x-k8s.io/v1alpha1",
			"apis/extensions.agents.x-k8s.io/v1beta1", "apis/extensions.agents.x-k8s.io/v1alpha1",
		} {
			if root.Paths[gv].URL == "" {
				t.Errorf("/openapi/v3 does not list %s: %s", gv, raw)
			}
		}
	})

	// v3 fetches the document of a group version and checks a kind and one of its documented
	// fields.
	v3 := func(t *testing.T, gv string) *openAPIV3 {
		t.Helper()
		raw, err := rc.Get().AbsPath("/openapi/v3/" + gv).DoRaw(testContext(t))
		if err != nil {
			t.Fatalf("GET /openapi/v3/%s: %v", gv, err)
		}
		var doc openAPIV3
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(doc.OpenAPI, "3.") {
			t.Errorf("/openapi/v3/%s: openapi %q", gv, doc.OpenAPI)
		}
		return &doc
	}

	t.Run("v3 agents.x-k8s.io/v1beta1", func(t *testing.T) {
		doc := v3(t, "apis/agents.x-k8s.io/v1beta1")
		sandbox, ok := doc.Components.Schemas["io.x-k8s.agents.v1beta1.Sandbox"]
		if !ok {
			t.Fatalf("no Sandbox schema among %d schemas", len(doc.Components.Schemas))
		}
		if !strings.Contains(sandbox.Description, "controller-managed Pod meant to host an agent workload") {
			t.Errorf("Sandbox description %q", sandbox.Description)
		}
		if len(sandbox.GVK) != 1 || sandbox.GVK[0].Group != "agents.x-k8s.io" || sandbox.GVK[0].Version != "v1beta1" || sandbox.GVK[0].Kind != "Sandbox" {
			t.Errorf("Sandbox x-kubernetes-group-version-kind %+v", sandbox.GVK)
		}
		spec := doc.Components.Schemas["io.x-k8s.agents.v1beta1.SandboxSpec"]
		if d := spec.Properties["podTemplate"].Description; !strings.Contains(d, "podTemplate describes the Pod the controller runs for this Sandbox") {
			t.Errorf("spec.podTemplate description %q", d)
		}
		if !slices.Contains(spec.Required, "podTemplate") {
			t.Errorf("spec.podTemplate is not required: %v", spec.Required)
		}
		if d := spec.Properties["replicas"].Description; !strings.Contains(d, "scale subresource") {
			t.Errorf("spec.replicas description %q", d)
		}
		for _, p := range []string{
			"/apis/agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxes/{name}",
			"/apis/agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxes/{name}/status",
			"/apis/agents.x-k8s.io/v1beta1/namespaces/{namespace}/sandboxes/{name}/scale",
		} {
			if _, ok := doc.Paths[p]; !ok {
				t.Errorf("no path %s", p)
			}
		}
	})

	t.Run("v3 extensions.agents.x-k8s.io/v1alpha1", func(t *testing.T) {
		doc := v3(t, "apis/extensions.agents.x-k8s.io/v1alpha1")
		for _, kind := range []string{"SandboxClaim", "SandboxTemplate", "SandboxWarmPool"} {
			if _, ok := doc.Components.Schemas["io.x-k8s.agents.extensions.v1alpha1."+kind]; !ok {
				t.Errorf("no %s schema", kind)
			}
		}
		spec := doc.Components.Schemas["io.x-k8s.agents.extensions.v1alpha1.SandboxClaimSpec"]
		if d := spec.Properties["warmpool"].Description; !strings.Contains(d, "which warm pools the claim may adopt a sandbox from") {
			t.Errorf("claim spec.warmpool description %q", d)
		}
		if _, ok := doc.Paths["/apis/extensions.agents.x-k8s.io/v1alpha1/namespaces/{namespace}/sandboxwarmpools/{name}/scale"]; !ok {
			t.Errorf("no scale path for sandboxwarmpools")
		}
		if _, ok := doc.Paths["/apis/extensions.agents.x-k8s.io/v1alpha1/namespaces/{namespace}/sandboxtemplates/{name}/status"]; ok {
			t.Errorf("sandboxtemplates have a status path")
		}
	})
}

// TestDiscovery checks the groups, versions and resources the server announces, which kubectl
// reads to map names (sandbox, swp, the agents category) to resources.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	disc := s.Client.Discovery()

	groups, err := disc.ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	preferred := map[string]string{}
	versions := map[string][]string{}
	for _, g := range groups.Groups {
		preferred[g.Name] = g.PreferredVersion.Version
		for _, v := range g.Versions {
			versions[g.Name] = append(versions[g.Name], v.Version)
		}
	}
	for _, g := range []string{"agents.x-k8s.io", "extensions.agents.x-k8s.io"} {
		if preferred[g] != "v1beta1" {
			t.Errorf("%s: preferred version %q, want v1beta1", g, preferred[g])
		}
		if fmt.Sprint(versions[g]) != "[v1beta1 v1alpha1]" {
			t.Errorf("%s: versions %v, want [v1beta1 v1alpha1]", g, versions[g])
		}
	}

	want := map[string]map[string]struct {
		kind       string
		shortNames []string
		verbs      []string
	}{
		"agents.x-k8s.io/v1beta1": {
			"sandboxes":        {"Sandbox", []string{"sandbox"}, nil},
			"sandboxes/status": {"Sandbox", nil, []string{"get", "patch", "update"}},
			"sandboxes/scale":  {"Scale", nil, []string{"get", "patch", "update"}},
			"sandboxes/proxy":  {"SandboxProxyOptions", nil, []string{"create", "delete", "get", "patch", "update"}},
			// The streaming subresources, as their pods/* counterparts.
			"sandboxes/exec":        {"PodExecOptions", nil, []string{"create", "get"}},
			"sandboxes/attach":      {"PodAttachOptions", nil, []string{"create", "get"}},
			"sandboxes/portforward": {"PodPortForwardOptions", nil, []string{"create", "get"}},
			"sandboxes/log":         {"PodLogOptions", nil, []string{"get"}},
		},
		"extensions.agents.x-k8s.io/v1beta1": {
			"sandboxclaims":             {"SandboxClaim", []string{"sandboxclaim"}, nil},
			"sandboxclaims/status":      {"SandboxClaim", nil, []string{"get", "patch", "update"}},
			"sandboxclaims/proxy":       {"SandboxClaimProxyOptions", nil, []string{"create", "delete", "get", "patch", "update"}},
			"sandboxclaims/exec":        {"PodExecOptions", nil, []string{"create", "get"}},
			"sandboxclaims/attach":      {"PodAttachOptions", nil, []string{"create", "get"}},
			"sandboxclaims/portforward": {"PodPortForwardOptions", nil, []string{"create", "get"}},
			"sandboxclaims/log":         {"PodLogOptions", nil, []string{"get"}},
			"sandboxtemplates":          {"SandboxTemplate", []string{"sandboxtemplate"}, nil},
			"sandboxwarmpools":          {"SandboxWarmPool", []string{"swp"}, nil},
			"sandboxwarmpools/status":   {"SandboxWarmPool", nil, []string{"get", "patch", "update"}},
			"sandboxwarmpools/scale":    {"Scale", nil, []string{"get", "patch", "update"}},
		},
	}
	allVerbs := []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	for gv, resources := range want {
		list, err := disc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("%s: %v", gv, err)
		}
		got := map[string]metav1.APIResource{}
		for _, r := range list.APIResources {
			got[r.Name] = r
		}
		if len(got) != len(resources) {
			var names []string
			for n := range got {
				names = append(names, n)
			}
			t.Errorf("%s serves %v, want %d resources", gv, names, len(resources))
		}
		for name, w := range resources {
			r, ok := got[name]
			if !ok {
				t.Errorf("%s does not serve %s", gv, name)
				continue
			}
			if r.Kind != w.kind || !r.Namespaced {
				t.Errorf("%s %s: kind %s, namespaced %v", gv, name, r.Kind, r.Namespaced)
			}
			verbs := w.verbs
			if verbs == nil {
				verbs = allVerbs
				if !slices.Contains(r.Categories, "agents") {
					t.Errorf("%s %s: categories %v, want agents", gv, name, r.Categories)
				}
				if fmt.Sprint(r.ShortNames) != fmt.Sprint(w.shortNames) {
					t.Errorf("%s %s: short names %v, want %v", gv, name, r.ShortNames, w.shortNames)
				}
			}
			got := slices.Clone([]string(r.Verbs))
			slices.Sort(got)
			if fmt.Sprint(got) != fmt.Sprint(verbs) {
				t.Errorf("%s %s: verbs %v, want %v", gv, name, got, verbs)
			}
		}
	}
}
