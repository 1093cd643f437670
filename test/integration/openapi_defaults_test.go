// Copyright The sandbox-apiserver Authors.
// SPDX-License-Identifier: Apache-2.0

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	extv1beta1 "github.com/sandbox-apiserver/sandbox-apiserver/pkg/apis/extensions/v1beta1"
	"github.com/sandbox-apiserver/sandbox-apiserver/test/integration/framework"
)

// boundedSchema is what the test reads of a property: its default and numeric bounds.
type boundedSchema struct {
	Default json.RawMessage `json:"default"`
	Minimum *float64        `json:"minimum"`
	Maximum *float64        `json:"maximum"`
}

// TestOpenAPIDefaultsAndBounds: the published OpenAPI carries the defaults and bounds of the
// fields (so kubectl explain shows them), and each default is the value the server stores for an
// object that leaves the field unset.
func TestOpenAPIDefaultsAndBounds(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ctx := testContext(t)
	const ns = "openapi-defaults"

	stored := map[string]map[string]any{}
	for kind, create := range map[string]func() (any, error){
		"Sandbox": func() (any, error) {
			return s.Client.AgentsV1beta1().Sandboxes(ns).Create(ctx, newSandbox(ns, "d"), metav1.CreateOptions{})
		},
		"SandboxClaim": func() (any, error) {
			c := newClaim(ns, "d", "t")
			c.Spec.Lifecycle = &extv1beta1.Lifecycle{}
			return s.Client.ExtensionsV1beta1().SandboxClaims(ns).Create(ctx, c, metav1.CreateOptions{})
		},
		"SandboxTemplate": func() (any, error) {
			return s.Client.ExtensionsV1beta1().SandboxTemplates(ns).Create(ctx, newTemplate(ns, "d"), metav1.CreateOptions{})
		},
		"SandboxWarmPool": func() (any, error) {
			pool := newPool(ns, "d", "t", 1)
			pool.Spec.Replicas = nil
			return s.Client.ExtensionsV1beta1().SandboxWarmPools(ns).Create(ctx, pool, metav1.CreateOptions{})
		},
	} {
		obj, err := create()
		if err != nil {
			t.Fatalf("create %s: %v", kind, err)
		}
		raw, _ := json.Marshal(obj)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		stored[kind] = m
	}

	agents := openAPIV3Schemas(t, s, "apis/agents.x-k8s.io/v1beta1")
	extensions := openAPIV3Schemas(t, s, "apis/extensions.agents.x-k8s.io/v1beta1")
	cases := []struct {
		schemas  map[string]map[string]boundedSchema
		schema   string // the schema holding the property
		property string
		kind     string // the kind whose stored object shows the default
		path     string // where, in the stored object
		def      string // the default, as JSON ("" for none)
		min, max *float64
	}{
		{agents, "io.x-k8s.agents.v1beta1.SandboxSpec", "replicas", "Sandbox", "spec.replicas", "1", new(0.0), new(1.0)},
		{agents, "io.x-k8s.agents.v1beta1.SandboxSpec", "shutdownPolicy", "Sandbox", "spec.shutdownPolicy", `"Retain"`, nil, nil},
		{extensions, "io.x-k8s.agents.extensions.v1beta1.SandboxClaimSpec", "warmpool", "SandboxClaim", "spec.warmpool", `"default"`, nil, nil},
		{extensions, "io.x-k8s.agents.extensions.v1beta1.Lifecycle", "shutdownPolicy", "SandboxClaim", "spec.lifecycle.shutdownPolicy", `"Retain"`, nil, nil},
		{extensions, "io.x-k8s.agents.extensions.v1beta1.Lifecycle", "ttlSecondsAfterFinished", "", "", "", new(0.0), nil},
		{extensions, "io.x-k8s.agents.extensions.v1beta1.SandboxTemplateSpec", "networkPolicyManagement", "SandboxTemplate", "spec.networkPolicyManagement", `"Managed"`, nil, nil},
		{extensions, "io.x-k8s.agents.extensions.v1beta1.SandboxTemplateSpec", "envVarsInjectionPolicy", "SandboxTemplate", "spec.envVarsInjectionPolicy", `"Disallowed"`, nil, nil},
		{extensions, "io.x-k8s.agents.extensions.v1beta1.SandboxWarmPoolUpdateStrategy", "type", "SandboxWarmPool", "spec.updateStrategy.type", `"OnReplenish"`, nil, nil},
		{extensions, "io.x-k8s.agents.extensions.v1beta1.SandboxWarmPoolSpec", "replicas", "SandboxWarmPool", "spec.replicas", "1", new(0.0), new(5000.0)},
		// No stored default, as the peer's: the controller reads unset as 300 s.
		{extensions, "io.x-k8s.agents.extensions.v1beta1.SandboxWarmPoolSpec", "readinessGracePeriodSeconds", "", "", "", new(30.0), nil},
	}
	for _, tc := range cases {
		t.Run(tc.schema+"."+tc.property, func(t *testing.T) {
			p, ok := tc.schemas[tc.schema][tc.property]
			if !ok {
				t.Fatalf("no property %s in %s", tc.property, tc.schema)
			}
			if got := strings.Join(strings.Fields(string(p.Default)), ""); got != tc.def {
				t.Errorf("default %s, want %s", got, tc.def)
			}
			if fmt.Sprint(deref(p.Minimum)) != fmt.Sprint(deref(tc.min)) || fmt.Sprint(deref(p.Maximum)) != fmt.Sprint(deref(tc.max)) {
				t.Errorf("bounds [%v, %v], want [%v, %v]", deref(p.Minimum), deref(p.Maximum), deref(tc.min), deref(tc.max))
			}
			if tc.kind == "" {
				return
			}
			var v any = stored[tc.kind]
			for _, k := range strings.Split(tc.path, ".") {
				v = v.(map[string]any)[k]
			}
			if got, _ := json.Marshal(v); string(got) != tc.def {
				t.Errorf("a %s that leaves %s unset is stored with %s, the OpenAPI default is %s", tc.kind, tc.path, got, tc.def)
			}
		})
	}
}

// openAPIV3Schemas fetches the OpenAPI v3 document of a group version: its schemas' properties.
func openAPIV3Schemas(t *testing.T, s *framework.Server, gv string) map[string]map[string]boundedSchema {
	t.Helper()
	raw, err := s.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v3/" + gv).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET /openapi/v3/%s: %v", gv, err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]boundedSchema `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]boundedSchema{}
	for name, sch := range doc.Components.Schemas {
		out[name] = sch.Properties
	}
	return out
}

func deref(f *float64) any {
	if f == nil {
		return "none"
	}
	return *f
}
